package model

import (
	"math"
	"math/bits"

	"github.com/anishathalye/porcupine"
)

// The witness search of the S-LIN check: before porcupine, each key's
// operations are tried in call order for one linearization the model
// accepts (sequentialOK); a key without a witness goes to porcupine.

// searchWindow is how many of a key's settled operations, from the first
// one not yet placed, the search considers: it keeps them as one bit each in
// a uint64. An operation further on is never a candidate (a choice the
// search does not try: it may miss a witness, never invent one).
const searchWindow = 64

// porcupineOnly sends every key to porcupine (TestSequentialMatchesPorcupine
// compares the two ways).
var porcupineOnly = false

// sequentialOK reports whether part's operations (one key, sorted by call)
// have a linearization it can show: an order the model accepts in which no
// operation comes after one called after it returned (porcupine orders a
// call before a return at the same position, so operations that touch
// overlap). Only a witness counts — porcupine, which searches every order,
// would find it too — so false means "not shown", and porcupine decides.
//
// The search is depth first, call order first (a history without overlaps
// always takes it), over a window of searchWindow settled operations from
// the first one not yet placed. A publish whose return is at or after every
// call of the key (one that never returned is the common case) floats: it
// is legal in every state, so it may also go after everything, and the
// search places it early only where an operation needs it. A part with a
// return before its call or not sorted by call is left to porcupine, as is
// one with more than searchWindow floating publishes or a search that needs
// more steps than its budget.
func (w *witness) sequentialOK(m porcupine.Model, part []porcupine.Operation) bool {
	if len(part) == 0 {
		return true
	}
	for i := range part {
		if part[i].Call > part[i].Return || i > 0 && part[i-1].Call > part[i].Call {
			return false
		}
	}
	lastCall := part[len(part)-1].Call
	w.m, w.budget = m, searchBaseSteps+searchStepsPerOp*len(part)
	w.fixed, w.float = w.fixed[:0], w.float[:0]
	clear(w.failed)
	for i := range part {
		op := &part[i]
		if op.Return >= lastCall && op.Input.(*input).step == stStore {
			w.float = append(w.float, op)
		} else {
			w.fixed = append(w.fixed, op)
		}
	}
	if len(w.float) > searchWindow {
		return false
	}
	return w.from(m.Init(), 0, 0, 0)
}

// witness is sequentialOK's depth-first search (its slices and map are
// reused from one key to the next).
type witness struct {
	m      porcupine.Model
	fixed  []*porcupine.Operation // settled operations, in call order
	float  []*porcupine.Operation // floating publishes, in call order
	budget int                    // model steps left
	// failed holds the nodes from which no order was found (their state by
	// hash: a collision may prune a node that would have led somewhere,
	// which loses a witness, never invents one).
	failed map[node]struct{}
}

// node is a point of the search: what is placed and the state's hash.
type node struct {
	lo           int
	done, placed uint64
	state        uint64
}

// from reports whether the operations left can follow state st: the fixed
// ones from lo on except those whose bit (index-lo) is set in done, and the
// floating ones whose bit is clear in placed.
func (w *witness) from(st any, lo int, done, placed uint64) bool {
	for done&1 != 0 {
		done >>= 1
		lo++
	}
	if lo == len(w.fixed) {
		return true // the floating publishes left go last: legal in every state
	}
	var at node
	if w.m.Hash != nil {
		at = node{lo, done, placed, w.m.Hash(st)}
		if _, ok := w.failed[at]; ok {
			return false
		}
	}
	n := min(searchWindow, len(w.fixed)-lo)
	left := ^done
	if n < 64 {
		left &= 1<<n - 1
	}
	// An operation may go next unless another one left returned before it
	// was called: its call is at most the earliest return left. A fixed
	// operation past the window was called after every one in it, so it
	// returned after their calls; a floating one returned after every call.
	first := int64(math.MaxInt64)
	for l := left; l != 0; l &= l - 1 {
		first = min(first, w.fixed[lo+bits.TrailingZeros64(l)].Return)
	}
	for l := left; l != 0; l &= l - 1 {
		b := bits.TrailingZeros64(l)
		op := w.fixed[lo+b]
		if op.Call > first {
			break // fixed is sorted by call: no later one may go either
		}
		if w.budget == 0 {
			return false
		}
		w.budget--
		if ok, next := w.m.Step(st, op.Input, op.Output); ok && w.from(next, lo, done|1<<b, placed) {
			return true
		}
	}
	// A floating publish may go next if it was called before the earliest
	// return left, past the window included (a fixed operation there
	// returned after its own call, at or after the window's end).
	limit := first
	if lo+n < len(w.fixed) {
		limit = min(limit, w.fixed[lo+n].Call)
	}
	for j, op := range w.float {
		if placed&(1<<j) != 0 {
			continue
		}
		if op.Call > limit {
			break
		}
		if w.budget == 0 {
			return false
		}
		w.budget--
		if ok, next := w.m.Step(st, op.Input, op.Output); ok && w.from(next, lo, done, placed|1<<j) {
			return true
		}
	}
	if w.m.Hash != nil {
		if w.failed == nil {
			w.failed = map[node]struct{}{}
		}
		w.failed[at] = struct{}{}
	}
	return false
}
