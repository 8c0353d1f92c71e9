package drivertest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
)

// Pair names one dangerous interleaving the suite must exercise (SPEC §6,
// "Races"). A certification in which one was never hit has a gap.
type Pair int

const (
	// CancelVsCompletion: Cancel of a call whose access was still PENDING,
	// so completion may win the race (D-CAN-1, D-CAN-2).
	CancelVsCompletion Pair = iota
	// ShutdownVsInFlight: Shutdown while a call had no access evidence
	// (D-SHUT-1, D-CB-5).
	ShutdownVsInFlight
	// UnregisterVsInFlight: Unregister of a region a call without ENDED
	// access names (D-REG-6, D-TOG-4).
	UnregisterVsInFlight
	// DrainVsLateCallback: a callback of a call submitted before a Drain
	// that was not done yet (D-DRAIN-1, D-DRAIN-2).
	DrainVsLateCallback
	// DuplicateRegistration: Register of memory that a live registration
	// holds (D-REG-1).
	DuplicateRegistration
	// StaleHandleClose: Unregister of a handle already closed, while the
	// same memory may be registered again (D-REG-3).
	StaleHandleClose
	// RepeatedKeyInFlight: Submit of a key that another call without
	// access evidence names (D-BATCH-KEYS across calls, D-SUB-4, D-SUB-5).
	RepeatedKeyInFlight
	numPairs
)

var pairNames = [numPairs]string{
	"cancel-vs-completion",
	"shutdown-vs-in-flight",
	"unregister-vs-in-flight",
	"drain-vs-late-callback",
	"duplicate-registration",
	"stale-handle-close",
	"repeated-key-in-flight",
}

func (p Pair) String() string {
	if p >= 0 && p < numPairs {
		return pairNames[p]
	}
	return "pair?"
}

// Pairs lists every race pair, in report order.
func Pairs() []Pair {
	out := make([]Pair, numPairs)
	for i := range out {
		out[i] = Pair(i)
	}
	return out
}

type pairHits [numPairs]int

func (h *pairHits) add(o pairHits) {
	for i := range h {
		h[i] += o[i]
	}
}

// notApplicable says why pair p cannot occur with a driver that declared
// caps and showed chances over its directed and randomized case runs, or ""
// when it can (and must then be exercised). Only a pair that no call could
// ever have raced is excused: a driver that kept even one call in flight
// past Submit must exercise every pair.
func notApplicable(p Pair, caps drivers.Capabilities, ch pairChances) string {
	inline := fmt.Sprintf("each of the %d calls the cases submitted had access ENDED when Submit returned: no call was ever in flight to race a", ch.calls)
	switch p {
	case CancelVsCompletion:
		if !caps.CanCancel {
			return "the driver declares CanCancel=false: Cancel answers UNSUPPORTED and starts no race with completion"
		}
		if ch.calls > 0 && ch.pending == 0 {
			return inline + " cancel"
		}
	case ShutdownVsInFlight:
		if ch.calls > 0 && ch.pending == 0 {
			return inline + " shutdown"
		}
	case UnregisterVsInFlight:
		if ch.calls > 0 && ch.pending == 0 {
			return inline + "n unregister"
		}
	case RepeatedKeyInFlight:
		if ch.calls > 0 && ch.pending == 0 {
			return inline + " submit of the same key"
		}
		if ch.keyPushedBack > 0 { // and none was accepted, or the pair was hit
			return fmt.Sprintf("each of the %d Submits that named a key of a call still in flight was refused as back-pressure (ErrRejected): the driver never let two calls race on a key", ch.keyPushedBack)
		}
	case DrainVsLateCallback:
		if ch.calls > 0 && ch.unsettled == 0 && ch.late == 0 {
			return fmt.Sprintf("each of the %d calls the cases submitted had final results and access ENDED when Submit returned, and every callback ran before Submit returned: a drain has no late callback to race", ch.calls)
		}
	}
	return ""
}

func (h pairHits) list() []PairCount {
	out := make([]PairCount, numPairs)
	for i := range out {
		out[i] = PairCount{Pair: Pair(i).String(), Hits: h[i]}
	}
	return out
}

// PairCounter counts race pairs. It is a monitor.Observer (and
// monitor.CallbackObserver): from the monitor's events alone it counts
// cancel vs completion, repeated key in flight and shutdown vs in-flight
// call (a shutdown label naming a call). The pairs whose first half leaves
// no event — a refused or no-op Register/Unregister, a Drain — are counted
// when the caller announces the operation first ([PairCounter.Registering],
// [PairCounter.Unregistering], [PairCounter.Draining], [PairCounter.Drained],
// [PairCounter.ShuttingDown]); the suite's cases do. It is safe for
// concurrent use and never calls into the driver.
type PairCounter struct {
	mu       sync.Mutex
	hits     pairHits
	calls    map[drivers.CallID]*pcCall
	order    []*pcCall // open calls (access not evidenced), compacted lazily
	live     map[drivers.Handle]drivers.Region
	closed   map[drivers.Handle]bool
	drainGen int       // bumped by every Drain that was not done
	draining int       // Drains announced and not yet answered
	inDrain  []*pcCall // calls whose callback ran while a Drain was under way
	shutSeen bool      // ShuttingDown announced the current shutdown
	nsub     int
	// What SubmitReturned was told, for deciding which pairs can occur.
	returned map[drivers.CallID]bool // calls whose Submit has returned
	seen     pairChances
}

// pairChances is what a run showed of the chances a driver gives the race
// pairs: how many accepted calls were looked at right after Submit
// returned, how many of them still had access PENDING then, how many had
// anything still to come (access not ENDED or a row not final), and how
// many callbacks ran after their call's Submit had returned.
//
// It also counts the Submits naming a key of another accepted call still
// open (access not evidenced) that were refused as back-pressure
// (keyPushedBack). A driver that refused every one of them never lets two
// calls race on a key, whether it holds one call at a time or serializes
// per key.
type pairChances struct {
	calls, pending, unsettled, late int
	keyPushedBack                   int
}

func (a *pairChances) add(b pairChances) {
	a.calls += b.calls
	a.pending += b.pending
	a.unsettled += b.unsettled
	a.late += b.late
	a.keyPushedBack += b.keyPushedBack
}

type pcCall struct {
	id       drivers.CallID
	keys     []string
	handles  []drivers.Handle
	acc      drivers.Access
	index    int
	drainGen int // drainGen at submit
	lateSeen bool
}

var (
	_ monitor.Observer         = (*PairCounter)(nil)
	_ monitor.CallbackObserver = (*PairCounter)(nil)
)

// NewPairCounter returns a counter with nothing counted.
func NewPairCounter() *PairCounter {
	return &PairCounter{
		calls:    map[drivers.CallID]*pcCall{},
		live:     map[drivers.Handle]drivers.Region{},
		closed:   map[drivers.Handle]bool{},
		returned: map[drivers.CallID]bool{},
	}
}

// SubmitReturned tells the counter what an accepted call looked like the
// moment its Submit returned: its access, and whether every row had a
// final result. The suite tells it only on the simulator, where nothing
// runs between Submit's return and that read; a counter never told assumes
// nothing (every pair may occur).
func (p *PairCounter) SubmitReturned(id drivers.CallID, acc drivers.Access, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.returned[id] = true
	p.seen.calls++
	if acc == drivers.AccessPending {
		p.seen.pending++
	}
	if acc != drivers.AccessEnded || !final {
		p.seen.unsettled++
	}
}

func (p *PairCounter) chances() pairChances {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// Hits returns the counts, in [Pairs] order.
func (p *PairCounter) Hits() []PairCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits.list()
}

func (p *PairCounter) snapshot() pairHits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

func (p *PairCounter) openLocked() []*pcCall {
	out := p.order[:0]
	for _, c := range p.order {
		if !c.acc.Evidenced() {
			out = append(out, c)
		}
	}
	p.order = out
	return out
}

// Registering announces a Register (or one region of a RegisterTogether).
func (p *PairCounter) Registering(r drivers.Region) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.live {
		if l.Overlaps(r) || (l.Label == r.Label && r.Label != "") {
			p.hits[DuplicateRegistration]++
			return
		}
	}
}

// Unregistering announces an Unregister (or one handle of an
// UnregisterTogether).
func (p *PairCounter) Unregistering(h drivers.Handle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed[h] {
		p.hits[StaleHandleClose]++
		return
	}
	if _, ok := p.live[h]; !ok {
		return
	}
	for _, c := range p.openLocked() {
		for _, ch := range c.handles {
			if ch == h {
				p.hits[UnregisterVsInFlight]++
				return
			}
		}
	}
}

// Draining announces a Drain. A callback that runs while it is under way
// races it as much as one that runs after it returns: a driver that writes
// its answers in batches delivers the callbacks of the Drain's own batch
// before the caller has even seen the answer.
func (p *PairCounter) Draining() {
	p.mu.Lock()
	p.draining++
	p.mu.Unlock()
}

// Drained reports what a Drain answered: one that is not done opens the
// window in which a callback of an earlier call is a late callback, and
// makes late callbacks of those that ran while it was under way.
func (p *PairCounter) Drained(st drivers.DrainStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.draining > 0 {
		p.draining--
	}
	if !st.Done {
		p.drainGen++
		for _, c := range p.inDrain {
			if !c.lateSeen {
				c.lateSeen = true
				p.hits[DrainVsLateCallback]++
			}
		}
	}
	if p.draining == 0 {
		p.inDrain = p.inDrain[:0]
	}
}

// ShuttingDown announces a Shutdown: every call still without access
// evidence races it.
func (p *PairCounter) ShuttingDown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hits[ShutdownVsInFlight] += len(p.openLocked())
	p.shutSeen = true
}

// Registered implements monitor.Observer.
func (p *PairCounter) Registered(_ time.Duration, h drivers.Handle, r drivers.Region) {
	p.mu.Lock()
	p.live[h] = r
	delete(p.closed, h)
	p.mu.Unlock()
}

// Unregistered implements monitor.Observer.
func (p *PairCounter) Unregistered(_ time.Duration, h drivers.Handle, _ drivers.Region) {
	p.mu.Lock()
	delete(p.live, h)
	p.closed[h] = true
	p.mu.Unlock()
}

// Submitted implements monitor.Observer.
func (p *PairCounter) Submitted(_ time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && !errors.Is(err, drivers.ErrRejected) {
		return
	}
	keys := b.Keys()
	repeated := false
	for _, o := range p.openLocked() {
		for _, k := range o.keys {
			if containsString(keys, k) {
				repeated = true
			}
		}
	}
	if err != nil {
		if repeated {
			p.seen.keyPushedBack++
		}
		return
	}
	if repeated {
		p.hits[RepeatedKeyInFlight]++
	}
	c := &pcCall{id: id, keys: keys, index: p.nsub, drainGen: p.drainGen}
	p.nsub++
	for _, r := range b.Rows {
		if !containsHandle(c.handles, r.Handle) {
			c.handles = append(c.handles, r.Handle)
		}
	}
	p.calls[id] = c
	p.order = append(p.order, c)
}

// RowFinal implements monitor.Observer.
func (p *PairCounter) RowFinal(time.Duration, drivers.CallID, int, drivers.Status) {}

// AccessChanged implements monitor.Observer.
func (p *PairCounter) AccessChanged(_ time.Duration, id drivers.CallID, acc drivers.Access) {
	p.mu.Lock()
	if c := p.calls[id]; c != nil {
		c.acc = acc
		if acc == drivers.AccessEnded {
			delete(p.calls, id) // the open list drops it lazily
		}
	}
	p.mu.Unlock()
}

// Cancelled implements monitor.Observer. The monitor reports it before the
// state after the cancel, so the access known here is the one the cancel
// found.
func (p *PairCounter) Cancelled(_ time.Duration, id drivers.CallID, _ drivers.CancelResult) {
	p.mu.Lock()
	if c := p.calls[id]; c != nil && c.acc == drivers.AccessPending {
		p.hits[CancelVsCompletion]++
	}
	p.mu.Unlock()
}

// Callback implements monitor.CallbackObserver.
func (p *PairCounter) Callback(_ time.Duration, id drivers.CallID) {
	p.mu.Lock()
	if p.returned[id] {
		p.seen.late++
	}
	if c := p.calls[id]; c != nil && !c.lateSeen {
		switch {
		case c.drainGen < p.drainGen:
			c.lateSeen = true
			p.hits[DrainVsLateCallback]++
		case p.draining > 0:
			p.inDrain = append(p.inDrain, c)
		}
	}
	p.mu.Unlock()
}

// LookedUp implements monitor.Observer.
func (p *PairCounter) LookedUp(time.Duration, []string, []bool, error) {}

// ShutDown implements monitor.Observer: without an announcement, every call
// a label names was in flight when Shutdown began.
func (p *PairCounter) ShutDown(_ time.Duration, labels []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutSeen {
		p.shutSeen = false
		return
	}
	for _, l := range labels {
		if rest, ok := strings.CutPrefix(l, "call:"); ok {
			id, _, _ := strings.Cut(rest, ":")
			if _, err := strconv.ParseUint(id, 10, 64); err == nil {
				p.hits[ShutdownVsInFlight]++
			}
		}
	}
}

func containsHandle(hs []drivers.Handle, h drivers.Handle) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
