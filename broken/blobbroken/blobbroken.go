// Package blobbroken holds the broken blob drivers, the object-store
// analogues of SPEC §7's broken drivers: each is the real driver of
// package drivers/blobdriver behind a wrapper with exactly one bug, so that
// certification can show the conformance suite catches it on its rule, in
// real time and against a real bucket (a directory, or S3 over loopback).
// The bugs live here, as wrappers around the driver, its calls, its change
// callbacks and the region memory it touches; drivers/blobdriver itself is
// never broken on purpose.
//
// Like package broken/memcachedbroken, these run on the driver's own
// goroutines and real I/O; the wrappers start no goroutine of their own.
package blobbroken

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
)

// Name names one broken blob driver.
type Name string

// The broken blob drivers, sorted.
const (
	// EndsBeforeWrite reports a FETCH call's access ENDED, and signals it,
	// just before its first slot write — the write then lands in memory
	// the owner may already have reused (D-ACCESS-END).
	EndsBeforeWrite Name = "EndsBeforeWrite"
	// MissAsFault reports an absent key (NotFound) as FAULT instead of
	// MISS (D-MISS-HONEST).
	MissAsFault Name = "MissAsFault"
	// OverwritesOnPublish writes every OK PUBLISH row again without
	// IfNotExist before it tells: a PUBLISH of a present key replaces the
	// first writer's object, last writer wins (D-SUB-4).
	OverwritesOnPublish Name = "OverwritesOnPublish"
	// ShortReadOK answers OK for a FETCH of an object whose size is not
	// the slot's: the driver said FAULT, the wrapper reads the object
	// itself, copies what fits into the slot and reports the row OK
	// (D-STATUS).
	ShortReadOK Name = "ShortReadOK"
	// TornPublish makes a PUBLISH row's object visible before all its bytes
	// are written: a non-atomic write puts the slot's first half and zeros
	// under the key (in Submit, once the driver took the batch), leaves it
	// there until a reader has fetched it, and only then lets the driver
	// write the whole object (D-SUB-5).
	TornPublish Name = "TornPublish"
)

// ErrUnknown is returned for a name that is not a broken blob driver.
var ErrUnknown = errors.New("unknown broken blob driver")

// Rule is the SPEC id the driver breaks.
func (n Name) Rule() string {
	switch n {
	case EndsBeforeWrite:
		return "D-ACCESS-END"
	case MissAsFault:
		return "D-MISS-HONEST"
	case OverwritesOnPublish:
		return "D-SUB-4"
	case ShortReadOK:
		return "D-STATUS"
	case TornPublish:
		return "D-SUB-5"
	}
	return ""
}

// Names lists every broken blob driver, sorted.
func Names() []Name {
	return []Name{EndsBeforeWrite, MissAsFault, OverwritesOnPublish, ShortReadOK, TornPublish}
}

// lieSeenWait bounds how long a lying write waits for someone to read the
// lie: long enough for a callback's reader on a loaded machine, short
// enough that a driver nobody reads still finishes.
const lieSeenWait = 2 * time.Second

// tornFor bounds how long TornPublish leaves a torn object visible: until
// a FETCH of the key submitted after the torn write has settled (so that a
// reader racing the PUBLISH does see it, however loaded the machine), or
// this long.
const tornFor = 2 * time.Second

// New opens the blob driver of cfg (blobdriver.New) and returns it as the
// broken driver n.
func New(n Name, cfg blobdriver.Config) (drivers.Driver, error) {
	if !slices.Contains(Names(), n) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, n, strings.Join(names(), ", "))
	}
	d, err := blobdriver.New(cfg)
	if err != nil {
		return nil, err
	}
	w := &driver{Driver: d, name: n, calls: map[drivers.CallID]*call{}, read: map[drivers.Toucher][]byte{}, regions: map[drivers.Handle]drivers.Region{}, waiters: map[string][]*waiter{}}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
}

func names() []string {
	var out []string
	for _, n := range Names() {
		out = append(out, string(n))
	}
	return out
}

// driver is a broken blob driver: the real driver, embedded (its probes
// and everything the bug leaves alone stay as they are), behind the bug.
type driver struct {
	*blobdriver.Driver
	name Name

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a call is registered
	calls   map[drivers.CallID]*call
	read    map[drivers.Toucher][]byte        // OverwritesOnPublish: what each PUBLISH row read
	regions map[drivers.Handle]drivers.Region // ShortReadOK: the registered regions
	// TornPublish: FETCH submissions are numbered (seq); a torn object
	// waits in waiters[key] for a FETCH of key numbered after it.
	seq      uint64
	waiters  map[string][]*waiter
	shutting bool
}

// waiter is a torn object waiting for a reader.
type waiter struct {
	after uint64        // a FETCH numbered after this one read it
	read  chan struct{} // closed then
}

// call is a call of a broken blob driver.
type call struct {
	drivers.Call // set once Submit returned (d.mu)
	d            *driver
	b            drivers.RowBatch
	user         func()
	lied         bool          // EndsBeforeWrite: ENDED claimed (d.mu)
	seen         chan struct{} // closed once Access returned the lie
	seenOnce     sync.Once
	stored       bool // OverwritesOnPublish: the plain writes were sent (d.mu)
	// TornPublish: torn[i] waits for a reader of row i's torn object
	// (nil: row i was not torn); tornDone is closed once Submit has made
	// them (d.mu).
	torn     []*waiter
	tornDone chan struct{}
	// ShortReadOK: the wrapper has made its slot writes and fixed its
	// answer (fixRes); until then the call shows PENDING (d.mu).
	fixed  bool
	fixRes []drivers.Status
}

// shortRead: the call is a ShortReadOK FETCH.
func (c *call) shortRead() bool { return c.d.name == ShortReadOK && c.b.Dir == drivers.Fetch }

// inner is the real driver's call, waiting for Submit to return: the real
// driver may call back (and touch memory) before it does.
func (c *call) inner() drivers.Call {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	for c.Call == nil {
		c.d.cond.Wait()
	}
	return c.Call
}

// Results implements drivers.Call.
func (c *call) Results() []drivers.Status {
	res := c.inner().Results()
	if c.shortRead() {
		c.d.mu.Lock()
		defer c.d.mu.Unlock()
		if c.fixed {
			return slices.Clone(c.fixRes)
		}
		for i, s := range res {
			if s == drivers.Fault {
				res[i] = drivers.Pending // not told until the wrapper looked
			}
		}
		return res
	}
	if c.d.name == MissAsFault && c.b.Dir == drivers.Fetch {
		for i, s := range res {
			if s == drivers.Miss {
				res[i] = drivers.Fault // an absent key answered FAULT (D-MISS-HONEST)
			}
		}
	}
	return res
}

// Access implements drivers.Call: a lying call says ENDED for good.
func (c *call) Access() drivers.Access {
	in := c.inner()
	c.d.mu.Lock()
	lied := c.lied
	c.d.mu.Unlock()
	if lied {
		c.seenOnce.Do(func() { close(c.seen) })
		return drivers.AccessEnded
	}
	acc := in.Access()
	if c.shortRead() {
		c.d.mu.Lock()
		fixed := c.fixed
		c.d.mu.Unlock()
		if !fixed {
			return drivers.AccessPending // the wrapper may still write the slots
		}
	}
	return acc
}

// memory is region memory as the real driver touches it.
type memory struct {
	drivers.Memory
	d *driver
}

// Read implements drivers.Memory: OverwritesOnPublish keeps a copy of what
// a PUBLISH row read; TornPublish tears the row's object first.
func (m *memory) Read(by drivers.Toucher, off int, p []byte) error {
	err := m.Memory.Read(by, off, p)
	if err != nil {
		return err
	}
	switch m.d.name {
	case OverwritesOnPublish:
		m.d.mu.Lock()
		m.d.read[by] = slices.Clone(p)
		m.d.mu.Unlock()
	case TornPublish:
		m.d.untear(by)
	}
	return nil
}

// Write implements drivers.Memory: EndsBeforeWrite claims ENDED (and
// signals it) before the call's first slot write, then waits until someone
// read the claim, so that the write is seen to come after it.
func (m *memory) Write(by drivers.Toucher, off int, p []byte) error {
	if m.d.name == EndsBeforeWrite {
		m.d.lie(by)
	}
	return m.Memory.Write(by, off, p)
}

// callOf waits for the call a worker's touch belongs to.
func (d *driver) callOf(id drivers.CallID) *call {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.calls[id] == nil {
		d.cond.Wait()
	}
	return d.calls[id]
}

func (d *driver) lie(by drivers.Toucher) {
	c := d.callOf(by.Call)
	d.mu.Lock()
	first, shut := !c.lied, d.shutting
	c.lied = true
	d.mu.Unlock()
	if !first || shut {
		return
	}
	c.user()
	t := time.NewTimer(lieSeenWait)
	defer t.Stop()
	select {
	case <-c.seen:
	case <-t.C:
	}
}

// tear is TornPublish (D-SUB-5), run by Submit once the real driver took
// the PUBLISH (so the batch was valid): every row whose key is absent gets
// an object of the slot's size holding only the slot's first half (zeros
// after), written without IfNotExist — a write that is not atomic —,
// visible before the row's bytes are all written. The real worker, at its
// copy of the row (untear), waits until a FETCH of the key submitted after
// the torn write has settled (at most tornFor) and deletes the torn object,
// so that the driver's own write of the whole object goes through.
func (d *driver) tear(c *call, id drivers.CallID) {
	defer close(c.tornDone)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, row := range c.b.Rows {
		d.mu.Lock()
		reg, ok := d.regions[row.Handle]
		d.mu.Unlock()
		key := d.ObjectKey(row.Key)
		if !ok {
			continue
		}
		if exists, err := d.Bucket().Exists(ctx, key); exists || err != nil {
			continue
		}
		slot := make([]byte, reg.SlotBytes)
		if reg.Mem.Read(drivers.Toucher{Call: id, Row: i}, reg.SlotOffset(row.Slot), slot) != nil {
			continue
		}
		torn := make([]byte, len(slot))
		copy(torn, slot[:len(slot)/2])
		if d.Bucket().WriteAll(ctx, key, torn, nil) != nil {
			continue
		}
		d.mu.Lock()
		w := &waiter{after: d.seq, read: make(chan struct{})}
		d.waiters[row.Key] = append(d.waiters[row.Key], w)
		c.torn[i] = w
		d.mu.Unlock()
	}
}

// untear is the real worker at its copy of a PUBLISH row: a torn object of
// the row stays until a reader has seen it (bounded), then goes.
func (d *driver) untear(by drivers.Toucher) {
	c := d.callOf(by.Call)
	if c.b.Dir != drivers.Publish || by.Row >= len(c.b.Rows) {
		return
	}
	t := time.NewTimer(tornFor)
	defer t.Stop()
	select {
	case <-c.tornDone:
	case <-t.C:
		return
	}
	d.mu.Lock()
	w := c.torn[by.Row]
	d.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case <-w.read:
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Bucket().Delete(ctx, d.ObjectKey(c.b.Rows[by.Row].Key))
}

// fetched tells the torn objects of keys that the FETCH numbered n, which
// named them, has settled.
func (d *driver) fetched(keys []string, n uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		ws := d.waiters[k][:0]
		for _, w := range d.waiters[k] {
			if w.after < n {
				close(w.read)
			} else {
				ws = append(ws, w)
			}
		}
		d.waiters[k] = ws
	}
}

// Register implements drivers.Driver.
func (d *driver) Register(r drivers.Region) (drivers.Handle, error) {
	orig := r
	if r.Mem != nil && d.name != MissAsFault && d.name != ShortReadOK {
		r.Mem = &memory{Memory: r.Mem, d: d}
	}
	h, err := d.Driver.Register(r)
	if err == nil {
		d.mu.Lock()
		d.regions[h] = orig // the wrappers' own touches bypass the memory wrapper
		d.mu.Unlock()
	}
	return h, err
}

// Submit implements drivers.Driver.
func (d *driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if onChange == nil {
		onChange = func() {}
	}
	c := &call{d: d, b: drivers.RowBatch{Dir: b.Dir, Rows: slices.Clone(b.Rows)}, user: onChange, seen: make(chan struct{}),
		torn: make([]*waiter, len(b.Rows)), tornDone: make(chan struct{})}
	cb := onChange
	switch {
	case d.name == OverwritesOnPublish && b.Dir == drivers.Publish:
		cb = func() {
			d.storeAgain(c)
			onChange()
		}
	case c.shortRead():
		cb = func() {
			d.fixShort(c)
			onChange()
		}
	case d.name == TornPublish && b.Dir == drivers.Fetch:
		d.mu.Lock()
		d.seq++
		n := d.seq
		d.mu.Unlock()
		var once sync.Once
		cb = func() {
			if in := c.inner(); in.Access().Evidenced() && !slices.Contains(in.Results(), drivers.Pending) {
				once.Do(func() { d.fetched(c.b.Keys(), n) })
			}
			onChange()
		}
	}
	in, err := d.Driver.Submit(b, cb)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	c.Call = in
	d.calls[in.ID()] = c
	d.cond.Broadcast()
	shut := d.shutting
	d.mu.Unlock()
	if d.name == TornPublish && b.Dir == drivers.Publish && !shut {
		d.tear(c, in.ID())
	} else {
		close(c.tornDone)
	}
	return c, nil
}

// storeAgain is OverwritesOnPublish (D-SUB-4): once every row of a PUBLISH
// has its result, every OK row is written again without IfNotExist,
// replacing the object of a key the store already held, before the
// callback tells.
func (d *driver) storeAgain(c *call) {
	in := c.inner()
	res := in.Results()
	if !in.Access().Evidenced() || slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
		return
	}
	d.mu.Lock()
	if c.stored || d.shutting {
		d.mu.Unlock()
		return
	}
	c.stored = true
	vals := make([][]byte, len(res))
	for i := range res {
		by := drivers.Toucher{Call: in.ID(), Row: i}
		vals[i] = d.read[by]
		delete(d.read, by)
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, st := range res {
		if st != drivers.OK || vals[i] == nil {
			continue
		}
		_ = d.Bucket().WriteAll(ctx, d.ObjectKey(c.b.Rows[i].Key), vals[i], &blob.WriterOptions{ContentType: "application/octet-stream"})
	}
}

// fixShort is ShortReadOK (D-STATUS): once the real call is settled,
// every FAULT row whose object has another size than the slot gets what
// fits of the object written into its slot and is reported OK, before the
// callback tells.
func (d *driver) fixShort(c *call) {
	in := c.inner()
	res := in.Results()
	acc := in.Access()
	if !acc.Evidenced() || slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
		return
	}
	d.mu.Lock()
	if c.fixed {
		d.mu.Unlock()
		return
	}
	shut := d.shutting
	d.mu.Unlock()
	if acc == drivers.AccessEnded && !shut {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i, st := range res {
			row := c.b.Rows[i]
			d.mu.Lock()
			reg, ok := d.regions[row.Handle]
			d.mu.Unlock()
			if st != drivers.Fault || !ok {
				continue
			}
			obj, err := d.Bucket().ReadAll(ctx, d.ObjectKey(row.Key))
			if err != nil || len(obj) == reg.SlotBytes {
				continue
			}
			n := min(len(obj), reg.SlotBytes)
			if reg.Mem.Write(drivers.Toucher{Call: in.ID(), Row: i}, reg.SlotOffset(row.Slot), obj[:n]) == nil {
				res[i] = drivers.OK // a size mismatch reported OK
			}
		}
	}
	d.mu.Lock()
	c.fixRes, c.fixed = res, true
	d.mu.Unlock()
}

// Shutdown implements drivers.Driver.
func (d *driver) Shutdown(ctx context.Context) []string {
	d.mu.Lock()
	d.shutting = true
	d.mu.Unlock()
	labels := d.Driver.Shutdown(ctx) // no callback runs after it returned
	d.mu.Lock()
	for _, c := range d.calls {
		if c.shortRead() && !c.fixed && c.Call != nil {
			c.fixRes, c.fixed = c.Call.Results(), true
		}
	}
	d.mu.Unlock()
	return labels
}
