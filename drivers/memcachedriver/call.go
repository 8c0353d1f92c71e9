package memcachedriver

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

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
	items    []string         // items[i] is rows[i]'s memcached key
	onChange func()
	done     chan struct{} // closed when run returns
	timer    *time.Timer   // the deadline (Config.Timeout), nil without one

	// Guarded by d.mu.
	results []drivers.Status
	access  drivers.Access
	// started[i]: row i's command was handed to the client; until then the
	// row can still become NOT_ATTEMPTED.
	started   []bool
	cancelled bool // Cancel or Shutdown asked the worker to stop
	expired   bool // the deadline passed while the worker ran
	finished  bool // the worker has set its final state
	// abandoned: Shutdown stopped waiting; the worker sends and writes
	// nothing more and never signals.
	abandoned bool
	// noProof: the worker panicked; its access stays UNPROVABLE for good.
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
// stops waiting for the worker: FAULT when its command was handed to the
// client (it may have run), NOT_ATTEMPTED when it never was (the worker
// checks under d.mu before it starts a row, and starts nothing once the call
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

// stoppedLocked reports whether the worker must not start anything new.
func (c *call) stoppedLocked() bool { return c.cancelled || c.expired || c.abandoned }

func (c *call) run() {
	defer close(c.done)
	c.finish(c.work())
}

// work runs the transfer; a panic anywhere in it (the client, a Memory
// implementation, our own code) is caught and reported to finish.
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
// Access: the worker makes every touch of the call's memory (the client and
// the server only ever hold private copies), and it has made its last one
// here, so nothing can touch the rows again: ENDED is proven (also
// UNPROVABLE → ENDED for a call that expired or that Shutdown abandoned, on
// this new evidence). After a panic we do not claim proof: the worker left a
// path we did not plan, so access stays UNPROVABLE (or stays ENDED if it had
// already ended before the panic, as a PUBLISH's does after its copy).
func (c *call) finish(panicked bool) {
	if c.timer != nil {
		c.timer.Stop()
	}
	d := c.d
	d.mu.Lock()
	for i := range c.results {
		c.reportLocked(i, drivers.Fault) // a panic left rows without result
	}
	if panicked {
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
	closed := d.clientClosed
	d.mu.Unlock()
	if closed {
		// Shutdown closed the idle connections before this worker gave its
		// own back to the client: close that one too.
		d.client.Close()
	}
	if fire {
		c.callback()
	}
}

// expire is the call's deadline (Config.Timeout): the driver stops waiting
// for the worker. Rows without result get their answer (giveUpLocked) and
// an access that is still PENDING becomes UNPROVABLE — the worker may be
// inside a slot write, and a deadline is never evidence (D-ACCESS). The
// worker starts nothing more; when it returns, finish proves ENDED.
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
		c.access = drivers.AccessUnprovable
		changed = true
	}
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

// settleLocked marks c settled once its worker is done and no callback of it
// is running, and forgets it once it is also ENDED.
func (d *Driver) settleLocked(c *call) {
	if !c.settled && c.finished && c.cbRunning == 0 {
		c.settled = true
	}
	if c.settled && c.finished && c.access == drivers.AccessEnded {
		delete(d.calls, c.id)
	}
}

// abandon is Shutdown giving up on a call whose worker is still running:
// rows without result get their answer (giveUpLocked) and an access still
// PENDING becomes UNPROVABLE.
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
		c.access = drivers.AccessUnprovable
	}
}

// publish copies every slot, then sends one add per row, in row order.
func (c *call) publish() {
	d := c.d
	vals := make([][]byte, len(c.rows))
	for i, row := range c.rows {
		d.mu.Lock()
		stop := c.stoppedLocked()
		d.mu.Unlock()
		if stop {
			break // rows not copied are not sent: NOT_ATTEMPTED below
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

	// The memory access of a PUBLISH ends here. The values are the private
	// copies above; neither the client nor the server ever sees the
	// registered memory, and this worker will not touch it again. So ENDED
	// is proven now, before the store answers, and the owner may reuse the
	// slots while the adds are in flight. (UNPROVABLE → ENDED is legal too,
	// for a call that expired or was abandoned while it was copying.)
	d.mu.Lock()
	if !c.noProof {
		c.access = drivers.AccessEnded
	}
	d.mu.Unlock()

	var exp int32
	if d.cfg.TTL > 0 {
		exp = int32(d.cfg.TTL / time.Second)
	}
	for i := range c.rows {
		d.mu.Lock()
		if c.stoppedLocked() {
			// Cancelled: the rows not sent never started (D-CAN-2). An
			// expired or abandoned call's rows already have their answer.
			for j := range c.results {
				if !c.started[j] {
					c.reportLocked(j, drivers.NotAttempted)
				}
			}
			d.mu.Unlock()
			return
		}
		if vals[i] == nil || c.results[i] != drivers.Pending {
			d.mu.Unlock()
			continue
		}
		c.started[i] = true
		d.mu.Unlock()

		st := publishStatus(d.client.Add(&memcache.Item{Key: c.items[i], Value: vals[i], Expiration: exp}))

		d.mu.Lock()
		c.reportLocked(i, st)
		if st == drivers.Fault {
			// The connection or the server is in trouble: stop. The rows
			// after this one were never sent (the driver stopped after an
			// earlier fault).
			for j := range c.results {
				if !c.started[j] {
					c.reportLocked(j, drivers.NotAttempted)
				}
			}
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// publishStatus maps the answer to one add to a row result (D-STATUS,
// D-SUB-4).
func publishStatus(err error) drivers.Status {
	switch {
	case err == nil:
		return drivers.OK // STORED: written now
	case errors.Is(err, memcache.ErrNotStored):
		// add declined because the key is there: the store holds an object
		// under the key, the first writer's, which is kept (D-SUB-4). The
		// PUBLISH table lets that be OK ("already there") or MISS
		// ("declined"); we answer OK, which spares the backend a second
		// lookup.
		return drivers.OK
	case noRoom(err):
		// The server refused to store it (out of memory, or larger than its
		// item limit): a definite refusal, nothing stored — declined.
		return drivers.Miss
	}
	// Transport error, timeout, an unexpected answer: the server may or may
	// not have stored it. FAULT is the only honest answer (never OK, never
	// NOT_ATTEMPTED).
	return drivers.Fault
}

// noRoom reports a SERVER_ERROR that means "not stored, no room": the
// client reports those as an unexpected response line.
func noRoom(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SERVER_ERROR out of memory") || strings.Contains(s, "SERVER_ERROR object too large")
}

// fetch sends one multi-get of the batch's keys, then writes each exact-size
// value into its slot, reporting each row after its write.
func (c *call) fetch() {
	d := c.d
	d.mu.Lock()
	if c.stoppedLocked() {
		for i := range c.results {
			c.reportLocked(i, drivers.NotAttempted)
		}
		d.mu.Unlock()
		return
	}
	for i := range c.started {
		c.started[i] = true
	}
	d.mu.Unlock()

	got, err := d.client.GetMulti(c.items)
	if err == nil {
		for k := range got {
			if !slices.Contains(c.items, k) {
				err = errors.New("memcachedriver: the answer names a key that was not asked")
				break
			}
		}
	}
	if err != nil {
		// No slot was touched and none will be: FAULT, access provable.
		d.mu.Lock()
		for i := range c.results {
			c.reportLocked(i, drivers.Fault)
		}
		d.mu.Unlock()
		return
	}
	for i := range c.rows {
		it, ok := got[c.items[i]]
		var st drivers.Status
		switch {
		case !ok:
			st = drivers.Miss // absent: slot untouched (D-MISS-HONEST)
		case len(it.Value) != c.regions[i].SlotBytes:
			st = drivers.Fault // wrong size: slot untouched (D-STATUS)
		default:
			c.writeRow(i, it.Value)
			continue
		}
		d.mu.Lock()
		c.reportLocked(i, st)
		d.mu.Unlock()
	}
}

// writeRow writes one FETCH slot and then reports the row OK (or FAULT if
// the memory refused). A cancellation seen before the write leaves the slot
// untouched and the row NOT_ATTEMPTED; a row that already has its answer
// (the call expired or was abandoned) is not written.
func (c *call) writeRow(i int, val []byte) {
	d := c.d
	d.mu.Lock()
	if c.results[i] != drivers.Pending {
		d.mu.Unlock()
		return
	}
	if c.stoppedLocked() {
		c.results[i] = drivers.NotAttempted
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	reg := c.regions[i]
	st := drivers.OK
	if err := reg.Mem.Write(drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(c.rows[i].Slot), val); err != nil {
		st = drivers.Fault // slot contents undefined
	}
	d.mu.Lock()
	c.reportLocked(i, st)
	d.mu.Unlock()
}
