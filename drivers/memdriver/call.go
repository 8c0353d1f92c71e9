package memdriver

import (
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// call is one submitted driver call. Fields after the first block are
// guarded by d.mu.
type call struct {
	id       drivers.CallID
	rows     []drivers.Row
	regions  []*drivers.Region // per row, its binding's (never changed once registered)
	onChange func()
	wake     func()
	plan     plan
	dir      drivers.Direction

	// The flags sit together, without padding between them (calls come
	// from Driver.callSlab).
	access    drivers.Access
	begun     bool
	stopped   bool // the driver stopped waiting (error-after, timeout)
	proves    bool // once stopped and quiet, access is proven ENDED
	proofDue  bool // a proof event is scheduled
	running   bool // a callback is running
	listed    bool // queued in d.toWake
	retired   bool // forgotten by the driver (forget)
	results   []drivers.Status
	rs        []rowState
	inFlight  int // rows transferring plus late writes pending
	steps     int // chunks moved, for error-after
	version   uint64
	delivered uint64     // version seen by the last callback that returned
	handle    callHandle // what Submit returns

	// Inline storage for a small call's slices (most calls carry one or
	// two rows); a bigger call's are cut from the driver's slabs.
	inl struct {
		rows    [inlineRows]drivers.Row
		regions [inlineRows]*drivers.Region
		results [inlineRows]drivers.Status
		rs      [inlineRows]rowState
	}
}

// inlineRows is how many rows a call keeps inline (see call.inl): two
// cover most calls and keep a chunk of Driver.callSlab under 32 KiB.
const inlineRows = 2

// plan is the call's fault plan, drawn at Submit.
type plan struct {
	errorAfterAt    int // fail after this many chunks moved; 0: never
	timeoutAt       time.Duration
	hangRow         int // never-ends: this row's transfer never finishes; -1: none
	errorBefore     bool
	errorProves     bool // error-after: proven ENDED once quiet
	wrongLength     bool
	delayed         bool // delay fault: each step takes up to 50 step delays more
	unprovableLater bool
}

type rowPhase uint8

const (
	rowIdle    rowPhase = iota // not started: cancel makes it NOT_ATTEMPTED
	rowRunning                 // transferring: only completion or a fault ends it
	rowDone
)

type rowState struct {
	data   []byte // FETCH: bytes to write; PUBLISH: bytes read
	c      *call  // the row's call and index: the row is its own event (Run)
	limit  int    // bytes to move (< SlotBytes when cut short)
	chunks int32  // at most 3; int32 like next and i: a call's row states stay small
	next   int32
	i      int32
	phase  rowPhase
	final  drivers.Status // what the transfer reports when it finishes
}

func (d *Driver) newCall(b drivers.RowBatch, onChange func()) *call {
	d.lastCall++
	c := d.callSlab.New() // calls live about as long as the run
	c.id, c.dir, c.onChange = d.lastCall, b.Dir, onChange
	if n := len(b.Rows); n <= inlineRows {
		c.rows = append(c.inl.rows[:0:n], b.Rows...)
		c.regions, c.results, c.rs = c.inl.regions[:n:n], c.inl.results[:n:n], c.inl.rs[:n:n]
	} else {
		c.rows = append(d.rowSlab.Make(n)[:0], b.Rows...)
		c.regions, c.results, c.rs = d.regionSlab.Make(n), d.statusSlab.Make(n), d.rsSlab.Make(n)
	}
	for i, r := range c.rows {
		c.rs[i].c, c.rs[i].i = c, int32(i)
		bd := d.bindings[r.Handle]
		c.regions[i] = &bd.region
		if firstOfHandle(c.rows, i) {
			bd.users++ // D-REG-6: busy until access ENDED
		}
	}
	c.plan = d.drawPlan(len(c.rows))
	c.handle = callHandle{d, c}
	c.wake = sim.WakeRun(d.rt, d.lblWake, c) // c.Run: no closure per call
	d.calls = append(d.calls, c)
	return c
}

// firstOfHandle reports whether row i is the first of rows to name its
// handle: the rows that are give the distinct handles a call names, in
// order (a few rows: no set to keep).
func firstOfHandle(rows []drivers.Row, i int) bool {
	for _, r := range rows[:i] {
		if r.Handle == rows[i].Handle {
			return false
		}
	}
	return true
}

func (d *Driver) drawPlan(rows int) plan {
	r, m := d.rFault, d.mix
	p := plan{hangRow: -1}
	p.errorBefore = r.Chance(m.ErrorBefore)
	if r.Chance(m.ErrorAfter) {
		p.errorAfterAt = 1 + r.Intn(2*rows)
		p.errorProves = r.Chance(0.5)
	}
	p.wrongLength = r.Chance(m.WrongLength)
	p.delayed = r.Chance(m.Delay)
	if r.Chance(m.Timeout) {
		p.timeoutAt = time.Duration(1 + r.Intn(int(4*d.step)))
	}
	p.unprovableLater = r.Chance(m.UnprovableLater)
	if r.Chance(m.NeverEnds) {
		p.hangRow = r.Intn(rows)
	}
	return p
}

// delay is one seeded step delay of c. Caller holds d.mu.
func (d *Driver) delay(c *call) time.Duration {
	n := 1 + d.rTiming.Intn(int(d.step))
	if c.plan.delayed {
		n += d.rTiming.Intn(50 * int(d.step))
	}
	return time.Duration(n)
}

// after schedules r as a step of c. Caller holds d.mu.
func (d *Driver) after(c *call, label string, r sim.Runner) {
	d.afterRun(d.delay(c), label, r)
}

// begin starts the call: error-before fails it whole; otherwise every row
// not cancelled gets its own start event. Called with d.mu held; it
// releases it.
func (d *Driver) begin(c *call) {
	if d.shut {
		d.mu.Unlock()
		return
	}
	c.begun = true
	switch {
	case c.plan.errorBefore:
		for i := range c.rows {
			d.completeRow(c, i, drivers.Fault)
		}
	default:
		for i := range c.rows {
			if !c.results[i].Final() {
				d.after(c, d.lblRow, &c.rs[i])
			}
		}
		if c.plan.timeoutAt > 0 {
			d.afterRun(c.plan.timeoutAt, d.lblTimeout, (*callTimeout)(c))
		}
	}
	d.maybeEnd(c)
	d.unlockAndWake()
}

// rowStep is every event of row i: its start, each chunk, then maybe a late
// write, in that order and never two scheduled at once, so the row's phase
// says which one this is. The row itself is the event (rowState.Run); begin
// schedules its start.
func (d *Driver) rowStep(c *call, i int) {
	d.mu.Lock()
	switch {
	case c.rs[i].phase == rowIdle:
		d.startRow(c, i)
	case c.rs[i].phase == rowRunning:
		d.moveChunk(c, i)
	default:
		d.lateWrite(c, i)
	}
}

// startRow decides what row i will move. A FETCH reads the object at once
// (its linearization point); a MISS ends the row without touching the slot.
// Called with d.mu held; it releases it.
func (d *Driver) startRow(c *call, i int) {
	if d.shut || c.results[i].Final() {
		d.mu.Unlock()
		return
	}
	rs, row, reg := &c.rs[i], c.rows[i], c.regions[i]
	rs.phase = rowRunning
	c.inFlight++
	if c.plan.hangRow == i {
		d.mu.Unlock() // never-ends: no further step is ever scheduled
		return
	}
	by := Origin{Driver: d.name, Call: c.id, Row: i}
	evicting := d.store.Evicting()
	if evicting && d.rFault.Chance(d.mix.Evict) {
		d.store.evictOne(by, d.rFault)
	}
	fault := d.rFault.Chance(d.mix.RowFault)
	switch c.dir {
	case drivers.Fetch:
		selfEvicted := false
		if evicting && d.rFault.Chance(d.mix.RowMiss) {
			d.store.evict(by, row.Key) // "evicted": MISS stays honest
			selfEvicted = true
		}
		if d.stale[row.Key] {
			delete(d.stale, row.Key)
			d.store.evict(by, row.Key) // stale lookup: present at lookup, gone now
			selfEvicted = true
		}
		get := d.store.object // the object itself: the row only reads it
		if d.rowHook() {
			get = d.store.Get // a Row hook is handed the data and may write it
		}
		obj, ok := get(row.Key)
		switch {
		case !ok:
			// D-STATUS: MISS never touches the slot. Without AbsentIsMiss an
			// absent key is FAULT, unless we saw it evicted ourselves.
			rs.final = drivers.Miss
			if !d.caps.AbsentIsMiss && !selfEvicted {
				rs.final = drivers.Fault
			}
		case len(obj) != reg.SlotBytes:
			rs.final = drivers.Fault // size mismatch; the bytes written stay inside the slot
			rs.data = obj[:min(len(obj), reg.SlotBytes)]
		default:
			rs.final, rs.data = drivers.OK, obj
		}
		rs.limit = len(rs.data)
	case drivers.Publish:
		if d.rFault.Chance(d.mix.RowMiss) {
			rs.final = drivers.Miss // the store declines up front: nothing read, nothing stored
			break
		}
		rs.final = drivers.OK
		rs.data = d.byteSlab.Make(reg.SlotBytes)
		rs.limit = reg.SlotBytes
	}
	if fault && rs.final != drivers.Miss { // a known miss is never reported as a fault (D-MISS-HONEST)
		rs.final = drivers.Fault // a transport error after some (maybe all) bytes
		rs.limit = d.rFault.Intn(rs.limit + 1)
	}
	if d.rowHook() {
		p := RowPlan{Call: c.id, Row: i, Dir: c.dir, Key: row.Key, SlotBytes: reg.SlotBytes, Status: rs.final, Data: rs.data, Limit: rs.limit}
		d.hooks.Row(&p)
		rs.final, rs.data, rs.limit = p.Status, p.Data, p.Limit
	}
	if rs.limit == 0 {
		d.finishTransfer(c, i)
		d.unlockAndWake()
		return
	}
	rs.chunks = int32(min(1+d.rTiming.Intn(3), rs.limit))
	d.after(c, d.lblChunk, rs)
	d.mu.Unlock()
}

// rowHook reports whether a Hooks.Row may change (and keep) a row's data.
func (d *Driver) rowHook() bool { return d.hooks != nil && d.hooks.Row != nil }

// moveChunk moves the next chunk of row i through the region's Memory, the
// only way this driver touches registered memory (D-SUB-6), naming the call
// and row. Called with d.mu held, which it releases while memory is touched
// and on return.
func (d *Driver) moveChunk(c *call, i int) {
	if d.shut {
		d.mu.Unlock()
		return
	}
	rs, reg := &c.rs[i], c.regions[i]
	next, chunks := int(rs.next), int(rs.chunks)
	lo, hi := next*rs.limit/chunks, (next+1)*rs.limit/chunks
	off := reg.SlotOffset(c.rows[i].Slot) + lo
	d.mu.Unlock()

	by := drivers.Toucher{Call: c.id, Row: i}
	var err error
	if c.dir == drivers.Fetch {
		err = reg.Mem.Write(by, off, rs.data[lo:hi])
	} else {
		err = reg.Mem.Read(by, off, rs.data[lo:hi])
	}

	d.mu.Lock()
	if d.shut {
		d.mu.Unlock() // Shutdown raced the touch; the call is UNPROVABLE now
		return
	}
	rs.next++
	c.steps++
	if err != nil {
		rs.final, rs.next = drivers.Fault, rs.chunks
	}
	if c.plan.errorAfterAt == c.steps && !c.stopped && c.access == drivers.AccessPending {
		d.stop(c, drivers.Fault, c.plan.errorProves)
	}
	if rs.next < rs.chunks {
		d.after(c, d.lblChunk, rs)
		d.mu.Unlock()
		return
	}
	d.finishTransfer(c, i)
	d.unlockAndWake()
}

// finishTransfer ends row i's transfer: a whole PUBLISH becomes visible at
// once (D-SUB-5), first writer wins (D-SUB-4); the row gets its result, or
// keeps the one a stop gave it. Caller holds d.mu.
func (d *Driver) finishTransfer(c *call, i int) {
	rs := &c.rs[i]
	rs.phase = rowDone
	if c.dir == drivers.Publish && rs.limit > 0 && rs.limit == len(rs.data) {
		// A faulted publish that read everything may still land (D-STATUS).
		if rs.final == drivers.OK || (rs.final == drivers.Fault && d.rFault.Chance(0.5)) {
			// rs.data is never written again: the store may keep it, unless a
			// Row hook handed out a buffer of its own.
			d.store.put(Origin{Driver: d.name, Call: c.id, Row: i}, c.rows[i].Key, rs.data, !d.rowHook())
		}
	}
	if !c.plan.wrongLength {
		d.completeRow(c, i, rs.final)
	}
	if c.dir == drivers.Fetch && c.results[i] == drivers.OK && d.rFault.Chance(d.mix.LateWrite) {
		// RDMA-style late write: after the result, before access ENDED.
		d.after(c, d.lblLate, rs)
		return
	}
	c.inFlight--
	d.maybeEnd(c)
}

// lateWrite writes row i's object into its slot again, whole. Called with
// d.mu held; it releases it.
func (d *Driver) lateWrite(c *call, i int) {
	if d.shut {
		d.mu.Unlock()
		return
	}
	reg, data := c.regions[i], c.rs[i].data
	d.mu.Unlock()
	_ = reg.Mem.Write(drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(c.rows[i].Slot), data)
	d.mu.Lock()
	if d.shut {
		d.mu.Unlock()
		return
	}
	c.inFlight--
	d.maybeEnd(c)
	d.unlockAndWake()
}

// timeout is the driver giving up waiting for c.
func (d *Driver) timeout(c *call) {
	d.mu.Lock()
	if !d.shut && !c.stopped && c.access == drivers.AccessPending {
		d.stop(c, drivers.NotAttempted, true)
	}
	d.unlockAndWake()
}

// stop is the driver ceasing to wait for c (error-after, timeout): rows
// without a result become FAULT when started, else idle; access becomes
// UNPROVABLE (D-ACCESS: transfers may still land) and is proven ENDED once
// they are over when proves is set. Caller holds d.mu.
func (d *Driver) stop(c *call, idle drivers.Status, proves bool) {
	c.stopped, c.proves = true, proves
	for i := range c.rows {
		if c.rs[i].phase == rowIdle {
			d.completeRow(c, i, idle)
		} else {
			d.completeRow(c, i, drivers.Fault)
		}
	}
	d.setAccess(c, drivers.AccessUnprovable)
	d.maybeEnd(c)
}

// maybeEnd gives c its access evidence once every row is settled and no
// transfer or late write is in flight. Caller holds d.mu.
func (d *Driver) maybeEnd(c *call) {
	if !c.begun || c.inFlight > 0 || c.proofDue || c.access == drivers.AccessEnded {
		return
	}
	if c.access == drivers.AccessUnprovable {
		if c.proves {
			c.proofDue = true
			d.after(c, d.lblProof, (*callProof)(c))
		}
		return
	}
	held := false
	for i := range c.rows {
		switch {
		case c.results[i].Final():
		case c.rs[i].phase == rowDone:
			held = true // wrong-length: the answer is still to come
		default:
			return // a row start is still scheduled
		}
	}
	switch {
	case held:
		// The store answered a wrong number of results: every row without a
		// result FAULT, access UNPROVABLE (D-STATUS), never proven.
		for i := range c.rows {
			d.completeRow(c, i, drivers.Fault)
		}
		d.setAccess(c, drivers.AccessUnprovable)
	case c.plan.unprovableLater:
		c.proves = true
		d.setAccess(c, drivers.AccessUnprovable)
		d.maybeEnd(c)
	default:
		d.setAccess(c, drivers.AccessEnded)
	}
}

func (d *Driver) proof(c *call) {
	d.mu.Lock()
	if !d.shut {
		c.proofDue = false
		d.setAccess(c, drivers.AccessEnded)
	}
	d.unlockAndWake()
}

// settle runs after a cancel: the call may now be quiet.
func (d *Driver) settle(c *call) {
	d.mu.Lock()
	if !d.shut {
		d.maybeEnd(c)
	}
	d.unlockAndWake()
}

// completeRow sets row i's final result once (D-STATUS, D-CB-3). Caller
// holds d.mu.
func (d *Driver) completeRow(c *call, i int, st drivers.Status) {
	was := c.results[i]
	if h := d.hooks; h != nil && h.Result != nil {
		st = h.Result(RowResult{Call: c.id, Row: i, Dir: c.dir, Was: was, Status: st})
	} else if was.Final() {
		return
	}
	if was.Final() && st == was {
		return
	}
	c.results[i] = st
	d.changed(c)
}

// setAccess moves c's access along D-ACCESS only; ENDED frees the call's
// regions for closing (D-REG-6). Caller holds d.mu.
func (d *Driver) setAccess(c *call, a drivers.Access) {
	if h := d.hooks; h != nil && h.Access != nil {
		a = h.Access(AccessChange{Call: c.id, From: c.access, To: a,
			ClientError: c.stopped && c.plan.errorAfterAt > 0 && c.steps >= c.plan.errorAfterAt})
	}
	if c.access == a || !c.access.CanBecome(a) {
		return
	}
	c.access = a
	if a == drivers.AccessEnded {
		for i, r := range c.rows {
			if !firstOfHandle(c.rows, i) {
				continue
			}
			if b := d.bindings[r.Handle]; b != nil {
				b.users--
			}
		}
	}
	d.changed(c)
}

// changed records a change of c's state; the callback is triggered once the
// mutex is released (unlockAndWake), so state is set before the signal
// (D-CB-1) and the last change is always followed by one (D-CB-2). Caller
// holds d.mu.
func (d *Driver) changed(c *call) {
	c.version++
	if !c.listed {
		c.listed = true
		d.toWake = append(d.toWake, c)
	}
}

// unlockAndWake releases d.mu, then triggers the wakers of every changed
// call. A trigger only queues the callback on the runtime.
func (d *Driver) unlockAndWake() {
	switch len(d.toWake) {
	case 0:
		d.mu.Unlock()
		return
	case 1: // the usual change: one call, nothing to copy
		c := d.toWake[0]
		d.toWake[0], d.toWake = nil, d.toWake[:0]
		c.listed = false
		d.mu.Unlock()
		c.wake()
		return
	}
	var buf [8]*call // the usual few calls stay off the heap
	ws := append(buf[:0], d.toWake...)
	clear(d.toWake)
	d.toWake = d.toWake[:0]
	for _, c := range ws {
		c.listed = false
	}
	d.mu.Unlock()
	for _, c := range ws {
		c.wake()
	}
}

// runNotify is c's callback event: it runs onChange outside the mutex
// (D-CB-4), never after Shutdown began (Shutdown runs what is owed itself,
// D-CB-5), and retires the call once it is ENDED and told.
func (d *Driver) runNotify(c *call) {
	d.mu.Lock()
	if d.shut {
		d.mu.Unlock() // Shutdown runs every owed callback itself
		return
	}
	if c.delivered == c.version || c.onChange == nil {
		c.delivered = c.version
		d.retire(c)
		d.mu.Unlock()
		return
	}
	v := c.version
	c.running = true
	d.inCallback++
	d.mu.Unlock()

	c.onChange()

	d.mu.Lock()
	c.running = false
	d.inCallback--
	c.delivered = max(c.delivered, v)
	d.retire(c)
	d.cond.Broadcast()
	d.mu.Unlock()
}

// retire forgets a call that is ENDED and whose last change was told.
// Caller holds d.mu.
func (d *Driver) retire(c *call) {
	if c.access == drivers.AccessEnded && c.delivered == c.version && !c.running {
		d.forget(c)
	}
}

// forget drops c from d.calls: it is marked at once, and the marked calls
// are cut out once they are half the slice (amortized O(1), order kept).
// Caller holds d.mu.
func (d *Driver) forget(c *call) {
	if c.retired {
		return
	}
	c.retired = true
	d.retired++
	if d.retired > len(d.calls)/2 {
		d.calls = slices.DeleteFunc(d.calls, func(c *call) bool { return c.retired })
		d.retired = 0
	}
}
