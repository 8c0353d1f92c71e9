package broken

import (
	"context"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
)

// The planted bugs of registrations, callbacks, Cancel, Drain and Shutdown:
// CloseByAddress, EarlySignal, SignalAfterShutdown, BlockingCancel (the table
// of every bug is in plants.go).

// closeByAddress is CloseByAddress (D-REG-3): closing a stale handle closes
// whatever live registration now covers the memory the handle once named.
func (w *driver) closeByAddress() func(drivers.Handle) error {
	closed := map[drivers.Handle]drivers.Region{}
	closeLive := func(h drivers.Handle) error {
		err := w.Driver.Unregister(h)
		if err == nil {
			w.mu.Lock()
			closed[h] = w.regions[h]
			w.mu.Unlock()
		}
		return err
	}
	return func(h drivers.Handle) error {
		if w.Live(h) {
			return closeLive(h)
		}
		w.mu.Lock()
		var covering []drivers.Handle
		if r, ok := closed[h]; ok {
			for x, o := range w.regions {
				if o.Overlaps(r) {
					covering = append(covering, x)
				}
			}
		}
		w.mu.Unlock()
		slices.Sort(covering) // by handle, as the reference driver keeps its table
		for _, x := range covering {
			if w.Live(x) {
				return closeLive(x)
			}
		}
		return w.Driver.Unregister(h) // a stale handle: nothing to close
	}
}

// earlySignal is EarlySignal (D-CB-1): once a call's access went from
// PENDING to ENDED, its callbacks still see PENDING; a step after the first
// of them another callback runs, which finds nothing new, and only then is
// ENDED shown — with no callback after it. Until then the call is pending
// for Drain and its regions are busy, as for a call whose access is not
// ENDED. Shutdown shows every hidden ENDED and tells it, so nothing is left
// pending.
func (w *driver) earlySignal() {
	var hidden []*call
	hides := func(c *call, a drivers.Access) bool { // w.mu held
		return a == drivers.AccessEnded && c.user != nil && c.bug.early < 2 && c.bug.shown == drivers.AccessPending && !w.shutting
	}
	w.access = func(c *call, a drivers.Access) drivers.Access {
		if hides(c, a) {
			return c.bug.shown
		}
		c.bug.shown = a
		return a
	}
	w.unregister = func(h drivers.Handle) error {
		w.mu.Lock()
		var naming []*call // calls that would hide ENDED and name h
		for _, c := range w.calls {
			if hides(c, drivers.AccessEnded) && slices.ContainsFunc(c.b.Rows, func(r drivers.Row) bool { return r.Handle == h }) {
				naming = append(naming, c)
			}
		}
		w.mu.Unlock()
		if slices.ContainsFunc(naming, func(c *call) bool { return c.Call.Access() == drivers.AccessEnded }) {
			return fmt.Errorf("%w: a call whose access is not ENDED names handle %d (D-REG-6)", drivers.ErrBusy, h)
		}
		return w.Driver.Unregister(h)
	}
	w.notify = func(c *call, user func()) {
		user()
		a := c.Call.Access()
		w.mu.Lock()
		if c.bug.early != 0 || !hides(c, a) {
			w.mu.Unlock()
			return
		}
		c.bug.early = 1
		hidden = append(hidden, c)
		w.mu.Unlock()
		w.rt.After(w.step, w.label+" signal before end", func() {
			if w.isShutting() {
				return
			}
			user() // the signal, before the state changed
			w.mu.Lock()
			c.bug.early = 2 // the change, never signalled
			w.mu.Unlock()
		})
	}
	w.drain = func(st drivers.DrainStatus) drivers.DrainStatus {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, c := range hidden { // told by the reference driver, not yet by the broken one
			if c.bug.early == 1 && !slices.Contains(st.Pending, c.ID()) {
				st.Done, st.Pending = false, append(st.Pending, c.ID())
			}
		}
		slices.Sort(st.Pending)
		return st
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		var tell []*call
		for _, c := range hidden {
			if c.bug.early == 1 {
				c.bug.early = 2
				tell = append(tell, c)
			}
		}
		hidden = nil
		w.mu.Unlock()
		for _, c := range tell {
			c.user()
		}
		return w.Driver.Shutdown(ctx)
	}
}

// signalAfterShutdown is SignalAfterShutdown (D-CB-5): of the callbacks
// Shutdown owes, the last is held back (when none is owed, the callback of
// the call submitted last) and run through the runtime after Shutdown
// returned.
func (w *driver) signalAfterShutdown() {
	var held []func()
	holding := false
	w.notify = func(c *call, user func()) {
		w.mu.Lock()
		if holding {
			held = append(held, user)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		user()
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		holding = true
		w.mu.Unlock()
		labels := w.Driver.Shutdown(ctx)
		w.mu.Lock()
		owed, last := held, w.last
		held, holding = nil, false
		w.mu.Unlock()
		var late func()
		if n := len(owed); n > 0 {
			owed, late = owed[:n-1], owed[n-1]
		} else if last != nil {
			late = last.user
		}
		for _, f := range owed {
			f()
		}
		if late != nil {
			// The label of the reference driver's callback events.
			w.rt.After(0, "memdriver/"+w.Name()+" onChange", late)
		}
		return labels
	}
}

// blockingCancel is BlockingCancel (D-CAN-1): Cancel does the remaining
// work of every row without a result synchronously — reads the object and
// writes the slot (FETCH) or reads the slot and stores it (PUBLISH) — and
// shows access ENDED before it returns, instead of requesting a cancel; one
// callback tells it. The reference call is cancelled behind it: what its
// transfer still does touches no memory, and its callbacks and pending
// state are no longer the caller's.
func (w *driver) blockingCancel() {
	var untold []*call // completed by Cancel, the callback not yet run
	tell := func(c *call) {
		w.mu.Lock()
		i := slices.Index(untold, c)
		if i >= 0 {
			untold = slices.Delete(untold, i, i+1)
		}
		w.mu.Unlock()
		if i >= 0 && c.user != nil {
			c.user()
		}
	}
	forced := func(id drivers.CallID) bool { // w.mu held
		c := w.calls[id]
		return c != nil && c.bug.forced != nil
	}
	w.cancel = func(c *call) drivers.CancelResult {
		w.mu.Lock()
		done := c.bug.forced != nil
		w.mu.Unlock()
		if done {
			return drivers.CancelAlreadyDone
		}
		res := c.Call.Results()
		if !w.Capabilities().CanCancel || !slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
			return c.Call.Cancel()
		}
		for i, st := range res {
			if !st.Final() {
				res[i] = w.transferNow(c, i)
			}
		}
		w.mu.Lock()
		c.bug.forced = res
		untold = append(untold, c)
		w.mu.Unlock()
		c.Call.Cancel()
		w.rt.After(0, w.label+" onChange", func() {
			if !w.isShutting() {
				tell(c)
			}
		})
		return drivers.CancelRequested
	}
	w.results = func(c *call, res []drivers.Status) []drivers.Status {
		if c.bug.forced != nil {
			return slices.Clone(c.bug.forced)
		}
		return res
	}
	w.access = func(c *call, a drivers.Access) drivers.Access {
		if c.bug.forced != nil {
			return drivers.AccessEnded
		}
		return a
	}
	w.notify = func(c *call, user func()) {
		w.mu.Lock()
		done := c.bug.forced != nil
		w.mu.Unlock()
		if !done {
			user()
		}
	}
	w.drain = func(st drivers.DrainStatus) drivers.DrainStatus {
		w.mu.Lock()
		defer w.mu.Unlock()
		pending := slices.DeleteFunc(st.Pending, forced)
		for _, c := range untold {
			pending = append(pending, c.ID())
		}
		slices.Sort(pending)
		return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		cs := slices.Clone(untold)
		w.mu.Unlock()
		for _, c := range cs {
			tell(c)
		}
		return w.Driver.Shutdown(ctx)
	}
	gone := func(by drivers.Toucher) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return forced(by.Call)
	}
	w.read = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if gone(by) {
			return nil
		}
		return m.Memory.Read(by, off, p)
	}
	w.write = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if gone(by) {
			return nil
		}
		return m.Memory.Write(by, off, p)
	}
}

// transferNow moves row i of c at once, through the caller's memory, and
// returns its result.
func (w *driver) transferNow(c *call, i int) drivers.Status {
	row := c.b.Rows[i]
	reg := w.region(row.Handle)
	by, off := drivers.Toucher{Call: c.ID(), Row: i}, reg.SlotOffset(row.Slot)
	if c.b.Dir == drivers.Publish {
		buf := make([]byte, reg.SlotBytes)
		if reg.Mem.Read(by, off, buf) != nil {
			return drivers.Fault
		}
		w.store.Put(row.Key, buf)
		return drivers.OK
	}
	obj, ok := w.store.Get(row.Key)
	switch {
	case !ok && w.Capabilities().AbsentIsMiss:
		return drivers.Miss
	case !ok || len(obj) != reg.SlotBytes, reg.Mem.Write(by, off, obj) != nil:
		return drivers.Fault
	}
	return drivers.OK
}
