package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// Lies are answers that break the driver contract, told to the backend on
// purpose so the swarm reaches the backend's defences: a lookup of the wrong
// length (or a lookup that panics), a call with a wrong number of results,
// a Submit that fails (or panics) after the transfer really started, a registration that fails after
// it really happened, a together-registration with too few handles. The
// liar sits between the contract monitor and the backend: the driver below
// is honest (the monitor judges it), the backend above hears the lie (the
// reference model judges what it does with it), and the memory oracles see
// what really happens — a transfer that escaped really writes late.
//
// In an op log a lie is a fault line whose kind starts with "lie-":
//
//	fault A lie-lookup-short rate=0.02
type Lies struct {
	LookupShort     float64 // per Contains: one answer fewer, no error
	LookupLong      float64 // per Contains: one answer more, no error
	ResultsShort    float64 // per call: Results answers one status fewer, forever
	SubmitEscapes   float64 // per Submit: the call runs, the backend hears an error that proves nothing
	SubmitPanics    float64 // per Submit: the call runs, then Submit panics
	RegisterUnknown float64 // per Register: registered, the backend hears an unknown error
	TogetherShort   float64 // per RegisterTogether: registered, one handle fewer
	ShutdownLabels  float64 // per Shutdown: the driver's labels are lost (the backend must name what it knows is held)
	LookupPanics    float64 // per Contains: the store client panics instead of answering
	UnregisterBusy  float64 // per close: ErrBusy without closing, as a driver other owners share may answer (the binding stays)
	ResultsLong     float64 // per call: Results answers one status more (FAULT), forever
	ShutdownPanics  float64 // per Shutdown: the driver shuts down, then its Shutdown panics (its labels lost)
	AccessFlickers  float64 // per call: once read UNPROVABLE, the next read answers PENDING (a step back the contract forbids), then the truth
	CancelPanics    float64 // per call: Cancel cancels, then panics
	SubmitNoCall    float64 // per Submit: the call runs, Submit returns no call and no error
	_               struct{}
}

// lieKinds are the lie kinds, in the order of Lies' fields (Lies.rate).
var lieKinds = []struct{ name string }{
	{"lie-lookup-short"},
	{"lie-lookup-long"},
	{"lie-results-short"},
	{"lie-submit-escapes"},
	{"lie-submit-panics"},
	{"lie-register-unknown"},
	{"lie-together-short"},
	{"lie-shutdown-labels"},
	{"lie-lookup-panics"},
	{"lie-unregister-busy"},
	{"lie-results-long"},
	{"lie-shutdown-panics"},
	{"lie-access-flickers"},
	{"lie-cancel-panics"},
	{"lie-submit-no-call"},
}

// rate is the field of lieKinds[kind] (a method, not a func value per
// kind, so that a parsed Lies stays on the stack).
func (l *Lies) rate(kind int) *float64 {
	return [...]*float64{
		&l.LookupShort, &l.LookupLong, &l.ResultsShort, &l.SubmitEscapes,
		&l.SubmitPanics, &l.RegisterUnknown, &l.TogetherShort, &l.ShutdownLabels,
		&l.LookupPanics, &l.UnregisterBusy, &l.ResultsLong, &l.ShutdownPanics,
		&l.AccessFlickers, &l.CancelPanics, &l.SubmitNoCall,
	}[kind]
}

// IsLie reports whether a fault line is a lie ("fault lie-… rate=R").
func IsLie(line string) bool {
	// strings.Fields(line)[0] == "fault" && [1] starts "lie-", without the slice.
	rest, ok := strings.CutPrefix(trimLeftSpace(line), "fault")
	if r, _ := utf8.DecodeRuneInString(rest); !ok || !unicode.IsSpace(r) {
		return false
	}
	return strings.HasPrefix(trimLeftSpace(rest), "lie-")
}

// trimLeftSpace is strings.TrimLeftFunc(s, unicode.IsSpace), the ASCII
// bytes of a log's usual lines skipped without decoding a rune each.
func trimLeftSpace(s string) string {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return strings.TrimLeftFunc(s[i:], unicode.IsSpace)
		case c != ' ' && (c < '\t' || c > '\r'):
			return s[i:]
		}
	}
	return ""
}

// ErrBadLie names a lie line that does not parse.
var ErrBadLie = errors.New("bad lie line")

// splitLies parses the lie lines among an endpoint's fault lines and
// returns the others for the driver: lines itself when none is a lie (most
// endpoints tell none), else a new list.
func splitLies(lines []string) (Lies, []string, error) {
	var l Lies
	rest, own := lines, false // own: rest is a new list (since the first lie)
	for i, line := range lines {
		lie := IsLie(line)
		switch {
		case !lie && own:
			rest = append(rest, line)
		case lie && !own:
			rest, own = append(make([]string, 0, len(lines)-1), lines[:i]...), true
		}
		if !lie {
			continue
		}
		f := strings.Fields(line)
		var field *float64
		for i, k := range lieKinds {
			if k.name == f[1] {
				field = l.rate(i)
			}
		}
		if field == nil || len(f) != 3 || !strings.HasPrefix(f[2], "rate=") {
			return l, nil, fmt.Errorf("%w %q (want fault lie-KIND rate=R, KIND one of %s)", ErrBadLie, line, lieNames())
		}
		r, err := strconv.ParseFloat(strings.TrimPrefix(f[2], "rate="), 64)
		if err != nil || r < 0 || r > 1 {
			return l, nil, fmt.Errorf("%w %q: rate must be in [0, 1]", ErrBadLie, line)
		}
		*field = r
	}
	return l, rest, nil
}

func lieNames() string {
	var n []string
	for _, k := range lieKinds {
		n = append(n, strings.TrimPrefix(k.name, "lie-"))
	}
	return strings.Join(n, ", ")
}

// swarmLies draws an endpoint's lies from the seed: none for most
// endpoints, one to three kinds at small rates for one in four.
func swarmLies(seed uint64, endpoint string) []string {
	r := sim.NewRand(sim.SubSeed(seed, "lies/"+endpoint))
	if !r.Chance(0.25) {
		return nil
	}
	var out []string
	for _, k := range lieKinds {
		if r.Chance(0.3) {
			rate := []float64{0.01, 0.03, 0.1}[r.Intn(3)]
			if strings.HasPrefix(k.name, "lie-register") || strings.HasPrefix(k.name, "lie-together") || strings.HasPrefix(k.name, "lie-shutdown") || strings.HasPrefix(k.name, "lie-unregister") {
				rate = []float64{0.3, 0.6, 1}[r.Intn(3)] // one registration per endpoint: a lie there must be likely
			}
			out = append(out, fmt.Sprintf("fault %s rate=%g", k.name, rate))
		}
	}
	return out
}

func (l Lies) any() bool { return l != Lies{} }

// liar tells the backend the lies of mix, deciding each with its own seeded
// stream.
type liar struct {
	d   drivers.Driver
	mix Lies
	r   *sim.Rand
}

func newLiar(d drivers.Driver, mix Lies, r *sim.Rand) drivers.Driver {
	if tr, ok := d.(drivers.TogetherRegisterer); ok {
		return &togetherLiar{liar: liar{d: d, mix: mix, r: r}, tr: tr}
	}
	return &liar{d: d, mix: mix, r: r}
}

func (l *liar) Capabilities() drivers.Capabilities { return l.d.Capabilities() }

func (l *liar) Register(r drivers.Region) (drivers.Handle, error) {
	h, err := l.d.Register(r)
	if err == nil && l.r.Chance(l.mix.RegisterUnknown) {
		return 0, errors.New("lie: registration answer lost (the region may be registered)")
	}
	return h, err
}

func (l *liar) Unregister(h drivers.Handle) error {
	if l.busy() {
		return fmt.Errorf("%w: lie: the region is in use by another owner of the store", drivers.ErrBusy)
	}
	return l.d.Unregister(h)
}

// busy decides an UnregisterBusy lie (no draw without it).
func (l *liar) busy() bool { return l.mix.UnregisterBusy > 0 && l.r.Chance(l.mix.UnregisterBusy) }

func (l *liar) Contains(ctx context.Context, keys []string) ([]bool, error) {
	present, err := l.d.Contains(ctx, keys)
	if l.mix.LookupPanics > 0 && l.r.Chance(l.mix.LookupPanics) { // no draw without the lie: other runs stay as they were
		panic("lie: the store client panicked during a lookup")
	}
	switch {
	case err != nil:
	case len(present) > 0 && l.r.Chance(l.mix.LookupShort):
		return present[:len(present)-1], nil
	case l.r.Chance(l.mix.LookupLong):
		return append(present, false), nil
	}
	return present, err
}

func (l *liar) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	c, err := l.d.Submit(b, onChange)
	if err != nil {
		return c, err
	}
	switch {
	case l.r.Chance(l.mix.SubmitEscapes):
		return nil, errors.New("lie: connection reset after the request was sent")
	case l.r.Chance(l.mix.SubmitPanics):
		panic("lie: the store client panicked after sending the request")
	case l.r.Chance(l.mix.ResultsShort):
		return shortCall{c}, nil
	case l.mix.ResultsLong > 0 && l.r.Chance(l.mix.ResultsLong): // no draw without the lie
		return longCall{c}, nil
	case l.mix.AccessFlickers > 0 && l.r.Chance(l.mix.AccessFlickers): // no draw without the lie
		return &flickerCall{Call: c}, nil
	case l.mix.CancelPanics > 0 && l.r.Chance(l.mix.CancelPanics): // no draw without the lie
		return panicCancelCall{c}, nil
	case l.mix.SubmitNoCall > 0 && l.r.Chance(l.mix.SubmitNoCall): // no draw without the lie
		return nil, nil
	}
	return c, nil
}

func (l *liar) Drain() drivers.DrainStatus { return l.d.Drain() }
func (l *liar) Shutdown(ctx context.Context) []string {
	labels := l.d.Shutdown(ctx)
	if l.mix.ShutdownPanics > 0 && l.r.Chance(l.mix.ShutdownPanics) { // no draw without the lie
		panic("lie: the store client panicked while shutting down")
	}
	if len(labels) > 0 && l.r.Chance(l.mix.ShutdownLabels) {
		return nil
	}
	return labels
}

// togetherLiar is a liar that also lies about together-registration; the
// liar is in its allocation.
type togetherLiar struct {
	liar
	tr drivers.TogetherRegisterer
}

func (l *togetherLiar) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	hs, err := l.tr.RegisterTogether(regions)
	if err == nil && len(hs) > 0 && l.r.Chance(l.mix.TogetherShort) {
		return hs[:len(hs)-1], nil
	}
	return hs, err
}

func (l *togetherLiar) UnregisterTogether(hs []drivers.Handle) error {
	if l.busy() {
		return fmt.Errorf("%w: lie: the regions are in use by another owner of the store", drivers.ErrBusy)
	}
	return l.tr.UnregisterTogether(hs)
}

// shortCall answers one result fewer than the call has rows.
type shortCall struct{ drivers.Call }

func (c shortCall) Results() []drivers.Status {
	res := c.Call.Results()
	if len(res) == 0 {
		return res
	}
	return res[:len(res)-1]
}

// longCall answers one result more than the call has rows (a FAULT).
type longCall struct{ drivers.Call }

func (c longCall) Results() []drivers.Status {
	return append(c.Call.Results(), drivers.Fault)
}

// flickerCall, once its access was read UNPROVABLE, answers the next read
// PENDING — a step back the contract forbids (D-ACCESS) and the backend
// must not follow (B-ACCESS: UNPROVABLE holds until ENDED) — then the
// truth again.
type flickerCall struct {
	drivers.Call
	step uint8 // 0: not read UNPROVABLE yet; 1: the next read flickers; 2: done
}

func (c *flickerCall) Access() drivers.Access {
	acc := c.Call.Access()
	switch {
	case c.step == 0 && acc == drivers.AccessUnprovable:
		c.step = 1
	case c.step == 1:
		c.step = 2
		return drivers.AccessPending
	}
	return acc
}

// panicCancelCall's Cancel cancels the call, then panics (a store client
// that crashes on the way back): the backend recovers, and the call has had
// its one Cancel (B-CANCEL).
type panicCancelCall struct{ drivers.Call }

func (c panicCancelCall) Cancel() drivers.CancelResult {
	c.Call.Cancel()
	panic("lie: the store client panicked after sending the cancel")
}
