package refine

import (
	"context"
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
)

// Wrap returns the driver the backend must be built on: d, with every
// answer it gives the backend reported to the model. It implements
// drivers.TogetherRegisterer exactly when d does.
func (m *Model) Wrap(d drivers.Driver) drivers.Driver {
	m.declared, m.haveDeclared = d.Capabilities(), true
	if tr, ok := d.(drivers.TogetherRegisterer); ok {
		return &togetherTap{tap: tap{m: m, d: d}, tr: tr}
	}
	return &tap{m: m, d: d}
}

type tap struct {
	m *Model
	d drivers.Driver
}

func (t *tap) Capabilities() drivers.Capabilities { return t.d.Capabilities() }

func (t *tap) Register(r drivers.Region) (drivers.Handle, error) {
	h, err := t.d.Register(r)
	t.m.guard(func() { t.m.registered([]drivers.Region{r}, []drivers.Handle{h}, err, false) })
	return h, err
}

func (t *tap) Unregister(h drivers.Handle) error {
	err := t.d.Unregister(h)
	t.m.guard(func() { t.m.unregistered([]drivers.Handle{h}, err) })
	return err
}

func (t *tap) Contains(ctx context.Context, keys []string) ([]bool, error) {
	t.m.guard(t.m.settleLookup) // a lookup may be a declined publish's second one
	// A panicking Contains reaches the backend as a panic; the model sees
	// it as a lookup error, then lets it go on.
	finished := false
	defer func() {
		if !finished {
			t.m.guard(func() { t.m.lookedUp(keys, nil, errLookupPanicked) })
		}
	}()
	present, err := t.d.Contains(ctx, keys)
	finished = true
	t.m.guard(func() { t.m.lookedUp(keys, present, err) })
	return present, err
}

func (t *tap) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	t.m.guard(t.m.checkRecheck) // the Submit may follow its batch's lookup
	rows := t.m.keep(b.Rows)    // the batch is the caller's; keep what was asked
	// A panicking Submit reaches the backend as a panic; the model sees it as
	// an error that proves nothing (D-SUB-2), then lets it go on.
	var (
		c        drivers.Call
		err      error
		finished bool
	)
	defer func() {
		if !finished {
			t.m.guard(func() { t.m.submitted(b.Dir, rows, nil, errPanicked) })
		}
	}()
	c, err = t.d.Submit(b, onChange)
	finished = true
	var mc *call
	t.m.guard(func() { mc = t.m.submitted(b.Dir, rows, c, err) })
	if c == nil || mc == nil {
		return c, err
	}
	mc.tap = callTap{m: t.m, c: c, mc: mc}
	return &mc.tap, err // part of the model's call: no allocation of its own
}

func (t *tap) Drain() drivers.DrainStatus {
	st := t.d.Drain()
	t.m.guard(func() { t.m.drained(st) })
	return st
}

func (t *tap) Shutdown(ctx context.Context) (labels []string) {
	t.m.guard(func() { t.m.driverShutdown(ctx) })
	defer func() {
		if p := recover(); p != nil {
			t.m.guard(t.m.driverShutdownPanicked)
			panic(p) // the backend's to handle
		}
	}()
	labels = t.d.Shutdown(ctx)
	t.m.guard(func() { t.m.driverShutdownReturned(labels) })
	return labels
}

// togetherTap is a tap that also taps together-registration; the tap is
// in its allocation.
type togetherTap struct {
	tap
	tr drivers.TogetherRegisterer
}

func (t *togetherTap) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	hs, err := t.tr.RegisterTogether(regions)
	t.m.guard(func() { t.m.registered(regions, hs, err, true) })
	return hs, err
}

func (t *togetherTap) UnregisterTogether(hs []drivers.Handle) error {
	err := t.tr.UnregisterTogether(hs)
	t.m.guard(func() { t.m.unregistered(hs, err) })
	return err
}

// callTap reports every read of a call: what the backend was told is what
// it knows.
type callTap struct {
	m  *Model
	c  drivers.Call
	mc *call
}

func (c *callTap) ID() drivers.CallID { return c.c.ID() }

func (c *callTap) Results() []drivers.Status {
	res := c.c.Results()
	c.m.guard(func() { c.m.readResults(c.mc, res) })
	return res
}

// AppendResults implements monitor.ResultsAppender for a caller that
// reuses its buffer: the wrapped call's AppendResults when it has one,
// else its Results appended. The model only looks at the rows appended.
func (c *callTap) AppendResults(dst []drivers.Status) []drivers.Status {
	n := len(dst)
	if a, ok := c.c.(monitor.ResultsAppender); ok {
		dst = a.AppendResults(dst)
	} else {
		dst = append(dst, c.c.Results()...)
	}
	res := dst[n:]
	c.m.guard(func() { c.m.readResults(c.mc, res) })
	return dst
}

func (c *callTap) Access() drivers.Access {
	acc := c.c.Access()
	c.m.guard(func() { c.m.readAccess(c.mc, acc) })
	return acc
}

func (c *callTap) Cancel() drivers.CancelResult {
	mc := c.mc
	if !mc.stuck && (mc.folded || mc.acc.Evidenced()) {
		c.m.guard(func() {
			c.m.fail(rules.BCancel, mc.b.a, mc.id, "cancel-finished", fmt.Sprintf("call %d got a Cancel after the backend had read it finished (%s): only a running call, results not all final and access PENDING, is cancelled", mc.id, finishedHow(mc)))
		})
	}
	if mc.cancels++; mc.cancels == 2 {
		c.m.guard(func() {
			c.m.fail(rules.BCancel, mc.b.a, mc.id, "cancel-twice", fmt.Sprintf("call %d got a second Cancel: a running call gets one", mc.id))
		})
	}
	return c.c.Cancel()
}

// finishedHow says what the backend had read of a call that is no longer
// running.
func finishedHow(c *call) string {
	if c.folded {
		return "every result final"
	}
	return "access " + c.acc.String()
}
