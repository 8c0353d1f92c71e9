package memdriver

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/storesim/storesim/sim"
)

// FaultMix sets one rate in [0, 1] per fault kind of SPEC §6. A rate is the
// chance the fault hits at its draw point (per row, per call, per lookup,
// per registration or per close; see each field). Zero disables the fault.
//
// Every fault is legal behaviour of a conforming driver: under any mix the
// driver still keeps every D-rule, so the faults test the caller, never the
// contract. The zero value is [Calm].
type FaultMix struct {
	// RowFault (per row): the row ends FAULT after moving some or all of its
	// bytes; a faulted PUBLISH may still have stored its object. A row that
	// is a MISS stays a MISS (D-MISS-HONEST).
	RowFault float64
	// RowMiss (per row, evicting store only): the key is evicted right before
	// a FETCH reads it (an honest MISS, slot untouched); a PUBLISH is
	// declined (MISS, nothing stored).
	RowMiss float64
	// StaleLookup (per key found by Contains, evicting store only): the key
	// is evicted before the next FETCH of it: present at lookup, MISS at
	// fetch.
	StaleLookup float64
	// Evict (per row, evicting store only): the store evicts one key, chosen
	// from its sorted key list, as the row starts.
	Evict float64
	// LookupError (per Contains): an outage or a wrong-length answer,
	// reported as drivers.ErrLookupFailed, never as "absent" (D-LOOK-2).
	LookupError float64
	// SubmitReject (per Submit): back-pressure, drivers.ErrRejected;
	// nothing escaped.
	SubmitReject float64
	// SubmitError (per Submit): Submit fails with an error that is none of
	// the nothing-escaped sentinels, so the caller treats the rows as
	// UNPROVABLE (D-SUB-2).
	SubmitError float64
	// ErrorBefore (per call): the call fails before any byte moved: every
	// row FAULT, access ENDED.
	ErrorBefore float64
	// ErrorAfter (per call): a transport error after some bytes moved: rows
	// without a result FAULT, access UNPROVABLE; transfers in flight may
	// still land, and access is proven ENDED later in half the cases.
	ErrorAfter float64
	// WrongLength (per call): the store answers a wrong number of results:
	// every row without a result FAULT, access UNPROVABLE, forever.
	WrongLength float64
	// Delay (per call): every step of the call is delayed by up to 50 step
	// delays.
	Delay float64
	// LateWrite (per FETCH row answered OK): an RDMA-style late write: the
	// same object bytes land in the slot again after the row result, before
	// access ENDED.
	LateWrite float64
	// Timeout (per call): the driver stops waiting at a random time: rows
	// without a result FAULT (started) or NOT_ATTEMPTED, access UNPROVABLE;
	// proven ENDED once the abandoned transfers are over.
	Timeout float64
	// UnprovableLater (per call): access first becomes UNPROVABLE when the
	// rows are done and is proven ENDED a while later.
	UnprovableLater float64
	// NeverEnds (per call): one row's transfer never finishes, so the call
	// never reaches access evidence until Shutdown.
	NeverEnds float64
	// RegisterRefused (per Register, per region of RegisterTogether): the
	// store refuses the registration.
	RegisterRefused float64
	// TogetherFail (per RegisterTogether): registration fails at region k.
	TogetherFail float64
	// RollbackFail (per rollback close after a together failure, and per
	// retry of an in-doubt region at Shutdown): the close fails and the
	// region is in doubt (D-TOG-2, D-QUAR).
	RollbackFail float64
	// UnregisterFail (per close): the close fails once; a later close
	// retries (D-REG-4).
	UnregisterFail float64
	// UnregisterStuck (per registration): every close of the binding fails,
	// forever.
	UnregisterStuck float64
	// StaleCloseError (per close of a stale or unknown handle): answered
	// ErrStaleHandle instead of nil — D-REG-3 allows both, and a caller must
	// take either as closed. Not a fault: a driver's way of answering.
	StaleCloseError float64
	_               struct{}
}

// faultKind is a fault's printed name and swarmMax, the highest rate
// [Swarm] picks for it; its field is FaultMix.rate of its index.
type faultKind struct {
	name     string
	swarmMax float64
}

// faultKinds is the one table of fault kinds, in printing order (the order
// of FaultMix.rate's cases).
var faultKinds = [...]faultKind{
	{"row-fault", 0.2},
	{"row-miss", 0.2},
	{"stale-lookup", 0.3},
	{"evict", 0.2},
	{"lookup-error", 0.2},
	{"submit-reject", 0.2},
	{"submit-error", 0.1},
	{"error-before", 0.1},
	{"error-after", 0.1},
	{"wrong-length", 0.05},
	{"delay", 0.3},
	{"late-write", 0.3},
	{"timeout", 0.1},
	{"unprovable-later", 0.1},
	{"never-ends", 0.05},
	{"register-refused", 0.3},
	{"together-fail", 0.3},
	{"rollback-fail", 0.5},
	{"unregister-fail", 0.5},
	{"unregister-stuck", 0.2},
	{"stale-close-error", 1},
}

// rate is the field of fault kind i (an index of faultKinds). A switch, not
// a table of accessors: a call through a func value would move every mix
// it reads to the heap.
func (m *FaultMix) rate(i int) *float64 {
	switch i {
	case 0:
		return &m.RowFault
	case 1:
		return &m.RowMiss
	case 2:
		return &m.StaleLookup
	case 3:
		return &m.Evict
	case 4:
		return &m.LookupError
	case 5:
		return &m.SubmitReject
	case 6:
		return &m.SubmitError
	case 7:
		return &m.ErrorBefore
	case 8:
		return &m.ErrorAfter
	case 9:
		return &m.WrongLength
	case 10:
		return &m.Delay
	case 11:
		return &m.LateWrite
	case 12:
		return &m.Timeout
	case 13:
		return &m.UnprovableLater
	case 14:
		return &m.NeverEnds
	case 15:
		return &m.RegisterRefused
	case 16:
		return &m.TogetherFail
	case 17:
		return &m.RollbackFail
	case 18:
		return &m.UnregisterFail
	case 19:
		return &m.UnregisterStuck
	case 20:
		return &m.StaleCloseError
	}
	panic("memdriver: no fault kind " + strconv.Itoa(i))
}

// FaultNames lists every fault kind's printed name, in printing order.
func FaultNames() []string {
	names := make([]string, len(faultKinds))
	for i := range faultKinds {
		names[i] = faultKinds[i].name
	}
	return names
}

// Calm is the mix without faults.
func Calm() FaultMix { return FaultMix{} }

// Default is a moderate mix of the faults a conforming caller recovers from
// on its own. It leaves out the faults that hold resources until Shutdown
// (never-ends, rollback-fail, unregister-stuck).
func Default() FaultMix {
	return FaultMix{
		RowFault: 0.02, RowMiss: 0.02, StaleLookup: 0.05, Evict: 0.02,
		LookupError: 0.02, SubmitReject: 0.02, SubmitError: 0.01,
		ErrorBefore: 0.01, ErrorAfter: 0.01, WrongLength: 0.005,
		Delay: 0.05, LateWrite: 0.1, Timeout: 0.01, UnprovableLater: 0.02,
		RegisterRefused: 0.05, TogetherFail: 0.05, UnregisterFail: 0.1,
	}
}

// Swarm derives a fault mix from a run seed in the manner of FoundationDB's
// BUGGIFY: from the stream sim.SubSeed(seed, "memdriver/swarm"), each kind
// in printing order is enabled with probability 1/2, and an enabled kind gets
// a rate log-uniform between 1/100 of its maximum and its maximum, rounded to
// three significant digits. So each seed tests a different subset of faults
// at different strengths, and one seed always gives the same mix.
func Swarm(seed uint64) FaultMix {
	r := sim.NewRand(sim.SubSeed(seed, "memdriver/swarm"))
	var m FaultMix
	for i := range faultKinds {
		if !r.Chance(0.5) {
			continue
		}
		*m.rate(i) = round3(faultKinds[i].swarmMax * math.Pow(10, -2*r.Float64()))
	}
	return m
}

// round3 is x rounded to three significant digits, as
// strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64) gives it for
// the rates Swarm draws (in (0, 1)), without the string: the digits d.dd and
// exponent e of x's 'e' form make ddd / 10^(2-e), one IEEE division of two
// exact numbers (ddd < 1000, 10^k exact up to 10^22), so it is the decimal's
// nearest float64, as ParseFloat's. Anything else takes the string path.
func round3(x float64) float64 {
	var buf [24]byte
	b := strconv.AppendFloat(buf[:0], x, 'e', 2, 64) // "d.dde-XX"
	if len(b) == 8 && b[1] == '.' && b[4] == 'e' && b[5] == '-' {
		ddd := float64(int(b[0]-'0')*100 + int(b[2]-'0')*10 + int(b[3]-'0'))
		if k := 2 + int(b[6]-'0')*10 + int(b[7]-'0'); k < len(pow10) {
			return ddd / pow10[k]
		}
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return r
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// DescribeSwarm prints the mix [Swarm] derives from seed, headed by a
// comment line naming the seed; [ParseFaultMix] reads it back.
func DescribeSwarm(seed uint64) string {
	s := fmt.Sprintf("# memdriver swarm seed=%d\n", seed)
	if mix := Swarm(seed).String(); mix != "" {
		return s + mix + "\n"
	}
	return s + "# no faults\n"
}

// String prints one line per enabled fault, in printing order:
// "fault row-fault rate=0.05". The calm mix prints as "".
func (m FaultMix) String() string {
	var buf [1024]byte // every mix a seed draws fits: one allocation, the string
	b := buf[:0]
	for i := range faultKinds {
		if r := *m.rate(i); r != 0 {
			if len(b) > 0 {
				b = append(b, '\n')
			}
			b = append(b, "fault "...)
			b = append(b, faultKinds[i].name...)
			b = append(b, " rate="...)
			b = appendRate(b, r)
		}
	}
	return string(b)
}

// appendRate appends strconv.AppendFloat(b, r, 'g', -1, 64): for a rate of
// three significant digits (m/10^k, 100 <= m <= 999, as Swarm's round3
// makes them) by writing m's digits after "0." and k-3 zeros, which is what
// the shortest form is (no other decimal of three digits or fewer is within
// an ulp of r) and what 'g' prints down to 1e-4; for any other rate by
// AppendFloat. TestAppendRate compares the two on every m and k it takes.
func appendRate(b []byte, r float64) []byte {
	for k := 3; k <= 6; k++ { // 0.100 <= r < 1, down to 1e-4 <= r < 1e-3
		m := r * pow10[k]
		if m < 100 || m >= 999.5 {
			continue
		}
		n := int(m + 0.5)
		if float64(n)/pow10[k] != r {
			break // not m/10^k
		}
		b = append(b, "0.000"[:k-1]...)
		d := [3]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)}
		l := 3
		for d[l-1] == '0' {
			l--
		}
		return append(b, d[:l]...)
	}
	return strconv.AppendFloat(b, r, 'g', -1, 64)
}

// Check reports a rate outside [0, 1], naming the fault.
func (m FaultMix) Check() error {
	for i := range faultKinds {
		if r := *m.rate(i); math.IsNaN(r) || r < 0 || r > 1 {
			return fmt.Errorf("%w: fault %s: rate %v outside [0, 1]", ErrBadFaultMix, faultKinds[i].name, r)
		}
	}
	return nil
}

// ErrBadFaultMix is wrapped by every [ParseFaultMix] and [FaultMix.Check]
// error.
var ErrBadFaultMix = errors.New("memdriver: bad fault mix")

// ParseFaultMix reads what [FaultMix.String] prints: one
// "fault <name> rate=<r>" per line. Blank lines and lines starting with '#'
// are skipped. An unknown fault, a repeated fault, a malformed line or a
// rate outside [0, 1] is an error naming the line.
func ParseFaultMix(text string) (FaultMix, error) {
	return ParseFaultLines(text)
}

// ParseFaultLines is [ParseFaultMix] of the lines joined by newlines,
// without joining them (an op log holds an endpoint's fault lines apart).
func ParseFaultLines(lines ...string) (FaultMix, error) {
	var p faultParser
	for _, text := range lines {
		for line := range strings.SplitSeq(text, "\n") {
			if err := p.line(line); err != nil {
				return FaultMix{}, err
			}
		}
	}
	return p.m, nil
}

// faultParser reads a fault mix line by line.
type faultParser struct {
	m    FaultMix
	n    int                  // lines read
	seen [len(faultKinds)]int // the line that set each kind (0: none yet)
}

func (p *faultParser) line(line string) error {
	p.n++
	if k, r, ok := canonicalLine(line); ok && p.seen[k] == 0 {
		p.seen[k] = p.n
		*p.m.rate(k) = r
		return nil
	}
	return p.general(line)
}

// canonicalLine reads a line exactly as [FaultMix.String] prints it,
// "fault <name> rate=<decimal>", where <decimal> is digits with at most one
// point, at most 15 of them significant. Such a rate is m / 10^d for
// integers m < 2^53 and d <= 22 (its digits without the point, its digits
// after the point): one IEEE division of two exact numbers, so the decimal's
// nearest float64, which is what strconv.ParseFloat returns too. Any other
// line (spaces, comments, an exponent, a bad name) is not ok and goes the
// general way.
func canonicalLine(line string) (kind int, rate float64, ok bool) {
	rest, ok := strings.CutPrefix(line, "fault ")
	if !ok {
		return 0, 0, false
	}
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		return 0, 0, false
	}
	num, ok := strings.CutPrefix(rest[sp+1:], "rate=")
	if !ok || num == "" || len(num) > 16 {
		return 0, 0, false
	}
	if kind = lookupFault(rest[:sp]); kind < 0 {
		return 0, 0, false
	}
	var m uint64
	d, point := 0, false
	for i := 0; i < len(num); i++ {
		switch c := num[i]; {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			if point {
				d++
			}
		case c == '.' && !point:
			point = true
		default:
			return 0, 0, false
		}
	}
	if rate = float64(m) / pow10[d]; rate > 1 || len(num) == 1 && point {
		return 0, 0, false
	}
	return kind, rate, true
}

// general reads any other line, reporting what is wrong with it.
func (p *faultParser) general(line string) error {
	n := p.n
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	var f [3]string // strings.Fields, without its slice
	nf := 0
	for w := range strings.FieldsSeq(line) {
		if nf < len(f) {
			f[nf] = w
		}
		nf++
	}
	if nf != 3 || f[0] != "fault" || !strings.HasPrefix(f[2], "rate=") {
		return fmt.Errorf("%w: line %d: %q: want \"fault <name> rate=<r>\"", ErrBadFaultMix, n, line)
	}
	k := lookupFault(f[1])
	if k < 0 {
		return fmt.Errorf("%w: line %d: unknown fault %q (known: %s)", ErrBadFaultMix, n, f[1], strings.Join(FaultNames(), " "))
	}
	name := faultKinds[k].name
	if prev := p.seen[k]; prev != 0 {
		return fmt.Errorf("%w: line %d: fault %s already set on line %d", ErrBadFaultMix, n, name, prev)
	}
	p.seen[k] = n
	r, err := strconv.ParseFloat(strings.TrimPrefix(f[2], "rate="), 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return fmt.Errorf("%w: line %d: fault %s: rate %q is not a number in [0, 1]", ErrBadFaultMix, n, name, strings.TrimPrefix(f[2], "rate="))
	}
	*p.m.rate(k) = r
	return nil
}

// lookupFault is the index in faultKinds of the fault named name, or -1.
func lookupFault(name string) int {
	for i := range faultKinds {
		if faultKinds[i].name == name {
			return i
		}
	}
	return -1
}
