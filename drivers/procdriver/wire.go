package procdriver

// The protocol's traffic: requests out, answers and change notifications in, the audit of the shared memory at each, and what an incident does. Moved out of driver.go, unchanged.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
)

// sendLocked queues one line for the writer.
func (d *Driver) sendLocked(req request) {
	b, _ := json.Marshal(req)
	d.wq = append(d.wq, append(b, '\n'))
	d.wcond.Signal()
}

// call sends req and waits for its answer, up to wait (or ctx). A missing
// answer is a Hung incident.
func (d *Driver) call(req request, wait time.Duration, ctx context.Context) (*inbound, error) {
	d.mu.Lock()
	if d.dead {
		d.mu.Unlock()
		return nil, d.goneErr()
	}
	if d.wclose {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %s after Shutdown", drivers.ErrClosed, req.Op)
	}
	d.nextReq++
	req.ID = d.nextReq
	w := &waiter{ch: make(chan *inbound, 1), what: describe(req)}
	d.pending[req.ID] = w
	d.sendLocked(req)
	d.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case m := <-w.ch:
		if m.OK == nil {
			d.fail(Garbage, "the answer to "+w.what, `the answer has no "ok" field`)
			return nil, d.goneErr()
		}
		return m, nil
	case <-d.deadCh:
		return nil, d.goneErr()
	case <-t.C:
		d.fail(Hung, w.what, fmt.Sprintf("no answer within %v", wait))
		return nil, d.goneErr()
	case <-done:
		d.mu.Lock()
		w.abandoned = true
		d.mu.Unlock()
		return nil, ctx.Err()
	}
}

func describe(req request) string {
	switch {
	case req.Call != 0:
		return fmt.Sprintf("%s (call %d)", req.Op, req.Call)
	case req.Handle != nil:
		return fmt.Sprintf("%s (handle %d)", req.Op, *req.Handle)
	}
	return req.Op
}

func (d *Driver) goneErr() error {
	d.mu.Lock()
	in := d.incident
	d.mu.Unlock()
	if in != nil {
		return fmt.Errorf("%w: %s", ErrGone, in)
	}
	return ErrGone
}

// writer writes queued lines, each batch bounded by ReplyTimeout: a
// process that stops reading its stdin is Hung.
func (d *Driver) writer() {
	defer close(d.writerDone)
	defer d.p.stdin.Close()
	for {
		d.mu.Lock()
		for len(d.wq) == 0 && !d.wclose && !d.dead {
			d.wcond.Wait()
		}
		if d.dead || len(d.wq) == 0 {
			d.mu.Unlock()
			return
		}
		batch := d.wq
		d.wq = nil
		d.mu.Unlock()
		var buf []byte
		if len(batch) == 1 {
			buf = batch[0]
		} else {
			for _, b := range batch {
				buf = append(buf, b...)
			}
		}
		d.p.stdin.SetWriteDeadline(time.Now().Add(d.cfg.ReplyTimeout))
		if _, err := d.p.stdin.Write(buf); err != nil {
			d.mu.Lock()
			quiet := d.expectEOF || d.dead
			d.mu.Unlock()
			if !quiet {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					d.fail(Hung, "a write to its stdin", fmt.Sprintf("it did not read its stdin for %v", d.cfg.ReplyTimeout))
				} else {
					d.fail(Died, "a write to its stdin", err.Error())
				}
			}
			return
		}
	}
}

// reader reads the process's stdout: answers go to their waiters, change
// notifications are applied. Anything else is Garbage; an early end is
// Died.
func (d *Driver) reader() {
	defer close(d.readerDone)
	lr := lineReader{r: bufio.NewReaderSize(d.p.stdout, 64<<10), max: d.cfg.MaxLine}
	for n := 1; ; n++ {
		line, err := lr.next()
		if err != nil {
			d.mu.Lock()
			quiet := d.expectEOF || d.dead
			d.mu.Unlock()
			switch {
			case errors.Is(err, errLineTooLong):
				d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("the line is longer than %d bytes", d.cfg.MaxLine))
			case !quiet:
				d.fail(Died, "", fmt.Sprintf("its stdout closed after %d lines (the process ended) while the driver was in use", n-1))
			}
			return
		}
		if !d.handle(n, line) {
			return
		}
	}
}

// handle dispatches one line; false stops the reader (an incident).
func (d *Driver) handle(n int, line []byte) bool {
	var m inbound
	if err := json.Unmarshal(line, &m); err != nil {
		d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("not a protocol message (%v): %q", err, clip(line)))
		return false
	}
	switch {
	case m.ID != nil:
		return d.answer(n, &m, line)
	case m.Op == "change":
		return d.change(n, &m, line)
	}
	d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("neither an answer (no id) nor a change notification: %q", clip(line)))
	return false
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

func (d *Driver) answer(n int, m *inbound, line []byte) bool {
	d.mu.Lock()
	w := d.pending[*m.ID]
	if w == nil {
		d.mu.Unlock()
		d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("an answer to request %d, which awaits none: %q", *m.ID, clip(line)))
		return false
	}
	delete(d.pending, *m.ID)
	if !w.abandoned {
		w.ch <- m
	}
	d.mu.Unlock()
	return true
}

// change applies one change notification: first the audit (what the
// process wrote into the shared memory before it wrote this line reaches
// the caller's memory), then the call's new state, then — unless
// "signal": false — the call's callback, on the dispatcher (D-CB-1).
func (d *Driver) change(n int, m *inbound, line []byte) bool {
	where := fmt.Sprintf("line %d", n)
	d.mu.Lock()
	c := d.calls[drivers.CallID(m.Call)]
	var bad string
	res := make([]drivers.Status, len(m.Results))
	acc, accOK := accessWire[m.Access]
	switch {
	case c == nil:
		bad = fmt.Sprintf("a change of call %d, which was never accepted: %q", m.Call, clip(line))
	case m.Results == nil:
		bad = fmt.Sprintf(`a change of call %d without "results": %q`, m.Call, clip(line))
	case !accOK:
		bad = fmt.Sprintf("a change of call %d with access %q (want pending, ended or unprovable)", m.Call, m.Access)
	}
	for i, s := range m.Results {
		st, ok := statusWire[s]
		if !ok && bad == "" {
			bad = fmt.Sprintf("a change of call %d with row status %q (want pending, ok, miss, fault or not_attempted)", m.Call, s)
		}
		res[i] = st
	}
	if bad == "" {
		c.notes++
		if c.notes > d.noteLimit(len(c.rows)) {
			d.mu.Unlock()
			d.fail(Flood, where, fmt.Sprintf("call %d (%d rows) got %d change notifications, more than the %d any driver needs", c.id, len(c.rows), c.notes, d.noteLimit(len(c.rows))))
			return false
		}
	}
	if bad != "" {
		d.mu.Unlock()
		d.fail(Garbage, where, bad)
		return false
	}
	d.auditAllLocked()
	old := c.access
	oldRes := c.results
	c.results, c.access = res, acc
	if c.dir == drivers.Fetch {
		for i, st := range res {
			if i >= len(c.wrote) || (i < len(oldRes) && oldRes[i] == st) {
				continue
			}
			switch {
			case st == drivers.OK && !c.wrote[i]:
				d.forceRowLocked(c, i) // its bytes equal what the mapping held: no audit saw them change
			case (st == drivers.Miss || st == drivers.NotAttempted) && c.wrote[i]:
				d.aud.untouchedBroken(c, i, st) // written before it was reported so
			}
		}
	}
	if acc == drivers.AccessEnded && old != drivers.AccessEnded {
		d.canaryCallLocked(c)
	}
	if m.Signal == nil || *m.Signal {
		d.enqueueLocked(c)
	}
	d.mu.Unlock()
	return true
}

func (d *Driver) noteLimit(rows int) int {
	if d.cfg.MaxNotes > 0 {
		return d.cfg.MaxNotes
	}
	return 64 + 16*rows
}

// auditAllLocked audits every slot of every mapped window.
func (d *Driver) auditAllLocked() {
	for _, w := range d.allWins {
		d.aud.syncAll(w)
	}
}

// forceRowLocked writes row i's slot, as the mapping holds it, into the
// caller's memory: a FETCH row reported OK whose bytes no audit saw change
// (the object equals what the slot held: the canary, or a value written
// before) must still be in the caller's slot when reported.
func (d *Driver) forceRowLocked(c *call, i int) {
	r := c.rows[i]
	w := d.windows[r.Handle]
	if w == nil || r.Slot < 0 || r.Slot >= w.slots || w.owner[r.Slot].c != c || w.owner[r.Slot].row != i {
		return
	}
	d.aud.force(w, r.Slot)
	c.wrote[i] = true
}

// canaryCallLocked fills the slots of c's rows with Canary once c's access
// ENDED: nothing may touch them now.
func (d *Driver) canaryCallLocked(c *call) {
	for i, r := range c.rows {
		if w := d.windows[r.Handle]; w != nil && r.Slot >= 0 && r.Slot < w.slots && w.owner[r.Slot].c == c && w.owner[r.Slot].row == i {
			d.aud.canaryFill(w, r.Slot)
		}
	}
}

// enqueueLocked queues c's callback; one already queued (not yet running)
// will read the newer state, so it is not queued twice (D-CB-2 allows the
// coalescing).
func (d *Driver) enqueueLocked(c *call) {
	if d.dclosed || c.cbQueued {
		return
	}
	c.cbQueued = true
	d.dq = append(d.dq, c)
	d.dcond.Signal()
}

// dispatcher runs the callbacks, one at a time, holding no lock (D-CB-4).
func (d *Driver) dispatcher() {
	defer close(d.dispatchDn)
	for {
		d.mu.Lock()
		for len(d.dq) == 0 && !d.dclosed {
			d.dcond.Wait()
		}
		if len(d.dq) == 0 {
			d.mu.Unlock()
			return
		}
		c := d.dq[0]
		d.dq[0] = nil
		d.dq = d.dq[1:]
		c.cbQueued = false
		c.cbRunning++
		d.mu.Unlock()
		c.onChange()
		d.mu.Lock()
		c.cbRunning--
		d.mu.Unlock()
	}
}

// fail handles an incident: the process is killed by its id (and its
// process group), reaped, every call is ended, and the incident is
// reported once.
func (d *Driver) fail(kind IncidentKind, during, detail string) {
	d.mu.Lock()
	if d.dead {
		d.mu.Unlock()
		return
	}
	d.dead = true
	close(d.deadCh)
	d.wcond.Broadcast()
	report := d.started
	d.mu.Unlock()

	d.p.kill()
	exited := d.p.waitExit(5 * time.Second)
	d.endAllAfterExit()
	// The stderr pipe drains once the process is gone.
	t := time.NewTimer(200 * time.Millisecond)
	select {
	case <-d.p.stderrDone:
	case <-t.C:
	}
	t.Stop()
	in := Incident{Kind: kind, Command: d.name, PID: d.p.pid, During: during, Detail: detail}
	switch {
	case !exited:
		in.Exit = "killed by its pid, but it did not exit within 5s of SIGKILL"
	case kind == Died:
		in.Exit = "it ended with " + d.p.exitString()
	case d.p.killed():
		in.Exit = "killed by its pid (" + d.p.exitString() + ")"
	default:
		in.Exit = "it had exited by itself (" + d.p.exitString() + ")"
	}
	d.mu.Lock()
	in.Stderr = string(d.stderr.b)
	d.incident = &in
	d.mu.Unlock()
	if report && d.cfg.OnIncident != nil {
		d.cfg.OnIncident(in)
	}
}

// endAllAfterExit: the process is gone, so nothing can write the shared
// memory again. What it wrote before it went reaches the caller's memory
// (a last audit); every row without a final result becomes FAULT and every
// call's access ENDED — the process's exit is the evidence — with a
// callback.
func (d *Driver) endAllAfterExit() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.auditAllLocked()
	ids := make([]drivers.CallID, 0, len(d.calls))
	for id := range d.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := d.calls[id]
		changed := false
		for i, s := range c.results {
			if !s.Final() {
				c.results[i] = drivers.Fault
				changed = true
			}
		}
		if c.access != drivers.AccessEnded {
			c.access = drivers.AccessEnded
			d.canaryCallLocked(c)
			changed = true
		}
		if changed {
			d.enqueueLocked(c)
		}
	}
	for _, w := range d.pending {
		w.abandoned = true
	}
}
