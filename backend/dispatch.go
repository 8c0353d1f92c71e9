package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

type phase uint8

const (
	queued  phase = iota // waiting for an in-flight slot
	calling              // submitted; results not folded yet
	done                 // every row has its result
	dropped              // never (completely) sent: cancel, failure, shutdown
)

// batch is one cut of an attempt: one look-up and at most one driver call.
type batch struct {
	a     *Attempt
	rows  []drivers.Row
	phase phase
	call  *call
}

// access is the batch's share of B-ACCESS: a queued batch may still touch
// memory, a batch that never reached the driver never will.
func (bt *batch) access() drivers.Access {
	switch {
	case bt.call != nil:
		return bt.call.access
	case bt.phase == queued:
		return drivers.AccessPending
	}
	return drivers.AccessEnded
}

// call is one Submit. dc is nil when Submit failed in a way that may have let
// something escape; such a call is UNPROVABLE for good (stuck).
type call struct {
	bt        *batch
	dc        drivers.Call
	id        drivers.CallID
	rows      []drivers.Row
	bytes     int64
	access    drivers.Access
	slot      bool // holds an in-flight slot
	stuck     bool // UNPROVABLE whatever the driver says later
	folded    bool
	cancelled bool
}

// hasEvidence is B-BOUND's slot rule: a call's slot frees at evidence,
// ENDED or UNPROVABLE, whatever its outcome.
func hasEvidence(acc drivers.Access) bool {
	return acc.Evidenced()
}

// pump dispatches queued batches while an in-flight slot is free.
func (b *Backend) pump() {
	for b.inFlight < b.cfg.MaxCallsInFlight && len(b.queue) > 0 {
		bt := b.queue[0]
		b.queue = slices.Delete(b.queue, 0, 1) // shifted, not resliced: appends reuse the array
		b.dispatch(bt)
	}
}

// needsLookup: Publish always looks up first (B-PUBLISH); Fetch only when the
// driver cannot report an absent key as a clean MISS (B-FETCH).
func (b *Backend) needsLookup(dir drivers.Direction) bool {
	return dir == drivers.Publish || !b.caps.AbsentIsMiss
}

func (b *Backend) dispatch(bt *batch) {
	b.start(bt)
	b.settle(bt.a)
}

// start looks bt's keys up when needed and submits the rows that still need
// the store.
func (b *Backend) start(bt *batch) {
	a := bt.a
	rows := bt.rows
	if b.needsLookup(a.dir) {
		present, err := b.lookup(rows)
		if err != nil {
			bt.phase = dropped // nothing is put for this batch
			b.fail(a, err)
			return
		}
		if !keepsAll(a.dir, present) { // else the batch's rows, not a copy
			rows = b.afterLookup(a, rows, present)
		}
	}
	if len(rows) == 0 {
		b.batchDone(bt)
		return
	}
	b.submit(bt, rows)
}

// afterLookup keeps the rows that still need the store. Fetch: absent keys
// are misses, never fetched. Publish: present keys are served without
// rewriting (merge, not replace).
func (b *Backend) afterLookup(a *Attempt, rows []drivers.Row, present []bool) []drivers.Row {
	keep := b.mem.rowBuf(len(rows))
	for i, r := range rows {
		switch {
		case present[i] == (a.dir == drivers.Fetch):
			keep = append(keep, r)
		case a.dir == drivers.Publish:
			a.acc[r.Position] = true
		default:
			a.missed++
		}
	}
	return keep
}

// keepsAll reports whether afterLookup would keep every row: a Fetch's
// keys all present, a Publish's all absent.
func keepsAll(dir drivers.Direction, present []bool) bool {
	for _, p := range present {
		if p != (dir == drivers.Fetch) {
			return false
		}
	}
	return true
}

// lookup asks the driver whether rows' keys are present. An error or a
// wrong-length answer is a failure, never "absent" (D-LOOK-2).
func (b *Backend) lookup(rows []drivers.Row) (present []bool, err error) {
	keys := b.mem.keys.Make(len(rows)) // slab memory: a driver or observer may keep it
	for i, r := range rows {
		keys[i] = r.Key
	}
	b.stats.Lookups++
	defer func() {
		if p := recover(); p != nil {
			present, err = nil, fmt.Errorf("%w: Contains panicked: %v", ErrLookup, p)
		}
	}()
	present, err = b.d.Contains(context.Background(), keys)
	switch {
	case err != nil:
		return nil, wrapCause(ErrLookup, "", err)
	case len(present) != len(keys):
		return nil, &shortLookupError{answers: len(present), keys: len(keys)}
	}
	return present, nil
}

func (b *Backend) submit(bt *batch, rows []drivers.Row) {
	c := b.mem.calls.New()
	*c = call{bt: bt, rows: rows, bytes: b.slotBytes(rows), slot: true, access: drivers.AccessPending}
	bt.call, bt.phase = c, calling
	b.inFlight++
	dc, err := b.safeSubmit(drivers.RowBatch{Dir: bt.a.dir, Rows: rows},
		sim.WakeRun(b.rt, b.callLabel, c))
	if err == nil {
		c.dc, c.id = dc, dc.ID()
		b.stats.Calls++
		b.live = append(b.live, c)
		return
	}
	if nothingEscaped(err) {
		// D-SUB-2: nothing escaped; the batch's access ends here.
		bt.call, bt.phase = nil, dropped
		b.freeSlot(c)
		b.fail(bt.a, wrapCause(ErrSubmit, "", err))
		return
	}
	// D-SUB-2: something may have escaped; the rows stay UNPROVABLE.
	b.live = append(b.live, c)
	b.makeStuck(c)
	b.fail(bt.a, wrapCause(ErrSubmit, "rows treated as UNPROVABLE: ", err))
}

func nothingEscaped(err error) bool {
	return errors.Is(err, drivers.ErrInvalidSubmission) || errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrRejected)
}

// safeSubmit turns a driver panic into an error that is not a sentinel, so
// the rows count as UNPROVABLE (D-SUB-2).
func (b *Backend) safeSubmit(rb drivers.RowBatch, onChange func()) (c drivers.Call, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("Submit panicked: %v", p)
		}
	}()
	c, err = b.d.Submit(rb, onChange)
	if err == nil && c == nil {
		err = errors.New("Submit returned no call and no error")
	}
	return c, err
}

// onCall runs in a runtime event after the driver signalled a change of c.
// It never re-enters the driver on the driver's stack (D-CB-4): this is a
// scheduled event, so it may dispatch more batches.
func (b *Backend) onCall(c *call) {
	b.observe(c)
	b.pump()
	b.pollDrain()
}

// observe reads c's results and access and folds what is new.
func (b *Backend) observe(c *call) {
	if c.dc == nil {
		return
	}
	a := c.bt.a
	res := c.dc.Results()
	if len(res) != len(c.rows) {
		// D-STATUS: a wrong number of results is a whole-call failure.
		if !c.stuck {
			b.makeStuck(c)
			c.folded = true
			b.fail(a, fmt.Errorf("%w: call %d answered %d results for %d rows", ErrWrongLength, c.id, len(res), len(c.rows)))
		}
		b.settle(a)
		return
	}
	b.setAccess(c, c.dc.Access())
	if !c.folded && allFinal(res) {
		c.folded = true
		b.fold(c, res)
	}
	b.settle(a)
}

func allFinal(res []drivers.Status) bool {
	for _, s := range res {
		if !s.Final() {
			return false
		}
	}
	return true
}

// setAccess applies a legal access change (D-ACCESS) and its bookkeeping:
// the in-flight slot and the unprovable gauge (B-BOUND).
func (b *Backend) setAccess(c *call, acc drivers.Access) {
	old := c.access
	if c.stuck || old == acc || !old.CanBecome(acc) {
		return
	}
	c.access = acc
	if hasEvidence(acc) {
		b.freeSlot(c)
	}
	if acc == drivers.AccessUnprovable {
		b.unprovable++
		b.retainedBytes += c.bytes
		b.stats.UnprovableTotal++
	}
	if old == drivers.AccessUnprovable {
		b.unprovable--
		b.retainedBytes -= c.bytes
	}
	if acc == drivers.AccessEnded {
		b.forget(c)
	}
}

func (b *Backend) makeStuck(c *call) {
	b.setAccess(c, drivers.AccessUnprovable)
	c.stuck = true
}

func (b *Backend) freeSlot(c *call) {
	if c.slot {
		c.slot = false
		b.inFlight--
	}
}

func (b *Backend) forget(c *call) {
	for i, l := range b.live {
		if l == c {
			b.live = append(b.live[:i], b.live[i+1:]...)
			return
		}
	}
}

// rowFold is what one final row result means for the attempt.
type rowFold uint8

const (
	foldServed  rowFold = iota + 1
	foldMissed          // FETCH MISS: not served, slot untouched
	foldRecheck         // PUBLISH MISS (declined): look up again
	foldFailed          // FAULT, NOT_ATTEMPTED: the whole attempt fails
)

// foldRow is B-FETCH / B-PUBLISH for one row. NOT_ATTEMPTED outside a
// cancel is a failure, never a miss.
func foldRow(dir drivers.Direction, st drivers.Status) rowFold {
	switch {
	case st == drivers.OK:
		return foldServed
	case st == drivers.Miss && dir == drivers.Fetch:
		return foldMissed
	case st == drivers.Miss:
		return foldRecheck
	}
	return foldFailed
}

func (b *Backend) fold(c *call, res []drivers.Status) {
	a := c.bt.a
	if a.state != Pending {
		b.batchDone(c.bt)
		return
	}
	var recheck []drivers.Row
	for i, st := range res {
		r := c.rows[i]
		switch foldRow(a.dir, st) {
		case foldServed:
			a.acc[r.Position] = true
		case foldMissed:
			a.missed++
		case foldRecheck:
			recheck = append(recheck, r)
		default:
			b.batchDone(c.bt)
			b.fail(a, &rowFailedError{call: c.id, row: i, key: r.Key, status: st})
			return
		}
	}
	if len(recheck) > 0 {
		b.recheck(a, recheck)
	}
	b.batchDone(c.bt)
}

// recheck is B-PUBLISH's second look-up after a declined publish: present →
// served ("raced"), absent → not served ("declined"), error → Failed.
func (b *Backend) recheck(a *Attempt, rows []drivers.Row) {
	present, err := b.lookup(rows)
	if err != nil {
		b.fail(a, err)
		return
	}
	for i, r := range rows {
		if present[i] {
			a.acc[r.Position] = true
			a.raced++
		} else {
			a.declined++
		}
	}
}

func (b *Backend) batchDone(bt *batch) {
	if bt.phase == queued || bt.phase == calling {
		bt.phase = done
		bt.a.open--
	}
}

// fail commits Failed (if first) and stops the rest of the attempt: no
// partial delivery is ever reported (B-FETCH, B-PUBLISH).
func (b *Backend) fail(a *Attempt, reason error) {
	b.dropQueued(a)
	b.cancelCalls(a)
	b.commit(a, Failed, reason)
}

// cancel is B-CANCEL (also used by Shutdown).
func (b *Backend) cancel(a *Attempt, reason error) bool {
	b.dropQueued(a)
	b.cancelCalls(a)
	ok := b.commit(a, Cancelled, reason)
	b.settle(a)
	return ok
}

// dropQueued removes a's queued batches: their rows are NOT_ATTEMPTED and
// their access ends here.
func (b *Backend) dropQueued(a *Attempt) {
	n := 0
	for i := range a.batches {
		bt := &a.batches[i]
		if bt.phase == queued {
			bt.phase = dropped
			a.open--
			n++
		}
	}
	if n == 0 {
		return
	}
	q := b.queue[:0]
	for _, bt := range b.queue {
		if bt.a != a {
			q = append(q, bt)
		}
	}
	clear(b.queue[len(q):])
	b.queue = q
}

// cancelCalls forwards one Cancel per call of a that is still running
// (D-CAN-1: non-blocking, so safe here).
func (b *Backend) cancelCalls(a *Attempt) {
	for i := range a.batches {
		bt := &a.batches[i]
		c := bt.call
		if c == nil || c.dc == nil || c.cancelled || c.folded || hasEvidence(c.access) {
			continue
		}
		c.cancelled = true
		func() {
			defer func() { _ = recover() }() // a panicking Cancel changes nothing we rely on
			c.dc.Cancel()
		}()
	}
}

// Run is the call's change callback (sim.Runner): the backend reads the
// driver's current state for it.
func (c *call) Run() { c.bt.a.b.onCall(c) }
