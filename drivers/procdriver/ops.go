package procdriver

// The driver's operations, each a request to the child. Moved out of driver.go, unchanged.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
)

// Register implements drivers.Driver: the region's slot area gets a shared
// mapping (filled with Canary), and the process is asked to register it.
func (d *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	hs, err := d.register([]drivers.Region{r}, "register")
	if err != nil {
		return 0, err
	}
	return hs[0], nil
}

// RegisterTogether implements drivers.TogetherRegisterer.
func (d *TogetherDriver) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	return d.register(regions, "register_together")
}

func (d *Driver) register(rs []drivers.Region, op string) ([]drivers.Handle, error) {
	d.mu.Lock()
	if d.dead || d.shut {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %w: %w", drivers.ErrRegistrationRefused, drivers.ErrClosed, d.goneErr())
	}
	wins := make([]*window, len(rs))
	wire := make([]wireRegion, len(rs))
	unmap := func() {
		for _, w := range wins {
			if w != nil {
				w.unmap()
			}
		}
	}
	for i, r := range rs {
		wr := wireRegion{Label: r.Label, SlotBytes: r.SlotBytes, Slots: r.Slots}
		if r.Mem != nil {
			base, _ := r.Mem.Extent()
			wr.Base, wr.Length = uint64(base), r.Mem.Len()
		}
		if r.Mem != nil && r.SlotBytes > 0 && r.Slots > 0 {
			if m, ok := r.Mem.(SharedMemory); ok && r.SlotBytes <= r.Mem.Len()/r.Slots {
				if path, off, ok := m.SharedFile(); ok {
					// The caller's memory is the mapping: nothing to make, nothing to copy.
					wins[i] = sharedWindow(r, m, path, off)
					wr.Path, wr.Offset, wr.Size = path, off, r.Slots*r.SlotBytes
					wire[i] = wr
					continue
				}
			}
			if r.SlotBytes > d.cfg.MaxRegionBytes/r.Slots {
				d.mu.Unlock()
				unmap()
				return nil, fmt.Errorf("%w: region %q: %d slots of %d bytes exceed the %d bytes a driver process may map (Config.MaxRegionBytes)",
					drivers.ErrRegistrationRefused, r.Label, r.Slots, r.SlotBytes, d.cfg.MaxRegionBytes)
			}
			d.winSeq++
			w, err := newWindow(d.dir, d.winSeq, r)
			if err != nil {
				d.mu.Unlock()
				unmap()
				return nil, fmt.Errorf("%w: region %q: the shared mapping could not be made: %w", drivers.ErrRegistrationRefused, r.Label, err)
			}
			d.aud.init(w)
			wins[i] = w
			wr.Path, wr.Size = w.path, len(w.buf)
		}
		wire[i] = wr
	}
	d.mu.Unlock()
	req := request{Op: op}
	if op == "register" {
		req.Region = &wire[0]
	} else {
		req.Regions = wire
	}
	rep, err := d.call(req, d.cfg.ReplyTimeout, nil)
	if err == nil && *rep.OK && op == "register" && rep.Handle == nil {
		d.fail(Garbage, "the answer to register", `it accepted the region without a "handle"`)
		err = d.goneErr()
	}
	if err != nil {
		unmap()
		// The process is gone, and its registrations with it.
		return nil, fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	if !*rep.OK {
		unmap()
		return nil, toError(op, rep.Error)
	}
	var hs []drivers.Handle
	if op == "register" {
		hs = []drivers.Handle{drivers.Handle(*rep.Handle)}
	} else {
		for _, h := range rep.Handles {
			hs = append(hs, drivers.Handle(h))
		}
	}
	d.mu.Lock()
	for i, w := range wins {
		if w == nil {
			continue
		}
		if i < len(hs) {
			w.handle = hs[i]
			if old := d.windows[hs[i]]; old != nil {
				old.closed = true // the process reused a live handle: the old window is orphaned
			}
			d.windows[hs[i]] = w
		}
		// A region without a handle (fewer handles than regions) stays
		// mapped and audited: the process may have registered it anyway.
		d.retireSharedLocked(w)
		d.allWins = append(d.allWins, w)
	}
	d.mu.Unlock()
	return hs, nil
}

// Unregister implements drivers.Driver. Once the process closed it, the
// region's mapping is audited one last time as live, then filled with
// Canary and audited until Shutdown: a later write is S-NO-LATE-ACCESS.
func (d *Driver) Unregister(h drivers.Handle) error {
	hv := uint64(h)
	rep, err := d.call(request{Op: "unregister", Handle: &hv}, d.cfg.ReplyTimeout, nil)
	if err != nil {
		d.mu.Lock()
		dead := d.dead
		d.mu.Unlock()
		if dead { // the process is gone, and its registration with it
			d.closeWindows(map[drivers.Handle]bool{h: true})
			return nil
		}
		return fmt.Errorf("%w: %w", drivers.ErrUnregisterFailed, err)
	}
	if !*rep.OK {
		return toError("unregister", rep.Error)
	}
	d.closeWindows(map[drivers.Handle]bool{h: true})
	return nil
}

// UnregisterTogether implements drivers.TogetherRegisterer.
func (d *TogetherDriver) UnregisterTogether(hs []drivers.Handle) error {
	wire := make([]uint64, len(hs))
	closed := map[drivers.Handle]bool{}
	for i, h := range hs {
		wire[i] = uint64(h)
		closed[h] = true
	}
	rep, err := d.call(request{Op: "unregister_together", Handles: wire}, d.cfg.ReplyTimeout, nil)
	if err != nil {
		d.mu.Lock()
		dead := d.dead
		d.mu.Unlock()
		if dead {
			d.closeWindows(closed)
			return nil
		}
		return &drivers.InDoubtError{Op: "unregister", Labels: d.labelsOf(hs), Err: fmt.Errorf("%w: %w", drivers.ErrUnregisterFailed, err)}
	}
	if *rep.OK {
		d.closeWindows(closed)
		return nil
	}
	e := toError("unregister_together", rep.Error)
	var id *drivers.InDoubtError
	if errors.As(e, &id) {
		// Exactly the regions it names stayed live (D-TOG-3).
		still := map[string]bool{}
		for _, l := range id.Labels {
			still[l] = true
		}
		d.mu.Lock()
		for _, h := range hs {
			if w := d.windows[h]; w != nil && still[w.label] {
				delete(closed, h)
			}
		}
		d.mu.Unlock()
		d.closeWindows(closed)
	}
	return e
}

func (d *Driver) labelsOf(hs []drivers.Handle) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, h := range hs {
		if w := d.windows[h]; w != nil {
			out = append(out, w.label)
		}
	}
	return out
}

// retireSharedLocked: memory registered again (after its unregister, or
// twice by a driver that should have refused it) is audited through its
// newest window only, since an audit takes the changes it finds; the
// windows share who last named each slot, so a late write by a call of the
// old registration is still that call's.
func (d *Driver) retireSharedLocked(w *window) {
	if w.sh == nil {
		return
	}
	d.allWins = slices.DeleteFunc(d.allWins, func(o *window) bool {
		if o.sh != w.sh || len(o.owner) != len(w.owner) {
			return false
		}
		w.owner = o.owner
		return true
	})
}

// closeWindows audits, canaries and retires the live windows of hs.
func (d *Driver) closeWindows(hs map[drivers.Handle]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for h := range hs {
		w := d.windows[h]
		if w == nil {
			continue
		}
		delete(d.windows, h)
		d.aud.syncAll(w)
		w.closed = true
		for i := 0; i < w.slots; i++ {
			d.aud.canaryFill(w, i)
		}
	}
}

// Live reports whether h is live in the process's own table.
func (d *Driver) Live(h drivers.Handle) bool {
	d.mu.Lock()
	gone := d.dead || d.shut || d.expectEOF
	_, mine := d.windows[h]
	d.mu.Unlock()
	if gone {
		return false
	}
	if d.ops["live"] {
		hv := uint64(h)
		if rep, err := d.call(request{Op: "live", Handle: &hv}, d.cfg.ReplyTimeout, nil); err == nil && *rep.OK && rep.Live != nil {
			return *rep.Live
		}
	}
	return mine
}

// Contains implements drivers.Driver. The answer is the process's, as it
// gave it (the contract monitor judges its length).
func (d *Driver) Contains(ctx context.Context, keys []string) ([]bool, error) {
	rep, err := d.call(request{Op: "contains", Keys: keys}, d.cfg.ReplyTimeout, ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, err)
	}
	if !*rep.OK {
		return nil, toError("contains", rep.Error)
	}
	if rep.Found == nil {
		return []bool{}, nil
	}
	return rep.Found, nil
}

// Submit implements drivers.Driver. The process validates and accepts or
// refuses the batch (the parent checks nothing, so the process's own
// validation is what is certified); once it accepted, the parent copies
// the PUBLISH rows' slots into the shared mapping and tells it to start.
func (d *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if onChange == nil {
		onChange = func() {}
	}
	d.mu.Lock()
	if d.dead || d.shut {
		d.mu.Unlock()
		return nil, fmt.Errorf("procdriver: submit: %w: %w", drivers.ErrClosed, d.goneErr())
	}
	d.nextCall++
	c := &call{d: d, id: d.nextCall, dir: b.Dir, rows: slices.Clone(b.Rows), onChange: onChange,
		results: make([]drivers.Status, len(b.Rows)), wrote: make([]bool, len(b.Rows))}
	d.calls[c.id] = c
	d.mu.Unlock()
	rows := make([]wireRow, len(b.Rows))
	for i, r := range b.Rows {
		rows[i] = wireRow{Key: r.Key, Handle: uint64(r.Handle), Slot: r.Slot, Position: r.Position}
	}
	rep, err := d.call(request{Op: "submit", Call: uint64(c.id), Dir: dirWire(b.Dir), Rows: rows}, d.cfg.ReplyTimeout, nil)
	if err != nil || !*rep.OK {
		d.mu.Lock()
		delete(d.calls, c.id)
		d.mu.Unlock()
		if err != nil {
			// The request may have reached the process: not one of the
			// errors that prove nothing escaped (D-SUB-2).
			return nil, fmt.Errorf("procdriver: submit of call %d: %w", c.id, err)
		}
		return nil, toError("submit", rep.Error)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead { // gone since it accepted: the call was ended with the rest
		return c, nil
	}
	for i, r := range c.rows {
		w := d.windows[r.Handle]
		if w == nil || r.Slot < 0 || r.Slot >= w.slots {
			continue // a row the process should have refused
		}
		d.aud.sync(w, r.Slot) // a late write of the slot's last owner is that owner's
		w.owner[r.Slot] = owner{c: c, row: i}
		if c.dir == drivers.Publish {
			d.aud.fill(w, r.Slot, drivers.Toucher{Call: c.id, Row: i})
		}
	}
	c.started = true
	d.sendLocked(request{Op: "start", Call: uint64(c.id)})
	return c, nil
}

// Drain implements drivers.Driver: the process's answer, plus the calls
// whose callback this side has not yet run (D-DRAIN-2).
func (d *Driver) Drain() drivers.DrainStatus {
	rep, err := d.call(request{Op: "drain"}, d.cfg.ReplyTimeout, nil)
	if err == nil && !*rep.OK {
		d.fail(Garbage, "the answer to drain", "drain answered an error: "+toError("drain", rep.Error).Error())
		err = d.goneErr()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var mine []drivers.CallID
	for id, c := range d.calls {
		if c.cbQueued || c.cbRunning > 0 || (err != nil && !c.access.Evidenced()) {
			mine = append(mine, id)
		}
	}
	if err != nil {
		slices.Sort(mine)
		return drivers.DrainStatus{Done: len(mine) == 0, Pending: mine}
	}
	st := drivers.DrainStatus{Done: rep.Done}
	for _, id := range rep.Pending {
		st.Pending = append(st.Pending, drivers.CallID(id))
	}
	if len(mine) > 0 {
		st.Done = false
		st.Pending = append(st.Pending, mine...)
		slices.Sort(st.Pending)
		st.Pending = slices.Compact(st.Pending)
	}
	return st
}

// Shutdown implements drivers.Driver: the process's shutdown (bounded by
// ctx), its labels, then its stdin closes and it must exit; a last audit
// of every mapping, every callback still owed, and the mappings are
// released. The process's calls keep the access it last reported: a call
// it labelled stays as it was (its memory retained), though the process is
// gone. A second Shutdown returns the same labels (nothing is left to
// retry). After an incident every call has ended and nothing is held.
func (d *Driver) Shutdown(ctx context.Context) []string {
	d.shutMu.Lock()
	defer d.shutMu.Unlock()
	if d.shutDone {
		return slices.Clone(d.labels)
	}
	var labels []string
	d.mu.Lock()
	dead := d.dead
	d.mu.Unlock()
	if !dead {
		budget := d.cfg.ReplyTimeout
		if dl, ok := ctx.Deadline(); ok {
			budget = max(time.Until(dl), 0)
		}
		ms := budget.Milliseconds()
		rep, err := d.call(request{Op: "shutdown", TimeoutMS: &ms}, budget+d.cfg.ReplyTimeout, nil)
		switch {
		case err != nil: // an incident: every call ended
		case !*rep.OK:
			d.fail(Garbage, "the answer to shutdown", "shutdown answered an error: "+toError("shutdown", rep.Error).Error())
		default:
			labels = rep.Labels
		}
		d.mu.Lock()
		d.expectEOF, d.wclose = true, true
		d.wcond.Broadcast()
		d.mu.Unlock()
		if !d.p.waitExit(d.cfg.ExitTimeout) {
			d.fail(Hung, "the exit after shutdown", fmt.Sprintf("still running %v after its stdin closed", d.cfg.ExitTimeout))
		}
	}
	d.finish()
	d.shutDone = true
	d.labels = labels
	return slices.Clone(labels)
}

// finish, once the process has exited: the pipes drain, a last audit, the
// callbacks still owed run, the mappings go.
func (d *Driver) finish() {
	wait := func(ch chan struct{}, f interface{ Close() error }) {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C: // a grandchild holds the pipe open: stop reading it
			f.Close()
			<-ch
		}
	}
	wait(d.readerDone, d.p.stdout)
	d.mu.Lock()
	d.wclose = true
	d.wcond.Broadcast()
	d.mu.Unlock()
	<-d.writerDone
	wait(d.p.stderrDone, d.p.stderr)
	d.p.stdout.Close()
	d.p.stderr.Close()
	d.mu.Lock()
	d.auditAllLocked()
	d.shut = true
	d.dclosed = true
	d.dcond.Broadcast()
	d.mu.Unlock()
	<-d.dispatchDn
	d.mu.Lock()
	for _, w := range d.allWins {
		w.unmap()
	}
	d.allWins = nil
	d.windows = map[drivers.Handle]*window{}
	d.mu.Unlock()
	os.RemoveAll(d.dir)
}

// Delete implements the conformance suite's MakeAbsent hook (op delete).
func (d *Driver) Delete(ctx context.Context, key string) error {
	return d.admin(ctx, request{Op: "delete", Key: &key})
}

// Flush drops what the process stored under its prefix (op flush).
func (d *Driver) Flush(ctx context.Context) error {
	return d.admin(ctx, request{Op: "flush"})
}

func (d *Driver) admin(ctx context.Context, req request) error {
	if !d.ops[req.Op] {
		return fmt.Errorf("%w: %s", ErrUnsupported, req.Op)
	}
	rep, err := d.call(req, d.cfg.ReplyTimeout, ctx)
	if err != nil {
		return err
	}
	if !*rep.OK {
		return toError(req.Op, rep.Error)
	}
	return nil
}
