package fuzz

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// Bounds of a decoded log: they keep one fuzz execution short and the
// porcupine check cheap (per-key concurrency bounded, PERF-NOTES).
const (
	// MaxOps is the most publish/fetch/cancel/shutdown ops decoded from one
	// input; later bytes are ignored. The final shutdowns come on top.
	MaxOps = 200
	// MaxViewRows is the most rows of one decoded view.
	MaxViewRows = 8
	// MaxPerKey bounds the rows on one key within KeyWindow; a row over
	// the bound is left out of its view.
	MaxPerKey = 8
	KeyWindow = 200 * time.Microsecond
	// HeaderBytes is the length of the header; shorter inputs are padded
	// with zeros.
	HeaderBytes = 7
)

// Decode turns arbitrary bytes into a valid op log: every input decodes, to
// at most MaxOps ops. It reports false when the log has nothing runnable (no
// publish or fetch), which a fuzz target treats as an invalid input, never as
// a failure.
//
// Layout (bit 0 is the least significant):
//
//	byte 0   bit 0: two endpoints (else one); bit 1: evicting store;
//	         bits 2-3: faults (0 calm, 1-2 memdriver.Swarm of the endpoint's
//	         sub-seed, as engine.Plan derives it, 3 memdriver.Default);
//	         bits 4-7: key space 2..17 (k0, k1, …)
//	byte 1-2 the seed (little-endian): scheduler policy, contents, fault draws
//	byte 3-4 endpoint A: see decodeEndpoint
//	byte 5-6 endpoint B (ignored with one endpoint)
//	then one op per group:
//	  b: kind = b&15 (0-5 publish, 6-11 fetch, 12-14 cancel, 15 shutdown),
//	     the op comes b>>4 µs after the previous one;
//	  publish/fetch: n (rows 1+n&7, endpoint (n>>3)&1), then one byte per row:
//	     key (k&31) mod key space, masked out when k>>5 == 7;
//	  cancel: t, the target is the (t mod 16)-th most recent publish/fetch;
//	  shutdown: e, endpoint e&1.
//
// An op group cut short by the end of the input is dropped; a cancel with no
// earlier publish/fetch is dropped; a row over MaxPerKey is left out of its
// view and a view left empty is dropped. Every endpoint that was not shut
// down gets a shutdown op at the end.
func Decode(data []byte) (*workload.Log, bool) {
	var h [HeaderBytes]byte
	copy(h[:], data)
	body := data[min(len(data), HeaderBytes):]
	nEnd := 1 + int(h[0]&1)
	keys := 2 + int(h[0]>>4)
	blk := new(logBlock)
	l := &blk.log
	ops, rows := room(body)
	l.Seed, l.Store, l.Ops = uint64(h[1])|uint64(h[2])<<8, "durable", make([]workload.Op, 0, ops+nEnd)
	if h[0]&2 != 0 {
		l.Store = "evicting"
	}
	l.Endpoints = blk.endpoints[:nEnd:nEnd]
	for i := range l.Endpoints {
		e := &l.Endpoints[i]
		*e = decodeEndpoint(i, h[3+2*i], h[4+2*i], &blk.regions[i])
		e.Faults = faultLines(int(h[0]>>2)&3, l.Seed, e.Name)
	}
	at, runnable := decodeOps(l, body, keys, rows)
	for _, e := range l.Endpoints {
		at += time.Microsecond
		l.Ops = append(l.Ops, workload.Op{At: at, Kind: workload.Shutdown, Endpoint: e.Name})
	}
	return l, runnable
}

// decodeOps appends the ops of body's op groups to l.Ops (see Decode) and
// returns the time of the last group and whether a publish or fetch went
// to an endpoint not shut down before it.
func decodeOps(l *workload.Log, body []byte, keys, nrows int) (at time.Duration, runnable bool) {
	var (
		rows  = newViewRows(nrows, keys)
		views recentViews
		down  [2]bool // by endpoint number
		ops   = l.Ops
	)
	endpoint := func(bit byte) int { return int(bit) % len(l.Endpoints) }
	for p := 0; len(ops) < MaxOps && p < len(body); {
		b := body[p]
		at += time.Duration(b>>4) * time.Microsecond
		if p+1 == len(body) {
			break
		}
		arg := body[p+1]
		p += 2
		switch kind := b & 15; {
		case kind < 12:
			n := 1 + int(arg&7)
			if n > len(body)-p {
				p = len(body) // cut short: dropped, and the input is over
				break
			}
			keys, mask := rows.read(body[p:p+n], at)
			p += n
			if keys == nil {
				continue
			}
			k := workload.Publish
			if kind >= 6 {
				k = workload.Fetch
			}
			e := endpoint(arg >> 3 & 1)
			views.add(len(ops))
			ops = append(ops, workload.Op{At: at, Kind: k, Endpoint: l.Endpoints[e].Name, Keys: keys, Mask: mask})
			runnable = runnable || !down[e]
		case kind < 15:
			if views.n == 0 {
				continue
			}
			ops = append(ops, workload.Op{At: at, Kind: workload.Cancel, Target: views.back(int(arg % 16))})
		default:
			e := endpoint(arg & 1)
			down[e] = true
			ops = append(ops, workload.Op{At: at, Kind: workload.Shutdown, Endpoint: l.Endpoints[e].Name})
		}
	}
	l.Ops = ops
	return at, runnable
}

// room bounds what decodeOps takes from body: ops, the op groups it holds
// (at most MaxOps), and rows, the rows of all its publish and fetch groups
// (decodeOps may read past the MaxOps-th group, since a group it drops does
// not count). Sizing the log's ops and rows by this walk, not by the input's
// length, allocates (and zeroes) about half the bytes for a corpus input.
func room(body []byte) (ops, rows int) {
	for p := 0; p+1 < len(body); {
		kind, arg := body[p]&15, body[p+1]
		p += 2
		if kind < 12 {
			n := 1 + int(arg&7)
			if n > len(body)-p {
				break // cut short: dropped, and the input is over
			}
			rows += n
			p += n
		}
		ops++
	}
	return min(ops, MaxOps), rows
}

// viewRows are the rows of every view of a log: one array of keys and one
// of mask bits, carved view by view.
type viewRows struct {
	keys    []string          // room for every row: each takes an input byte
	mask    []bool            // as long as keys
	n       int               // rows taken
	nkeys   byte              // the key space
	windows [2 + 15]keyWindow // by key number, for MaxPerKey
}

// newViewRows makes room for n rows (room's bound) of a log with the
// given key space.
func newViewRows(n, keys int) *viewRows {
	return &viewRows{keys: make([]string, n), mask: make([]bool, n), nkeys: byte(keys)}
}

// read takes the rows of one view at time at, one per byte of in, leaving
// out those over MaxPerKey, and returns the view's keys and mask bits (nil
// if it kept none). They are full slices, so an append to one copies.
func (r *viewRows) read(in []byte, at time.Duration) ([]string, []bool) {
	first, n := r.n, r.n
	keys, mask := r.keys, r.mask[:len(r.keys)]
	for _, k := range in {
		key := (k & 31) % r.nkeys
		if r.windows[key].admit(at) {
			keys[n], mask[n] = keyNames[key], k>>5 != 7
			n++
		}
	}
	r.n = n
	if n == first {
		return nil, nil
	}
	return keys[first:n:n], mask[first:n:n]
}

// logBlock is a decoded log with room for its endpoints and their regions,
// so that they take one allocation, not one each.
type logBlock struct {
	log       workload.Log
	endpoints [2]workload.Endpoint
	regions   [2][4]workload.RegionSpec // by endpoint
}

// endpointNames and regionLabels name the decoded endpoints and their
// regions: region j of endpoint i is regionLabels[i][j].
var (
	endpointNames = [2]string{"A", "B"}
	regionLabels  = [2][4]string{{"A0", "A1", "A2", "A3"}, {"B0", "B1", "B2", "B3"}}
)

// decodeEndpoint reads two bytes for endpoint i, whose regions it puts in
// regions:
//
//	e0 bit 0: together driver (else memory); bit 1: AbsentIsMiss;
//	   bits 2-3: rows 1..4; bits 4-5: in flight 1..4; bits 6-7: regions 1..4
//	e1 bits 0-3: queued 0..15; bits 4-6: unprovable 1..8;
//	   bit 7: 8 slots per region (else 32)
func decodeEndpoint(i int, e0, e1 byte, regions *[4]workload.RegionSpec) workload.Endpoint {
	e := workload.Endpoint{
		Name:         endpointNames[i],
		Driver:       "memory",
		MaxRows:      1 + int(e0>>2&3),
		AbsentIsMiss: e0&2 != 0,
		InFlight:     1 + int(e0>>4&3),
		Queued:       int(e1 & 15),
		Unprovable:   1 + int(e1>>4&7),
	}
	if e0&1 != 0 {
		e.Driver = "together"
	}
	slots := 32
	if e1&0x80 != 0 {
		slots = 8
	}
	n := 1 + int(e0>>6)
	for j := range n {
		regions[j] = workload.RegionSpec{Label: regionLabels[i][j], Slots: slots, SlotBytes: 16}
	}
	e.Regions = regions[:n:n]
	return e
}

// faultLines is the fault mix of an endpoint, as fault lines.
func faultLines(sel int, seed uint64, endpoint string) []string {
	switch sel {
	case 1, 2:
		return mixLines(memdriver.Swarm(sim.SubSeed(seed, "faults/"+endpoint)))
	case 3:
		return slices.Clone(defaultLines) // a log's own, as a drawn mix's lines are
	}
	return nil
}

// defaultLines are memdriver.Default's fault lines, printed once.
var defaultLines = mixLines(memdriver.Default())

// mixLines is mix as fault lines.
func mixLines(mix memdriver.FaultMix) []string {
	text := strings.TrimSpace(mix.String())
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// keyNames are the decoded keys, k0 … k17, made once.
var keyNames = func() (out [18]string) {
	for i := range out {
		out[i] = fmt.Sprintf("k%d", i)
	}
	return out
}()

// keyWindow is one key's latest rows, for MaxPerKey: the times of its
// last MaxPerKey rows, in a ring.
type keyWindow struct {
	n     uint // rows admitted so far
	times [MaxPerKey]time.Duration
}

// admit reports whether the key may take one more row at time at (MaxPerKey
// within KeyWindow) and, if so, counts it. Rows come in time order, so the
// key is full exactly when its MaxPerKey-th latest row, the one its next
// row overwrites, is within KeyWindow of at.
func (w *keyWindow) admit(at time.Duration) bool {
	slot := &w.times[w.n%MaxPerKey]
	if w.n >= MaxPerKey && *slot >= at-KeyWindow {
		return false
	}
	*slot = at
	w.n++
	return true
}

// recentViews are the op numbers of the latest publish/fetch ops, as far
// back as a cancel reaches (16), in a ring.
type recentViews struct {
	n   int // views so far
	ops [16]int
}

func (r *recentViews) add(op int) {
	r.ops[r.n%len(r.ops)] = op
	r.n++
}

// back is the target of a cancel with byte t: the (t mod n)-th most recent
// view (0 the latest) of the n so far, t < 16.
func (r *recentViews) back(t int) int {
	return r.ops[(r.n-1-t%r.n)%len(r.ops)]
}
