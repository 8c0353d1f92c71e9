package drivertest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

// lateResults is a real-time driver that keeps the contract in a way real
// object stores do: a PUBLISH proves access ENDED as soon as its bytes are
// copied, and its row results become final only later (the store's answer
// still on its way). It wraps the reference driver: a publish shows no
// final result until resultLag after its own results were final and its
// access ENDED, then tells the change; Drain counts such a call as pending,
// Shutdown tells what it still holds back before it returns, and Cancel
// never answers ALREADY_DONE for a call whose results it still hides.
type lateResults struct {
	drivers.Driver
	mu    sync.Mutex
	held  []*lateCall // publishes whose results are not shown yet
	calls []*lateCall
}

const resultLag = 30 * time.Millisecond

func (d *lateResults) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if b.Dir != drivers.Publish {
		return d.Driver.Submit(b, onChange)
	}
	lc := &lateCall{d: d, onChange: onChange}
	c, err := d.Driver.Submit(b, lc.changed)
	if err != nil {
		return nil, err
	}
	lc.mu.Lock()
	lc.inner = c
	lc.mu.Unlock()
	d.mu.Lock()
	d.held = append(d.held, lc)
	d.calls = append(d.calls, lc)
	d.mu.Unlock()
	lc.changed()
	return lc, nil
}

func (d *lateResults) Drain() drivers.DrainStatus {
	st := d.Driver.Drain()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.held {
		st.Done = false
		if !slices.Contains(st.Pending, c.ID()) {
			st.Pending = append(st.Pending, c.ID())
		}
	}
	slices.Sort(st.Pending)
	return st
}

func (d *lateResults) Shutdown(ctx context.Context) []string {
	labels := d.Driver.Shutdown(ctx)
	d.mu.Lock()
	calls := slices.Clone(d.calls)
	d.mu.Unlock()
	for _, c := range calls {
		c.reveal(true) // what is still held back is told now, before Shutdown returns
	}
	return labels
}

type lateCall struct {
	d        *lateResults
	onChange func()
	tell     sync.Mutex // one callback at a time; reveal's check and callback in one piece
	mu       sync.Mutex
	inner    drivers.Call
	armed    bool
	shown    bool
}

func (c *lateCall) changed() {
	c.mu.Lock()
	in := c.inner
	if in == nil {
		c.mu.Unlock()
		return
	}
	if !c.armed && in.Access() == drivers.AccessEnded && allFinal(in.Results()) {
		c.armed = true
		time.AfterFunc(resultLag, func() { c.reveal(false) })
	}
	c.mu.Unlock()
	c.tell.Lock()
	defer c.tell.Unlock()
	c.onChange()
}

// reveal shows the results and tells the change, once: when the lag is
// over, or (force) at Shutdown, whatever the call's state.
func (c *lateCall) reveal(force bool) {
	c.tell.Lock()
	defer c.tell.Unlock()
	c.mu.Lock()
	if c.shown || c.inner == nil || !c.armed && !force {
		c.mu.Unlock()
		return
	}
	c.shown = true
	c.mu.Unlock()
	c.onChange()
	c.d.mu.Lock() // pending for Drain until its callback returned (D-DRAIN-2)
	c.d.held = slices.DeleteFunc(c.d.held, func(x *lateCall) bool { return x == c })
	c.d.mu.Unlock()
}

func (c *lateCall) ID() drivers.CallID     { return c.inner.ID() }
func (c *lateCall) Access() drivers.Access { return c.inner.Access() }

func (c *lateCall) Results() []drivers.Status {
	c.mu.Lock()
	shown := c.shown
	c.mu.Unlock()
	res := c.inner.Results()
	if !shown {
		for i := range res {
			res[i] = drivers.Pending // the store's answer is not in yet
		}
	}
	return res
}

func (c *lateCall) Cancel() drivers.CancelResult {
	r := c.inner.Cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if r == drivers.CancelAlreadyDone && !c.shown {
		return drivers.CancelRequested // completion wins, a little later
	}
	return r
}

func allFinal(res []drivers.Status) bool {
	for _, st := range res {
		if !st.Final() {
			return false
		}
	}
	return true
}

// TestEndedBeforeResults: a real-time driver whose publishes prove ENDED
// before their results are final is certified, with no case skipped or
// failed for it (the suite's waits are for results and evidence, not
// evidence alone).
func TestEndedBeforeResults(t *testing.T) {
	const repro = "(repro: go test ./drivers/drivertest -run '^TestEndedBeforeResults$')"
	h := Harness{Name: "late-results", RealTime: true,
		New: func(env Env) (drivers.Driver, error) {
			return &lateResults{Driver: memdriver.New(env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps})}, nil
		},
	}
	rep := Certify(h, Options{Short: true})
	if !rep.Certified {
		t.Fatalf("not certified:\n%s\n%s", rep.Table(), repro)
	}
	for _, r := range rep.Rules {
		if r.Verdict == Skip && !strings.Contains(r.Reason, "TogetherRegisterer") {
			t.Errorf("%s skipped: %s (a publish whose results come after ENDED read as failed?) %s", r.Rule, r.Reason, repro)
		}
	}
}
