package blobdriver

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
)

// call is one submitted call. Its worker goroutine (run) is the only code
// that touches the rows' memory.
type call struct {
	d        *Driver
	id       drivers.CallID
	dir      drivers.Direction
	rows     []drivers.Row
	regions  []drivers.Region // regions[i] is rows[i]'s region, fixed at Submit
	objects  []string         // objects[i] is rows[i]'s bucket key
	onChange func()
	// ctx is every store operation's context; stop cancels it when the
	// driver stops waiting for the worker (expire, abandon), never on
	// Cancel: an operation already sent runs to its answer, which decides
	// its row.
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{} // closed when run returns
	timer *time.Timer   // the deadline (Config.Timeout), nil without one

	// Guarded by d.mu.
	results []drivers.Status
	access  drivers.Access
	// started[i]: row i's store operation was begun; until then the row
	// can still become NOT_ATTEMPTED.
	started   []bool
	cancelled bool // Cancel or Shutdown asked the worker to stop
	expired   bool // the deadline passed while the worker ran
	finished  bool // the worker has set its final state
	// abandoned: Shutdown stopped waiting; the worker writes nothing more
	// and never signals.
	abandoned bool
	// copied: a PUBLISH worker has made its last touch of the rows (the
	// slot copies); from here on ENDED is proven whatever happens.
	copied bool
	// noProof: the worker panicked before it was done with the memory; its
	// access stays UNPROVABLE for good.
	noProof bool
	// cbRunning counts this call's callbacks in flight.
	cbRunning int
	// settled: the worker is done (or was given up) and no callback of this
	// call is running or will start.
	settled bool
}

var _ drivers.Call = (*call)(nil)

// ID implements drivers.Call.
func (c *call) ID() drivers.CallID { return c.id }

// Results implements drivers.Call.
func (c *call) Results() []drivers.Status {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return append([]drivers.Status(nil), c.results...)
}

// Access implements drivers.Call.
func (c *call) Access() drivers.Access {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.access
}

// Cancel implements drivers.Call: it marks the call cancelled and returns
// (D-CAN-1). The worker decides which rows become NOT_ATTEMPTED; access is
// never touched here (D-CAN-2).
func (c *call) Cancel() drivers.CancelResult {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	switch {
	case !slices.Contains(c.results, drivers.Pending):
		return drivers.CancelAlreadyDone
	case !c.d.caps.CanCancel:
		return drivers.CancelUnsupported
	}
	c.cancelled = true
	return drivers.CancelRequested
}

// reportLocked sets row i's result unless it is already final (D-CB-3).
func (c *call) reportLocked(i int, st drivers.Status) bool {
	if c.results[i] != drivers.Pending {
		return false
	}
	c.results[i] = st
	return true
}

// giveUpLocked gives every row without result its answer when the driver
// stops waiting for the worker: FAULT when its store operation was begun
// (it may have run), NOT_ATTEMPTED when it never was (the worker checks
// under d.mu before it begins a row, and begins nothing once the call
// expired or was abandoned).
func (c *call) giveUpLocked() bool {
	changed := false
	for i := range c.results {
		st := drivers.NotAttempted
		if c.started[i] {
			st = drivers.Fault
		}
		changed = c.reportLocked(i, st) || changed
	}
	return changed
}

// stoppedLocked reports whether the worker must not begin anything new.
func (c *call) stoppedLocked() bool { return c.cancelled || c.expired || c.abandoned }

// notAttemptedLocked answers NOT_ATTEMPTED for every row not begun.
func (c *call) notAttemptedLocked() {
	for j := range c.results {
		if !c.started[j] {
			c.reportLocked(j, drivers.NotAttempted)
		}
	}
}

func (c *call) run() {
	defer close(c.done)
	defer c.stop()
	c.finish(c.work())
}

// work runs the transfer; a panic anywhere in it (the blob client, a
// Memory implementation, our own code) is caught and reported to finish.
func (c *call) work() (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	if c.dir == drivers.Publish {
		c.publish()
	} else {
		c.fetch()
	}
	return false
}

// finish sets the call's final state and signals it.
//
// Access: the worker makes every touch of the call's memory (the blob
// client only ever holds private copies), and it has made its last one
// here, so nothing can touch the rows again: ENDED is proven (also
// UNPROVABLE → ENDED for a call that expired or that Shutdown abandoned, on
// this new evidence). After a panic we do not claim proof: the worker left
// a path we did not plan, so access stays UNPROVABLE — unless the panic
// came after a PUBLISH's last touch (its copies), which it cannot undo.
func (c *call) finish(panicked bool) {
	if c.timer != nil {
		c.timer.Stop()
	}
	d := c.d
	d.mu.Lock()
	for i := range c.results {
		c.reportLocked(i, drivers.Fault) // a panic left rows without result
	}
	if panicked && !c.copied {
		c.noProof = true
		if c.access == drivers.AccessPending {
			c.access = drivers.AccessUnprovable
		}
	} else if !c.noProof {
		c.access = drivers.AccessEnded
	}
	c.finished = true
	fire := !d.shut && !c.abandoned
	if fire {
		d.cbs.Add(1)
		c.cbRunning++
	}
	d.settleLocked(c)
	d.mu.Unlock()
	if fire {
		c.callback()
	}
}

// expire is the call's deadline (Config.Timeout): the driver stops waiting
// for the worker. Rows without result get their answer (giveUpLocked) and
// an access still PENDING becomes UNPROVABLE — the worker may be inside a
// slot touch, and a deadline is never evidence (D-ACCESS). The store
// operation in flight is cancelled and the worker begins nothing more; when
// it returns, finish proves ENDED.
func (c *call) expire() {
	d := c.d
	d.mu.Lock()
	if c.finished || c.abandoned || d.shut {
		d.mu.Unlock()
		return
	}
	c.expired = true
	changed := c.giveUpLocked()
	if c.access == drivers.AccessPending {
		c.access = c.stopAccessLocked()
		changed = true
	}
	c.stop()
	if !changed {
		d.mu.Unlock()
		return
	}
	d.cbs.Add(1)
	c.cbRunning++
	d.mu.Unlock()
	c.callback()
}

// callback runs onChange for a callback counted in d.cbs and c.cbRunning
// under d.mu by the caller: the state it signals is already set (D-CB-1),
// and no lock is held while it runs (D-CB-4).
func (c *call) callback() {
	d := c.d
	defer d.cbs.Done()
	c.onChange()
	d.mu.Lock()
	c.cbRunning--
	d.settleLocked(c)
	d.mu.Unlock()
}

// settleLocked marks c settled once its worker is done and no callback of
// it is running, and forgets it once it is also ENDED.
func (d *Driver) settleLocked(c *call) {
	if !c.settled && c.finished && c.cbRunning == 0 {
		c.settled = true
	}
	if c.settled && c.finished && c.access == drivers.AccessEnded {
		delete(d.calls, c.id)
	}
}

// abandon is Shutdown giving up on a call whose worker is still running:
// rows without result get their answer (giveUpLocked), an access still
// PENDING becomes UNPROVABLE, and the store operation in flight is
// cancelled.
func (c *call) abandon() {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.finished {
		return
	}
	c.abandoned = true
	c.settled = true
	c.giveUpLocked()
	if c.access == drivers.AccessPending {
		c.access = c.stopAccessLocked()
	}
	c.stop()
}

// stopAccessLocked is a PENDING call's access once the driver stops
// waiting for its worker: ENDED when the worker is past its last touch (a
// PUBLISH that copied its slots), UNPROVABLE otherwise.
func (c *call) stopAccessLocked() drivers.Access {
	if c.copied && !c.noProof {
		return drivers.AccessEnded
	}
	return drivers.AccessUnprovable
}

// publish copies every slot, then writes one object per row, in row order,
// each with IfNotExist (Driver.put).
func (c *call) publish() {
	d := c.d
	vals := make([][]byte, len(c.rows))
	for i, row := range c.rows {
		d.mu.Lock()
		stop := c.stoppedLocked()
		d.mu.Unlock()
		if stop {
			break // rows not copied are not written: NOT_ATTEMPTED below
		}
		reg := c.regions[i]
		buf := make([]byte, reg.SlotBytes)
		if err := reg.Mem.Read(drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(row.Slot), buf); err != nil {
			d.mu.Lock()
			c.reportLocked(i, drivers.Fault)
			d.mu.Unlock()
			continue
		}
		vals[i] = buf // private, never written again: the client may hold it
	}

	// The memory access of a PUBLISH ends here: the objects are the
	// private copies above, the blob client never sees the registered
	// memory, and this worker will not touch it again. ENDED is proven
	// from now on, but reported only when the worker returns, with the
	// rows' results (finish), or when the driver stops waiting for it
	// (stopAccessLocked): a caller that waits for access evidence before
	// it reads the results — the conformance suite's settle does — then
	// sees them. A write whose Close fails is a FAULT row, never an OK
	// one; it has no bearing on access.
	d.mu.Lock()
	c.copied = true
	d.mu.Unlock()

	for i := range c.rows {
		d.mu.Lock()
		if c.stoppedLocked() {
			// Cancelled: the rows not begun never started (D-CAN-2). An
			// expired or abandoned call's rows already have their answer.
			c.notAttemptedLocked()
			d.mu.Unlock()
			return
		}
		if vals[i] == nil || c.results[i] != drivers.Pending {
			d.mu.Unlock()
			continue
		}
		c.started[i] = true
		d.mu.Unlock()

		st, _ := d.put(c.ctx, c.objects[i], vals[i])

		d.mu.Lock()
		c.reportLocked(i, st)
		if st == drivers.Fault {
			// The store is in trouble: stop. The rows after this one were
			// never begun (the driver stopped after an earlier fault).
			c.notAttemptedLocked()
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// fetch reads one object per row, in row order, each into a private
// buffer, and writes the slot only once the whole object of exactly the
// slot's size is in hand.
func (c *call) fetch() {
	d := c.d
	for i := range c.rows {
		d.mu.Lock()
		if c.stoppedLocked() {
			c.notAttemptedLocked()
			d.mu.Unlock()
			return
		}
		c.started[i] = true
		d.mu.Unlock()

		val, st := c.get(i)
		if st == drivers.OK {
			st = c.writeRow(i, val)
		}
		d.mu.Lock()
		c.reportLocked(i, st)
		if st == drivers.Fault {
			c.notAttemptedLocked()
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// get reads row i's object: MISS when the store does not hold it
// (NotFound: D-MISS-HONEST), FAULT for any other error or an object whose
// size is not the slot's (D-STATUS); no slot is touched here.
func (c *call) get(i int) ([]byte, drivers.Status) {
	d := c.d
	ctx, cancel := context.WithTimeout(c.ctx, d.cfg.OpTimeout)
	defer cancel()
	r, err := d.bucket.NewReader(ctx, c.objects[i], nil)
	if err != nil {
		if d.absent(err) {
			return nil, drivers.Miss
		}
		return nil, drivers.Fault
	}
	defer r.Close()
	size := c.regions[i].SlotBytes
	if r.Size() != int64(size) {
		return nil, drivers.Fault
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, drivers.Fault
	}
	// The object must end here: a longer one than its size said is a
	// short read of another object, not this slot's.
	var one [1]byte
	if _, err := io.ReadFull(r, one[:]); !errors.Is(err, io.EOF) {
		return nil, drivers.Fault
	}
	return buf, drivers.OK
}

// writeRow writes one FETCH slot and answers OK (FAULT if the memory
// refused). A cancellation seen before the write leaves the slot untouched
// and the row NOT_ATTEMPTED (a read changes no object); a row that already
// has its answer (the call expired or was abandoned) is not written.
func (c *call) writeRow(i int, val []byte) drivers.Status {
	d := c.d
	d.mu.Lock()
	if c.results[i] != drivers.Pending {
		d.mu.Unlock()
		return c.results[i]
	}
	if c.stoppedLocked() {
		d.mu.Unlock()
		return drivers.NotAttempted
	}
	d.mu.Unlock()
	reg := c.regions[i]
	if err := reg.Mem.Write(drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(c.rows[i].Slot), val); err != nil {
		return drivers.Fault // slot contents undefined
	}
	return drivers.OK
}
