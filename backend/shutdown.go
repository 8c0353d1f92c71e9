package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// errClosedByShutdown refuses admission after Shutdown; it is the same for
// every backend, so it is built once.
var errClosedByShutdown = fmt.Errorf("%w: %w", ErrClosed, ErrShutdown)

type shutdown struct {
	started, finished bool
	expired           bool
	deadline          sim.Timer
	waiters           []func([]string)
	labels            []string
}

// Shutdown is B-SHUT. It returns at once; done (if not nil) runs in a later
// runtime event with every label left over: the backend's own (bindings it
// could not close, regions in doubt, calls without ENDED access) and the
// driver's, sorted and deduplicated. Empty labels mean everything was
// released; only then may the memory's owner let go (S-HOLD).
//
// The first call closes admission, cancels every attempt without an outcome
// (dropping queued batches, forwarding cancels), and polls Driver.Drain from
// every change callback until it is done or DrainTimeout passed. Then it
// closes every binding that no unfinished call names and shuts the driver
// down. A call while that runs just adds done; a call after it finished
// retries what is still held (D-SHUT-2) and reports what remains.
func (b *Backend) Shutdown(done func(labels []string)) {
	if done != nil {
		b.shut.waiters = append(b.shut.waiters, done)
	}
	switch {
	case b.shut.finished:
		b.rt.Post(b.cfg.Name+"/shutdown-retry", func() { b.release(cancelledContext()) })
		return
	case b.shut.started:
		return
	}
	b.shut.started = true
	if b.closedErr == nil {
		b.closedErr = errClosedByShutdown
	}
	for _, a := range slices.Clone(b.open) {
		b.cancel(a, ErrShutdown)
	}
	b.shut.deadline = b.rt.After(b.cfg.DrainTimeout, b.cfg.Name+"/drain-deadline", func() {
		b.shut.expired = true
		b.pollDrain()
	})
	b.rt.Post(b.cfg.Name+"/drain", b.pollDrain)
}

// ShutdownLabels reports the labels of the last finished shutdown and
// whether one has finished.
func (b *Backend) ShutdownLabels() (labels []string, done bool) {
	return slices.Clone(b.shut.labels), b.shut.finished
}

// pollDrain is D-DRAIN-1 from the caller's side: Drain never blocks, so it
// is polled again from every change callback and at the deadline.
func (b *Backend) pollDrain() {
	if !b.shut.started || b.shut.finished {
		return
	}
	if !b.d.Drain().Done && !b.shut.expired {
		return
	}
	b.shut.deadline.Stop()
	b.shut.finished = true
	ctx := context.Background()
	if b.shut.expired {
		// The deadline passed: the driver must not wait any longer.
		ctx = cancelledContext()
	}
	b.release(ctx)
}

func cancelledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// release closes what it can, shuts the driver down and reports the labels.
func (b *Backend) release(ctx context.Context) {
	b.refresh()
	b.closeBindings()
	dl := b.safeDriverShutdown(ctx)
	b.refresh() // calls the driver stopped waiting for are UNPROVABLE now
	b.report(dl)
}

func (b *Backend) safeDriverShutdown(ctx context.Context) (labels []string) {
	defer func() {
		if p := recover(); p != nil {
			labels = []string{fmt.Sprintf("driver:shutdown-panicked:%v", p)}
		}
	}()
	return b.d.Shutdown(ctx)
}

// refresh reads every unfinished call directly: D-DRAIN-2 lets the driver's
// last callbacks return before our events for them have run.
func (b *Backend) refresh() {
	for _, c := range slices.Clone(b.live) {
		b.observe(c)
	}
}

func (b *Backend) report(driverLabels []string) {
	labels := append(b.ownLabels(), driverLabels...)
	slices.Sort(labels)
	labels = slices.Compact(labels)
	b.shut.labels = labels
	waiters := b.shut.waiters
	b.shut.waiters = nil
	b.rt.Post(b.cfg.Name+"/shutdown-done", func() {
		b.flush() // owners see the final access of every attempt first
		for _, w := range waiters {
			w(slices.Clone(labels))
		}
	})
}

func (b *Backend) ownLabels() []string {
	var labels []string
	for _, bd := range b.bindings {
		if bd.live {
			labels = append(labels, drivers.RegionLabel(bd.region.Label, bd.why))
		}
	}
	for _, l := range b.inDoubt {
		labels = append(labels, drivers.RegionLabel(l, drivers.WhyInDoubt))
	}
	for _, c := range b.live {
		if c.dc == nil {
			continue // its region is reported retained
		}
		why := drivers.WhyPending
		if c.access == drivers.AccessUnprovable {
			why = drivers.WhyUnprovable
		}
		labels = append(labels, drivers.CallLabel(c.id, why))
	}
	return labels
}

// closable is B-SHUT / D-REG-6 from the caller's side: a binding may be
// closed only when no call without ENDED access names its memory.
func closable(bd *binding, busy map[drivers.Handle]bool) bool { return !busy[bd.handle] }

func (b *Backend) closeBindings() {
	busy := make(map[drivers.Handle]bool)
	for _, c := range b.live {
		for _, r := range c.rows {
			busy[r.Handle] = true
		}
	}
	var todo []*binding
	for _, bd := range b.bindings {
		switch {
		case !bd.live:
		case !closable(bd, busy):
			bd.why = drivers.WhyRetained
		default:
			todo = append(todo, bd)
		}
	}
	if len(todo) == 0 {
		return
	}
	if tr, ok := b.d.(drivers.TogetherRegisterer); ok && b.together {
		b.closeTogether(tr, todo)
		return
	}
	for _, bd := range todo {
		b.closed(bd, b.d.Unregister(bd.handle))
	}
}

// closeTogether is D-TOG-3 from the caller's side: an *InDoubtError names
// exactly the regions still live; any other error proves nothing closed.
func (b *Backend) closeTogether(tr drivers.TogetherRegisterer, todo []*binding) {
	hs := make([]drivers.Handle, len(todo))
	for i, bd := range todo {
		hs[i] = bd.handle
	}
	err := tr.UnregisterTogether(hs)
	var doubt *drivers.InDoubtError
	if err == nil || !errors.As(err, &doubt) {
		for _, bd := range todo {
			b.closed(bd, err)
		}
		return
	}
	for _, bd := range todo {
		if slices.Contains(doubt.Labels, bd.region.Label) {
			b.closed(bd, err)
		} else {
			b.closed(bd, nil)
		}
	}
}

// closed records the result of closing bd. A stale handle is a no-op
// success (D-REG-3); a failed close has not closed (D-REG-4).
func (b *Backend) closed(bd *binding, err error) {
	switch {
	case err == nil || errors.Is(err, drivers.ErrStaleHandle):
		bd.live, bd.why = false, ""
	case errors.Is(err, drivers.ErrBusy):
		bd.why = drivers.WhyRetained
	default:
		bd.why = drivers.WhyUnregisterFailed
	}
}
