package redisdriver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/drivers"
)

// Causes of a call's context cancellation.
var (
	errCancelled = errors.New("redisdriver: call cancelled")
	errShutdown  = errors.New("redisdriver: driver shutting down")
)

// call is one submitted call. Its goroutine (run) is the only code that
// touches the rows' memory.
type call struct {
	d        *Driver
	id       drivers.CallID
	dir      drivers.Direction
	rows     []drivers.Row
	regions  []drivers.Region // regions[i] is rows[i]'s region, fixed at Submit
	onChange func()
	ctx      context.Context
	cancel   context.CancelCauseFunc
	done     chan struct{} // closed when run returns

	// wmu is held across "check, write one FETCH slot, report its row", and
	// by abandon while it reports the rows of a call Shutdown gave up on. So
	// a slot is never written after its row was reported.
	wmu sync.Mutex

	// Guarded by d.mu.
	results  []drivers.Status
	access   drivers.Access
	finished bool // run has set its final state
	// abandoned: Shutdown stopped waiting; the goroutine sends and writes
	// nothing more and never signals.
	abandoned bool
	// noProof: the goroutine panicked; its access stays UNPROVABLE for good.
	noProof bool
	// settled: no callback of this call will run any more (the last one
	// returned, or none will come).
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

// Cancel implements drivers.Call: it cancels the call's context and returns
// (D-CAN-1). The goroutine decides which rows become NOT_ATTEMPTED; access
// is never touched here (D-CAN-2).
func (c *call) Cancel() drivers.CancelResult {
	c.d.mu.Lock()
	done := !slices.Contains(c.results, drivers.Pending)
	c.d.mu.Unlock()
	switch {
	case done:
		return drivers.CancelAlreadyDone
	case !c.d.caps.CanCancel:
		return drivers.CancelUnsupported
	}
	c.cancel(errCancelled)
	return drivers.CancelRequested
}

// reportLocked sets row i's result unless it is already final (D-CB-3).
func (c *call) reportLocked(i int, st drivers.Status) {
	if c.results[i] == drivers.Pending {
		c.results[i] = st
	}
}

// reportPendingLocked gives every row still without result st.
func (c *call) reportPendingLocked(st drivers.Status) {
	for i := range c.results {
		c.reportLocked(i, st)
	}
}

func (c *call) run() {
	defer close(c.done)
	ctx := c.ctx
	if t := c.d.cfg.Timeout; t > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, t)
		defer stop()
	}
	c.finish(c.work(ctx))
}

// work runs the transfer; a panic anywhere in it (the client, a Memory
// implementation, our own code) is caught and reported to finish.
func (c *call) work(ctx context.Context) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	if c.dir == drivers.Publish {
		c.publish(ctx)
	} else {
		c.fetch(ctx)
	}
	return false
}

// finish sets the call's final state and signals it.
//
// Access: run's goroutine makes every touch of the call's memory (rueidis
// and the server only ever hold private copies), and it has made its last
// one here, so nothing can touch the rows again: ENDED is proven (also
// UNPROVABLE → ENDED for a call Shutdown abandoned, on this new evidence).
// After a panic we do not claim proof: the goroutine left a path we did not
// plan, so access stays UNPROVABLE (or stays ENDED if it had already ended
// before the panic, as a PUBLISH's does after its copy).
func (c *call) finish(panicked bool) {
	d := c.d
	d.mu.Lock()
	c.reportPendingLocked(drivers.Fault) // a panic left rows without result
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
	} else {
		c.settled = true
		d.forgetLocked(c)
	}
	d.mu.Unlock()
	if !fire {
		return
	}
	defer d.cbs.Done()
	c.onChange() // D-CB-1: state set above; D-CB-4: no lock held
	d.mu.Lock()
	c.settled = true
	d.forgetLocked(c)
	d.mu.Unlock()
}

func (d *Driver) forgetLocked(c *call) {
	if c.settled && c.access == drivers.AccessEnded {
		delete(d.calls, c.id)
	}
}

// abandon is Shutdown giving up on a call whose goroutine is still running:
// rows without result become FAULT (a FETCH slot is undefined, a PUBLISH may
// or may not have reached the store) and access becomes UNPROVABLE. It takes
// wmu first, so it never reports a FETCH row while its slot is being
// written; a slot write is a memory copy and never waits on the network.
func (c *call) abandon() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.finished {
		return
	}
	c.abandoned = true
	c.settled = true
	c.reportPendingLocked(drivers.Fault)
	if c.access == drivers.AccessPending {
		c.access = drivers.AccessUnprovable
	}
}

// stoppedLocked reports whether the call must not start anything new: it
// was cancelled (Cancel or Shutdown), timed out (ctx is the call's context
// with the Timeout) or abandoned.
func (c *call) stoppedLocked(ctx context.Context) bool { return c.abandoned || ctx.Err() != nil }

// publish copies every slot, then sends one SET NX per row in one pipeline.
func (c *call) publish(ctx context.Context) {
	d := c.d
	vals := make([]string, len(c.rows))
	read := make([]bool, len(c.rows))
	for i, row := range c.rows {
		if ctx.Err() != nil {
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
		// buf is private and never written again, so the client may hold it
		// without a copy.
		vals[i], read[i] = rueidis.BinaryString(buf), true
	}

	// The memory access of a PUBLISH ends here. The SET values are the
	// private copies above; neither rueidis nor the server ever sees the
	// registered memory, and this goroutine will not touch it again. So
	// ENDED is proven now, before the store answers, and the owner may reuse
	// the slots while the SETs are in flight. (UNPROVABLE → ENDED is legal
	// too, for a call Shutdown abandoned while it was copying.)
	d.mu.Lock()
	if !c.noProof {
		c.access = drivers.AccessEnded
	}
	if c.stoppedLocked(ctx) {
		// Nothing was handed to the client: rows never started (D-CAN-2).
		// An abandoned call's rows already are FAULT.
		c.reportPendingLocked(drivers.NotAttempted)
		d.mu.Unlock()
		return
	}
	var idx []int
	for i := range c.rows {
		if read[i] && c.results[i] == drivers.Pending {
			idx = append(idx, i)
		}
	}
	d.mu.Unlock()
	if len(idx) == 0 {
		return
	}

	// From here on the SETs are the client's: a cancellation may still see
	// them applied by the server, so no row is NOT_ATTEMPTED any more.
	resps := d.doMulti(ctx, func() rueidis.Commands {
		cmds := make(rueidis.Commands, len(idx))
		for j, i := range idx {
			cmds[j] = d.setCmd(d.cfg.Prefix+c.rows[i].Key, vals[i])
		}
		return cmds
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(resps) != len(idx) {
		c.reportPendingLocked(drivers.Fault)
		return
	}
	for j, i := range idx {
		c.reportLocked(i, publishStatus(resps[j]))
	}
}

// publishStatus maps one SET reply to a row result (D-STATUS, D-SUB-4).
func publishStatus(r rueidis.RedisResult) drivers.Status {
	err := r.Error()
	switch {
	case err == nil:
		return drivers.OK // written now
	case rueidis.IsRedisNil(err):
		// NX declined because the key is there: the store holds an object
		// under the key, the first writer's, which is kept (D-SUB-4). D-STATUS
		// lets that be OK ("already there") or MISS ("declined"); we answer
		// OK, which spares the backend a second lookup.
		return drivers.OK
	}
	if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "OOM") {
		// maxmemory reached under noeviction: a definite refusal, nothing
		// stored — the store declined it.
		return drivers.Miss
	}
	// Transport error, timeout, cancellation after the SET was handed to the
	// client: the server may or may not have applied it. FAULT is the only
	// honest answer (never OK, never NOT_ATTEMPTED).
	return drivers.Fault
}

func (d *Driver) setCmd(key, val string) rueidis.Completed {
	s := d.client.B().Set().Key(key).Value(val)
	if d.cfg.TTL > 0 {
		return s.Nx().Px(d.cfg.TTL).Build()
	}
	return s.Nx().Build()
}

// fetch sends one GET per row in one pipeline, then writes each exact-size
// value into its slot, reporting each row after its write.
func (c *call) fetch(ctx context.Context) {
	d := c.d
	d.mu.Lock()
	if c.stoppedLocked(ctx) {
		c.reportPendingLocked(drivers.NotAttempted)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	resps := d.doMulti(ctx, func() rueidis.Commands {
		cmds := make(rueidis.Commands, len(c.rows))
		for i, row := range c.rows {
			cmds[i] = d.client.B().Get().Key(d.cfg.Prefix + row.Key).Build()
		}
		return cmds
	})
	if len(resps) != len(c.rows) {
		// No slot was touched and none will be: FAULT, access still provable.
		d.mu.Lock()
		c.reportPendingLocked(drivers.Fault)
		d.mu.Unlock()
		return
	}
	for i, r := range resps {
		val, err := r.AsBytes()
		var st drivers.Status
		switch {
		case err == nil && len(val) == c.regions[i].SlotBytes:
			c.writeRow(i, val)
			continue
		case err == nil:
			st = drivers.Fault // wrong size: slot untouched, FAULT (D-STATUS)
		case rueidis.IsRedisNil(err):
			st = drivers.Miss // absent: slot untouched (D-MISS-HONEST)
		case c.ctx.Err() != nil:
			// Cancelled (Cancel or Shutdown): the slot is untouched and a GET
			// changes nothing in the store, so the row never started.
			st = drivers.NotAttempted
		default:
			st = drivers.Fault // transport error, timeout: slot untouched
		}
		d.mu.Lock()
		c.reportLocked(i, st)
		d.mu.Unlock()
	}
}

// writeRow writes one FETCH slot and then reports the row OK (or FAULT if
// the memory refused), all under wmu: abandon cannot report the row in
// between, and a cancellation seen before the write leaves the slot
// untouched and the row NOT_ATTEMPTED.
func (c *call) writeRow(i int, val []byte) {
	d := c.d
	c.wmu.Lock()
	defer c.wmu.Unlock()
	d.mu.Lock()
	if c.results[i] != drivers.Pending || c.abandoned {
		d.mu.Unlock()
		return
	}
	if c.ctx.Err() != nil {
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
	c.results[i] = st
	d.mu.Unlock()
}
