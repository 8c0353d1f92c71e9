// Package backendtest holds a scripted store driver for tests of the backend
// and of code built on it (the lender, realwait): every call stays pending
// until the test completes it by hand with [Call.Finish], so each rule can be
// driven to the exact interleaving it is about. It logs every driver method
// called, in order, as one line each ("submit FETCH a b", "contains a",
// "unregister 1", …).
//
// Like the httptest package it is test support, not a conforming driver: it
// never completes anything by itself.
package backendtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
)

// Driver is the scripted driver. Set the hooks before use; nil means success.
type Driver struct {
	Caps    drivers.Capabilities
	Present map[string]bool // what Contains answers

	RegisterErr   func(r drivers.Region) error
	SubmitErr     func(b drivers.RowBatch) error
	ContainsErr   func(keys []string) error
	ContainsShort bool // answer one bool fewer than keys
	UnregisterErr func(h drivers.Handle) error
	Labels        []string // extra labels Shutdown returns

	log    []string
	calls  []*Call
	nextH  drivers.Handle
	live   map[drivers.Handle]drivers.Region
	closed bool
}

// New returns a scripted driver with caps.
func New(caps drivers.Capabilities) *Driver {
	return &Driver{Caps: caps, Present: map[string]bool{}, live: map[drivers.Handle]drivers.Region{}}
}

// Log is every driver method called so far, one line each.
func (f *Driver) Log() []string { return slices.Clone(f.log) }

// Calls is every submitted call, in order.
func (f *Driver) Calls() []*Call { return slices.Clone(f.calls) }

// Live reports whether h is a live registration.
func (f *Driver) Live(h drivers.Handle) bool { _, ok := f.live[h]; return ok }

func (f *Driver) logf(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

// Capabilities implements drivers.Driver.
func (f *Driver) Capabilities() drivers.Capabilities { return f.Caps }

// Register implements drivers.Driver.
func (f *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	f.logf("register %s", r.Label)
	if f.RegisterErr != nil {
		if err := f.RegisterErr(r); err != nil {
			return 0, err
		}
	}
	f.nextH++
	f.live[f.nextH] = r
	return f.nextH, nil
}

// Unregister implements drivers.Driver.
func (f *Driver) Unregister(h drivers.Handle) error {
	f.logf("unregister %d", h)
	if f.UnregisterErr != nil {
		if err := f.UnregisterErr(h); err != nil {
			return err
		}
	}
	delete(f.live, h)
	return nil
}

// Contains implements drivers.Driver from Present.
func (f *Driver) Contains(_ context.Context, keys []string) ([]bool, error) {
	f.logf("contains %s", strings.Join(keys, " "))
	if f.ContainsErr != nil {
		if err := f.ContainsErr(keys); err != nil {
			return nil, err
		}
	}
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = f.Present[k]
	}
	if f.ContainsShort {
		out = out[1:]
	}
	return out, nil
}

// Submit implements drivers.Driver: it validates the batch (D-SUB-1) and
// returns a call that waits for Finish.
func (f *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	f.logf("submit %v %s", b.Dir, strings.Join(b.Keys(), " "))
	if f.closed {
		return nil, drivers.ErrClosed
	}
	live := func(h drivers.Handle) (drivers.Region, bool) { r, ok := f.live[h]; return r, ok }
	if err := b.Validate(f.Caps, live); err != nil {
		return nil, err
	}
	if f.SubmitErr != nil {
		if err := f.SubmitErr(b); err != nil {
			return nil, err
		}
	}
	c := &Call{id: drivers.CallID(len(f.calls) + 1), Batch: b, res: make([]drivers.Status, len(b.Rows)), onChange: onChange}
	f.calls = append(f.calls, c)
	return c, nil
}

// Drain implements drivers.Driver: done when every call has evidence.
func (f *Driver) Drain() drivers.DrainStatus {
	f.closed = true
	st := drivers.DrainStatus{Done: true}
	for _, c := range f.calls {
		if !c.acc.Evidenced() {
			st.Done = false
			st.Pending = append(st.Pending, c.id)
		}
	}
	return st
}

// Shutdown implements drivers.Driver: calls without ENDED access become
// UNPROVABLE (the driver stops waiting) and are labelled.
func (f *Driver) Shutdown(context.Context) []string {
	f.logf("shutdown")
	f.closed = true
	labels := slices.Clone(f.Labels)
	for _, c := range f.calls {
		if c.acc != drivers.AccessEnded {
			c.acc = drivers.AccessUnprovable
			labels = append(labels, drivers.CallLabel(c.id, drivers.WhyUnprovable))
		}
	}
	return labels
}

// Call is one scripted call.
type Call struct {
	Batch    drivers.RowBatch
	Short    bool // Results answers one status fewer than rows
	id       drivers.CallID
	res      []drivers.Status
	acc      drivers.Access
	onChange func()
	cancels  int
}

// ID implements drivers.Call.
func (c *Call) ID() drivers.CallID { return c.id }

// Results implements drivers.Call.
func (c *Call) Results() []drivers.Status {
	if c.Short {
		return slices.Clone(c.res[1:])
	}
	return slices.Clone(c.res)
}

// Access implements drivers.Call.
func (c *Call) Access() drivers.Access { return c.acc }

// Cancel implements drivers.Call; it only counts.
func (c *Call) Cancel() drivers.CancelResult {
	c.cancels++
	return drivers.CancelRequested
}

// Cancels is how many times Cancel was called.
func (c *Call) Cancels() int { return c.cancels }

// Finish sets the rows' statuses (the last one repeats; none keeps them) and
// the access, then signals (state before signal, D-CB-1).
func (c *Call) Finish(acc drivers.Access, sts ...drivers.Status) {
	for i := range c.res {
		if len(sts) > 0 {
			c.res[i] = sts[min(i, len(sts)-1)]
		}
	}
	c.acc = acc
	c.onChange()
}

// Together adds together-registration to a Driver.
type Together struct {
	*Driver
	TogetherErr   func(rs []drivers.Region) error
	UntogetherErr func(hs []drivers.Handle) error
}

// RegisterTogether implements drivers.TogetherRegisterer.
func (f *Together) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	f.logf("register-together %d", len(rs))
	if f.TogetherErr != nil {
		if err := f.TogetherErr(rs); err != nil {
			return nil, err
		}
	}
	hs := make([]drivers.Handle, len(rs))
	for i, r := range rs {
		f.nextH++
		f.live[f.nextH] = r
		hs[i] = f.nextH
	}
	return hs, nil
}

// UnregisterTogether implements drivers.TogetherRegisterer.
func (f *Together) UnregisterTogether(hs []drivers.Handle) error {
	f.logf("unregister-together %v", hs)
	if f.UntogetherErr != nil {
		if err := f.UntogetherErr(hs); err != nil {
			return err
		}
	}
	for _, h := range hs {
		delete(f.live, h)
	}
	return nil
}
