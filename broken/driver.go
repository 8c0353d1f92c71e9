package broken

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// driver is a broken driver: the reference MemoryDriver (embedded, so its
// probes, fault controls and everything a bug leaves alone stay as they are)
// behind a wrapper whose wrap points one bug sets (plants.go). A nil wrap
// point passes through, so a wrapper with none behaves exactly as the
// reference driver.
type driver struct {
	*memdriver.Driver
	rt    sim.Runtime
	store *memdriver.Store
	step  time.Duration // the reference driver's step delay
	label string        // "broken/<Name>": the label of the events a bug schedules
	inst  string        // the driver's name (Config.Name), unique per runtime

	// hooks are the reference driver's hooks the bug sets (nil: none).
	hooks *memdriver.Hooks

	// Wrap points (nil: pass through).
	submit     func(b drivers.RowBatch) error // a refusal before the reference driver sees the batch
	contains   func(keys []string, found []bool, err error) ([]bool, error)
	drain      func(drivers.DrainStatus) drivers.DrainStatus
	shutdown   func(ctx context.Context) []string                   // replaces the call of the reference Shutdown
	registerAs func(r drivers.Region) (drivers.Handle, bool)        // a handle answered instead of registering (true)
	register   func(r drivers.Region) (drivers.Handle, error)       // replaces the call of the reference Register (r as the reference driver sees it)
	unregister func(h drivers.Handle) error                         // replaces the call of the reference Unregister
	results    func(c *call, res []drivers.Status) []drivers.Status // what Results answers; w.mu held
	access     func(c *call, a drivers.Access) drivers.Access       // what Access answers; w.mu held
	cancel     func(c *call) drivers.CancelResult                   // replaces the reference Cancel
	notify     func(c *call, user func())                           // the change callback the reference driver runs
	read       func(m *memory, by drivers.Toucher, off int, p []byte) error
	write      func(m *memory, by drivers.Toucher, off int, p []byte) error

	// mu guards the wrapper's own state below and the bugs' (SignalUnderLock
	// holds it across a callback). It is never held while the reference
	// driver or a caller's callback runs, except by that bug.
	mu       sync.Mutex
	regions  map[drivers.Handle]drivers.Region // as the caller registered them
	calls    map[drivers.CallID]*call
	last     *call // the call submitted last
	shutting bool  // Shutdown was called
}

// togetherDriver is a driver over the TogetherMemoryDriver.
type togetherDriver struct {
	*driver
	t *memdriver.TogetherDriver
}

var (
	_ drivers.Driver             = (*driver)(nil)
	_ drivers.TogetherRegisterer = (*togetherDriver)(nil)
)

// newDriver is the wrapper of bug name; New sets its reference driver.
func newDriver(rt sim.Runtime, store *memdriver.Store, cfg memdriver.Config, name Name) *driver {
	step := cfg.StepDelay
	if step <= 0 {
		step = memdriver.DefaultStepDelay
	}
	inst := cfg.Name
	if inst == "" {
		inst = "mem"
	}
	return &driver{rt: rt, store: store, step: step, label: "broken/" + string(name), inst: inst,
		regions: map[drivers.Handle]drivers.Region{}, calls: map[drivers.CallID]*call{}}
}

// call is a call of a broken driver: the reference driver's call and the
// batch as submitted.
type call struct {
	drivers.Call
	w    *driver
	b    drivers.RowBatch
	user func() // the caller's onChange
	bug  callState
}

// Results implements drivers.Call.
func (c *call) Results() []drivers.Status {
	res := c.Call.Results()
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if c.w.results != nil {
		res = c.w.results(c, res)
	}
	return res
}

// Access implements drivers.Call.
func (c *call) Access() drivers.Access {
	a := c.Call.Access()
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if c.w.access != nil {
		a = c.w.access(c, a)
	}
	return a
}

// Cancel implements drivers.Call.
func (c *call) Cancel() drivers.CancelResult {
	if c.w.cancel != nil {
		return c.w.cancel(c)
	}
	return c.Call.Cancel()
}

// row is the batch row that by names, if by is a row of a call of w.
func (w *driver) row(by drivers.Toucher) (drivers.Row, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls[by.Call]
	if c == nil || by.Row < 0 || by.Row >= len(c.b.Rows) {
		return drivers.Row{}, false
	}
	return c.b.Rows[by.Row], true
}

func (w *driver) region(h drivers.Handle) drivers.Region {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.regions[h]
}

func (w *driver) isShutting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.shutting
}

// memory is region memory as the reference driver sees it when a bug
// touches memory (or the store) at the moment of a transfer's touch.
type memory struct {
	drivers.Memory
	w *driver
	r drivers.Region // the caller's region: its geometry
}

// Read implements drivers.Memory.
func (m *memory) Read(by drivers.Toucher, off int, p []byte) error {
	if m.w.read == nil {
		return m.Memory.Read(by, off, p)
	}
	return m.w.read(m, by, off, p)
}

// Write implements drivers.Memory.
func (m *memory) Write(by drivers.Toucher, off int, p []byte) error {
	if m.w.write == nil {
		return m.Memory.Write(by, off, p)
	}
	return m.w.write(m, by, off, p)
}

// ends reports whether a touch of n bytes at off reaches the end of row's
// slot: the last chunk of a whole-slot transfer.
func (m *memory) ends(row drivers.Row, off, n int) bool {
	return off+n == m.r.SlotOffset(row.Slot)+m.r.SlotBytes
}

// inner is r as the reference driver registers it.
func (w *driver) inner(r drivers.Region) drivers.Region {
	if r.Mem != nil && (w.read != nil || w.write != nil) {
		r.Mem = &memory{Memory: r.Mem, w: w, r: r}
	}
	return r
}

// Register implements drivers.Driver.
func (w *driver) Register(r drivers.Region) (drivers.Handle, error) {
	if w.registerAs != nil {
		if h, ok := w.registerAs(r); ok {
			return h, nil
		}
	}
	register := w.Driver.Register
	if w.register != nil {
		register = w.register
	}
	h, err := register(w.inner(r))
	if err == nil {
		w.mu.Lock()
		w.regions[h] = r
		w.mu.Unlock()
	}
	return h, err
}

// RegisterTogether implements drivers.TogetherRegisterer.
func (t *togetherDriver) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	in := make([]drivers.Region, len(rs))
	for i, r := range rs {
		in[i] = t.inner(r)
	}
	hs, err := t.t.RegisterTogether(in)
	if err == nil {
		t.mu.Lock()
		for i, h := range hs {
			t.regions[h] = rs[i]
		}
		t.mu.Unlock()
	}
	return hs, err
}

// UnregisterTogether implements drivers.TogetherRegisterer.
func (t *togetherDriver) UnregisterTogether(hs []drivers.Handle) error {
	return t.t.UnregisterTogether(hs)
}

// Unregister implements drivers.Driver.
func (w *driver) Unregister(h drivers.Handle) error {
	if w.unregister != nil {
		return w.unregister(h)
	}
	return w.Driver.Unregister(h)
}

// Contains implements drivers.Driver.
func (w *driver) Contains(ctx context.Context, keys []string) ([]bool, error) {
	found, err := w.Driver.Contains(ctx, keys)
	if w.contains != nil {
		found, err = w.contains(keys, found, err)
	}
	return found, err
}

// Submit implements drivers.Driver. The reference driver never calls back
// before Submit returned, so a callback always finds c.Call set.
func (w *driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if w.submit != nil {
		if err := w.submit(b); err != nil {
			return nil, err
		}
	}
	c := &call{w: w, b: drivers.RowBatch{Dir: b.Dir, Rows: slices.Clone(b.Rows)}, user: onChange}
	cb := onChange
	if onChange != nil && w.notify != nil {
		cb = func() { w.notify(c, onChange) }
	}
	in, err := w.Driver.Submit(b, cb)
	if err != nil {
		return nil, err
	}
	c.Call = in
	w.mu.Lock()
	w.calls[in.ID()], w.last = c, c
	w.mu.Unlock()
	return c, nil
}

// Drain implements drivers.Driver.
func (w *driver) Drain() drivers.DrainStatus {
	st := w.Driver.Drain()
	if w.drain != nil {
		st = w.drain(st)
	}
	return st
}

// Shutdown implements drivers.Driver.
func (w *driver) Shutdown(ctx context.Context) []string {
	w.mu.Lock()
	w.shutting = true
	w.mu.Unlock()
	if w.shutdown != nil {
		return w.shutdown(ctx)
	}
	return w.Driver.Shutdown(ctx)
}

// Locked implements monitor.LockProber: the wrapper's lock or the reference
// driver's is held.
func (w *driver) Locked() bool {
	if !w.mu.TryLock() {
		return true
	}
	w.mu.Unlock()
	return w.Driver.Locked()
}
