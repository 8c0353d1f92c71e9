// Package realstress is the naive stress test the bug zoo is measured
// against: what a team would write instead of storesim — the backend on the
// wall-clock runtime (sim/realtime), the in-memory driver on the same
// runtime, goroutines issuing random publishes, fetches and cancels with
// random sleeps, built with -race, for a bounded time.
//
// # What it checks (and what it does not)
//
// Only what such a test can see from the outside:
//
//   - panic: a panic on a worker goroutine (a panic on the runtime's executor
//     kills the process; the caller reads that from the exit status, as it
//     does a -race report);
//   - timeout: an outcome, an access end (Quiesce) or a shutdown that does
//     not arrive within Options.Wait;
//   - data: every served row of a delivered fetch holds an object published
//     under that key (each object names its key and version and carries a
//     checksum), read right after the outcome;
//   - lost: a delivered fetch does not serve a key a delivered publish stored
//     before it was submitted (the store is durable);
//   - outcome: a delivered outcome has one served bit per row, serves only
//     masked-in rows, and does not change when cancelled afterwards.
//
// Memory is reused the way a user would: a slot goes back to the pool when
// its attempt has an outcome and Quiesce is true, stays out for good when
// access is UNPROVABLE, and everything comes back after a shutdown that
// returned no labels. A late write into reused memory is therefore seen only
// if it corrupts an object that is later published and fetched.
//
// Separately, and never as a naive finding, the memory is sim/arena, whose
// touch checks record S-NO-LATE-ACCESS: [Report.Arena] is the first such
// record, i.e. what an instrumented allocator (poisoning, guard pages) would
// add. docs/ZOO.md shows both.
//
// The driver runs the moderate fault mix memdriver.Default (no faults that
// hold resources until shutdown), on a durable store.
package realstress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/backend/realwait"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// Options shape a run. Zero fields take defaults.
type Options struct {
	Duration time.Duration // whole run (default 5 s)
	Round    time.Duration // one backend's lifetime (default 500 ms)
	Wait     time.Duration // timeout for an outcome, Quiesce, Shutdown (default 3 s)
	Workers  int           // goroutines issuing ops (default 4)
	Seed     uint64
	_        struct{}
}

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Round <= 0 {
		o.Round = 500 * time.Millisecond
	}
	if o.Wait <= 0 {
		o.Wait = 3 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	return o
}

// Finding is one failed check.
type Finding struct {
	Check  string        // panic, timeout, data, lost, outcome, setup; or the arena's rule
	At     time.Duration // since the run started
	Detail string
}

func (f Finding) String() string { return fmt.Sprintf("%s after %v: %s", f.Check, f.At, f.Detail) }

// Report is what a run found.
type Report struct {
	Naive   *Finding // first naive finding, nil if none
	Arena   *Finding // first arena violation, nil if none
	Ops     int64    // attempts admitted
	Rounds  int
	Elapsed time.Duration
}

const (
	slotBytes = 64
	slots     = 96 // per region
	nKeys     = 24
)

var regionLabels = []string{"R0", "R1"}

type slotRef struct {
	a    *arena.Arena
	slot int
}

type run struct {
	opts  Options
	start time.Time
	ctx   context.Context
	stop  context.CancelFunc
	rt    *realtime.Runtime
	store *memdriver.Store
	mem   []*arena.Arena

	mu       sync.Mutex
	free     []slotRef
	leaked   []slotRef
	versions map[string][]uint64 // every version attempted per key
	present  map[string]bool     // keys a delivered publish stored
	naive    *Finding
	arenaF   *Finding
	nextVer  atomic.Uint64
	nextLoan atomic.Uint64
	ops      atomic.Int64
}

// Run runs the stress test until it finds something or opts.Duration passes.
func Run(opts Options) Report {
	opts = opts.withDefaults()
	r := &run{opts: opts, start: time.Now(), versions: map[string][]uint64{}, present: map[string]bool{}}
	r.ctx, r.stop = context.WithTimeout(context.Background(), opts.Duration)
	defer r.stop()
	r.rt = realtime.New(opts.Seed)
	defer r.rt.Close()
	r.store, _ = memdriver.NewStore(memdriver.StoreOptions{})
	for _, l := range regionLabels {
		a := arena.New(l, slots, slotBytes, arena.Options{})
		r.mem = append(r.mem, a)
		for s := range slots {
			r.free = append(r.free, slotRef{a, s})
		}
	}
	rounds := 0
	for r.ctx.Err() == nil {
		r.round(rounds)
		rounds++
		r.pollArena()
	}
	r.pollArena()
	r.mu.Lock()
	defer r.mu.Unlock()
	return Report{Naive: r.naive, Arena: r.arenaF, Ops: r.ops.Load(), Rounds: rounds, Elapsed: time.Since(r.start)}
}

func (r *run) find(check, format string, args ...any) {
	f := &Finding{Check: check, At: time.Since(r.start), Detail: fmt.Sprintf(format, args...)}
	r.mu.Lock()
	if r.naive == nil {
		r.naive = f
	}
	r.mu.Unlock()
	r.stop()
}

func (r *run) pollArena() {
	for _, a := range r.mem {
		if v := a.Violations(); len(v) > 0 {
			r.mu.Lock()
			if r.arenaF == nil {
				r.arenaF = &Finding{Check: v[0].Rule.String(), At: time.Since(r.start), Detail: v[0].Detail + ": " + v[0].Touch.String()}
			}
			r.mu.Unlock()
			return
		}
	}
}

// round builds a backend on fresh drivers over the same memory and store,
// runs the workers for opts.Round and shuts the backend down while they may
// still be busy.
func (r *run) round(n int) {
	cfg := memdriver.Config{Name: fmt.Sprint("d", n), Faults: memdriver.Default(),
		Caps: drivers.Capabilities{MaxRowsPerOp: 1 + n%4, AbsentIsMiss: n%3 != 0, CanFetch: true, CanPublish: true, CanCancel: true}}
	var d drivers.Driver
	if n%2 == 0 {
		d = memdriver.New(r.rt, r.store, cfg)
	} else {
		d = memdriver.NewTogether(r.rt, r.store, cfg)
	}
	w := realwait.New(r.rt)
	var b *backend.Backend
	var err error
	regions := make([]drivers.Region, len(r.mem))
	for i, a := range r.mem {
		regions[i] = a.Region()
	}
	r.rt.Do(func() {
		b, err = backend.New(r.rt, d, regions, backend.Config{Name: cfg.Name, MaxCallsInFlight: 4, MaxQueuedCalls: 16,
			DrainTimeout: 50 * time.Millisecond, OnChange: w.Notify})
	})
	if b == nil {
		r.find("setup", "backend.New: %v", err)
		return
	}
	handles := map[string]drivers.Handle{}
	r.rt.Do(func() {
		for _, l := range regionLabels {
			if h, ok := b.Handle(l); ok {
				handles[l] = h
			}
		}
	})
	for _, a := range r.mem {
		if _, ok := handles[a.Label()]; ok {
			a.SetRegistered(true)
		}
	}
	roundCtx, cancel := context.WithTimeout(r.ctx, r.opts.Round)
	var wg sync.WaitGroup
	for i := range r.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					r.find("panic", "worker: %v", p)
				}
			}()
			rnd := rand.New(rand.NewPCG(r.opts.Seed, uint64(n)<<8|uint64(i)))
			for roundCtx.Err() == nil && len(handles) > 0 {
				r.op(rnd, b, w, handles)
			}
		}()
	}
	<-roundCtx.Done()
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), r.opts.Wait)
	labels, serr := realwait.Shutdown(sctx, r.rt, b)
	scancel()
	if serr == nil && len(labels) == 0 {
		// Everything released: the memory is ours again, from now on.
		for _, a := range r.mem {
			a.SetRegistered(false)
		}
	}
	wg.Wait()
	if serr != nil {
		r.find("timeout", "round %d: shutdown: %v", n, serr)
		return
	}
	if len(labels) == 0 {
		r.mu.Lock()
		for _, s := range r.leaked {
			s.a.Release(s.slot)
		}
		r.free = append(r.free, r.leaked...)
		r.leaked = nil
		r.mu.Unlock()
	}
}

func (r *run) take(n int, loan uint64) []slotRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.free) < n {
		return nil
	}
	out := append([]slotRef(nil), r.free[len(r.free)-n:]...)
	r.free = r.free[:len(r.free)-n]
	for _, s := range out {
		s.a.Lend(s.slot, loan)
	}
	return out
}

func (r *run) giveBack(ss []slotRef, leak bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range ss {
		if leak {
			s.a.Retain(s.slot)
			r.leaked = append(r.leaked, s)
		} else {
			s.a.Release(s.slot)
			r.free = append(r.free, s)
		}
	}
}

// op is one random publish or fetch, sometimes cancelled, checked and
// cleaned up.
func (r *run) op(rnd *rand.Rand, b *backend.Backend, w *realwait.Waiter, handles map[string]drivers.Handle) {
	n := 1 + rnd.IntN(6)
	loan := r.nextLoan.Add(1)
	ss := r.take(n, loan)
	if ss == nil {
		time.Sleep(100 * time.Microsecond)
		return
	}
	dir := drivers.Fetch
	if rnd.IntN(2) == 0 {
		dir = drivers.Publish
	}
	v := drivers.View{Rows: make([]drivers.Row, n), Mask: make([]bool, n)}
	known := make([]bool, n)
	for i, s := range ss {
		key := fmt.Sprintf("k%02d", rnd.IntN(nKeys))
		if i > 0 && rnd.IntN(5) == 0 {
			key = v.Rows[i-1].Key // repeated keys in a view are legal input
		}
		v.Rows[i] = drivers.Row{Key: key, Handle: handles[s.a.Label()], Slot: s.slot, Position: i}
		v.Mask[i] = rnd.IntN(7) != 0
		if dir == drivers.Publish {
			s.a.Fill(s.slot, r.object(key))
		}
	}
	r.mu.Lock()
	for i, row := range v.Rows {
		known[i] = r.present[row.Key]
	}
	r.mu.Unlock()
	var a *backend.Attempt
	var err error
	if dir == drivers.Publish {
		a, err = realwait.Publish(r.rt, b, v)
	} else {
		a, err = realwait.Fetch(r.rt, b, v)
	}
	if err != nil {
		r.giveBack(ss, false)
		if errors.Is(err, backend.ErrClosed) || errors.Is(err, realwait.ErrStopped) {
			time.Sleep(time.Millisecond)
		}
		return
	}
	r.ops.Add(1)
	if rnd.IntN(4) == 0 {
		time.Sleep(time.Duration(rnd.IntN(300)) * time.Microsecond)
		r.rt.Do(func() { a.Cancel() })
	}
	wctx, cancel := context.WithTimeout(context.Background(), r.opts.Wait)
	defer cancel()
	o, err := w.Outcome(wctx, a)
	if err != nil {
		if !errors.Is(err, realwait.ErrStopped) {
			r.find("timeout", "attempt %d (%v): no outcome: %v", a.ID(), dir, err)
		}
		return // its slots stay out: their fate is unknown
	}
	if o.State == backend.Delivered {
		r.checkDelivered(a, dir, v, o, ss, known)
		if rnd.IntN(10) == 0 {
			var after backend.Outcome
			r.rt.Do(func() { a.Cancel(); after = a.Outcome() })
			if after.State != o.State {
				r.find("outcome", "attempt %d: cancel after %v changed the outcome to %v", a.ID(), o, after)
			}
		}
	}
	switch err := w.Quiesce(wctx, b, a); {
	case errors.Is(err, realwait.ErrUnprovable):
		r.giveBack(ss, true)
	case errors.Is(err, realwait.ErrStopped):
	case err != nil:
		r.find("timeout", "attempt %d (%v, %v): access never ended: %v", a.ID(), dir, o, err)
	default:
		r.giveBack(ss, false)
	}
	time.Sleep(time.Duration(rnd.IntN(200)) * time.Microsecond)
}

func (r *run) checkDelivered(a *backend.Attempt, dir drivers.Direction, v drivers.View, o backend.Outcome, ss []slotRef, known []bool) {
	if len(o.Served) != len(v.Rows) {
		r.find("outcome", "attempt %d: %d served bits for %d rows", a.ID(), len(o.Served), len(v.Rows))
		return
	}
	for i, served := range o.Served {
		key := v.Rows[i].Key
		switch {
		case served && !v.Mask[i]:
			r.find("outcome", "attempt %d (%v): masked-out row %d served", a.ID(), dir, i)
		case dir == drivers.Publish && served:
			r.mu.Lock()
			r.present[key] = true
			r.mu.Unlock()
		case dir == drivers.Fetch && served:
			if err := r.checkObject(key, ss[i].a.Peek(ss[i].slot)); err != nil {
				r.find("data", "attempt %d: row %d (key %s): %v", a.ID(), i, key, err)
			}
		case dir == drivers.Fetch && v.Mask[i] && known[i]:
			r.find("lost", "attempt %d: key %s was stored before the fetch, which delivered it as not served", a.ID(), key)
		}
	}
}

// object is a new version of key's object: key hash, version, filler,
// checksum.
func (r *run) object(key string) []byte {
	ver := r.nextVer.Add(1)
	r.mu.Lock()
	r.versions[key] = append(r.versions[key], ver)
	r.mu.Unlock()
	b := make([]byte, slotBytes)
	kh := keyHash(key)
	binary.LittleEndian.PutUint64(b[0:], kh)
	binary.LittleEndian.PutUint64(b[8:], ver)
	x := kh ^ ver*0x9e3779b97f4a7c15
	for i := 16; i < slotBytes-8; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	binary.LittleEndian.PutUint64(b[slotBytes-8:], sum(b[:slotBytes-8]))
	return b
}

func (r *run) checkObject(key string, b []byte) error {
	if len(b) != slotBytes || binary.LittleEndian.Uint64(b[slotBytes-8:]) != sum(b[:slotBytes-8]) {
		return fmt.Errorf("corrupt object % x", b[:16])
	}
	if kh := binary.LittleEndian.Uint64(b[0:]); kh != keyHash(key) {
		return fmt.Errorf("object of another key (hash %x)", kh)
	}
	ver := binary.LittleEndian.Uint64(b[8:])
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.versions[key] {
		if v == ver {
			return nil
		}
	}
	return fmt.Errorf("version %d was never published under this key", ver)
}

func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

func sum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
