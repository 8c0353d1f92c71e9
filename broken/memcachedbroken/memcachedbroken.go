// Package memcachedbroken holds the broken memcached drivers, the memcached
// analogues of SPEC §7's broken drivers: each is the real driver of package
// drivers/memcachedriver behind a wrapper with exactly one bug, so that
// certification can show the conformance suite catches it on its rule, in
// real time and against a real server. The bugs live here, as wrappers
// around the driver, its calls, its change callbacks and the region memory
// it touches; drivers/memcachedriver itself is never broken on purpose.
//
// Like package broken/redisbroken, these run on real goroutines (the
// driver's own) and a real network; the wrappers start no goroutine of
// their own.
package memcachedbroken

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memcachedriver"
)

// Name names one broken memcached driver.
type Name string

// The broken memcached drivers, sorted.
const (
	// EndsBeforeWrite reports a FETCH call's access ENDED, and signals it,
	// just before its first slot write — the write then lands in memory the
	// owner may already have reused (D-ACCESS-END).
	EndsBeforeWrite Name = "EndsBeforeWrite"
	// MissAsFault reports an absent key (no item in the multi-get's answer)
	// as FAULT instead of MISS (D-MISS-HONEST).
	MissAsFault Name = "MissAsFault"
	// OverwritesOnPublish stores every OK PUBLISH row again with a plain
	// `set` (not `add`) before it tells: a PUBLISH of a present key replaces
	// the first writer's object (D-SUB-4).
	OverwritesOnPublish Name = "OverwritesOnPublish"
	// TimeoutClaimsEnded lets a FETCH call's deadline pass while the
	// transfer is still going (at its first slot write) and reports what a
	// timeout looks like — every row FAULT — with access ENDED instead of
	// UNPROVABLE; the transfer then goes on writing the slots. A timeout is
	// not evidence (D-ACCESS).
	TimeoutClaimsEnded Name = "TimeoutClaimsEnded"
)

// ErrUnknown is returned for a name that is not a broken memcached driver.
var ErrUnknown = errors.New("unknown broken memcached driver")

// Rule is the SPEC id the driver breaks.
func (n Name) Rule() string {
	switch n {
	case EndsBeforeWrite:
		return "D-ACCESS-END"
	case MissAsFault:
		return "D-MISS-HONEST"
	case OverwritesOnPublish:
		return "D-SUB-4"
	case TimeoutClaimsEnded:
		return "D-ACCESS"
	}
	return ""
}

// Names lists every broken memcached driver, sorted.
func Names() []Name {
	return []Name{EndsBeforeWrite, MissAsFault, OverwritesOnPublish, TimeoutClaimsEnded}
}

// lieSeenWait bounds how long a lying write waits for someone to read the
// lie: long enough for a callback's reader on a loaded machine, short enough
// that a driver nobody reads still finishes.
const lieSeenWait = 2 * time.Second

// New connects the memcached driver of cfg (memcachedriver.New) and returns
// it as the broken driver n.
func New(n Name, cfg memcachedriver.Config) (drivers.Driver, error) {
	if !slices.Contains(Names(), n) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, n, strings.Join(names(), ", "))
	}
	d, err := memcachedriver.New(cfg)
	if err != nil {
		return nil, err
	}
	w := &driver{Driver: d, name: n, cfg: cfg, calls: map[drivers.CallID]*call{}, read: map[drivers.Toucher][]byte{}}
	w.cond = sync.NewCond(&w.mu)
	if n == OverwritesOnPublish {
		w.client = memcache.New(cfg.Addr)
		if cfg.NetTimeout > 0 {
			w.client.Timeout = cfg.NetTimeout
		}
	}
	return w, nil
}

func names() []string {
	var out []string
	for _, n := range Names() {
		out = append(out, string(n))
	}
	return out
}

// driver is a broken memcached driver: the real driver, embedded (its
// probes and everything the bug leaves alone stay as they are), behind the
// bug.
type driver struct {
	*memcachedriver.Driver
	name   Name
	cfg    memcachedriver.Config
	client *memcache.Client // OverwritesOnPublish: its own client for the plain sets

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a call is registered
	calls    map[drivers.CallID]*call
	read     map[drivers.Toucher][]byte // OverwritesOnPublish: what each PUBLISH row read
	shutting bool
}

// call is a call of a broken memcached driver.
type call struct {
	drivers.Call // set once Submit returned (d.mu)
	d            *driver
	b            drivers.RowBatch
	user         func()
	lied         bool          // EndsBeforeWrite, TimeoutClaimsEnded: ENDED claimed (d.mu)
	seen         chan struct{} // closed once Access returned the lie
	seenOnce     sync.Once
	stored       bool // OverwritesOnPublish: the plain sets were sent (d.mu)
}

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
	switch c.d.name {
	case MissAsFault:
		if c.b.Dir == drivers.Fetch {
			for i, s := range res {
				if s == drivers.Miss {
					res[i] = drivers.Fault // an absent key answered FAULT (D-MISS-HONEST)
				}
			}
		}
	case TimeoutClaimsEnded:
		c.d.mu.Lock()
		lied := c.lied
		c.d.mu.Unlock()
		if lied {
			for i := range res {
				res[i] = drivers.Fault // what the deadline answered
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
	return in.Access()
}

// memory is region memory as the real driver touches it.
type memory struct {
	drivers.Memory
	d *driver
}

// Read implements drivers.Memory: OverwritesOnPublish keeps a copy of what
// a PUBLISH row read.
func (m *memory) Read(by drivers.Toucher, off int, p []byte) error {
	err := m.Memory.Read(by, off, p)
	if err == nil && m.d.name == OverwritesOnPublish {
		m.d.mu.Lock()
		m.d.read[by] = slices.Clone(p)
		m.d.mu.Unlock()
	}
	return err
}

// Write implements drivers.Memory: EndsBeforeWrite and TimeoutClaimsEnded
// claim ENDED (and signal it) before the call's first slot write, then wait
// until someone read the claim, so that the write is seen to come after it.
func (m *memory) Write(by drivers.Toucher, off int, p []byte) error {
	if m.d.name == EndsBeforeWrite || m.d.name == TimeoutClaimsEnded {
		m.d.lie(by)
	}
	return m.Memory.Write(by, off, p)
}

func (d *driver) lie(by drivers.Toucher) {
	d.mu.Lock()
	for d.calls[by.Call] == nil {
		d.cond.Wait()
	}
	c, shut := d.calls[by.Call], d.shutting
	first := !c.lied
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

// Register implements drivers.Driver.
func (d *driver) Register(r drivers.Region) (drivers.Handle, error) {
	if r.Mem != nil && d.name != MissAsFault {
		r.Mem = &memory{Memory: r.Mem, d: d}
	}
	return d.Driver.Register(r)
}

// Submit implements drivers.Driver.
func (d *driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if onChange == nil {
		onChange = func() {}
	}
	c := &call{d: d, b: drivers.RowBatch{Dir: b.Dir, Rows: slices.Clone(b.Rows)}, user: onChange, seen: make(chan struct{})}
	cb := onChange
	if d.name == OverwritesOnPublish && b.Dir == drivers.Publish {
		cb = func() {
			d.storeAgain(c)
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
	d.mu.Unlock()
	return c, nil
}

// storeAgain is OverwritesOnPublish (D-SUB-4): once every row of a PUBLISH
// has its result, every OK row is stored again with a plain set, replacing
// the object of a key the store already held, before the callback tells.
func (d *driver) storeAgain(c *call) {
	in := c.inner()
	res := in.Results()
	if !in.Access().Evidenced() || slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
		return
	}
	d.mu.Lock()
	if c.stored {
		d.mu.Unlock()
		return
	}
	c.stored = true
	client := d.client
	vals := make([][]byte, len(res))
	for i := range res {
		by := drivers.Toucher{Call: in.ID(), Row: i}
		vals[i] = d.read[by]
		delete(d.read, by)
	}
	d.mu.Unlock()
	if client == nil {
		return
	}
	var exp int32
	if d.cfg.TTL > 0 {
		exp = int32(d.cfg.TTL / time.Second)
	}
	for i, st := range res {
		if st != drivers.OK || vals[i] == nil {
			continue
		}
		_ = client.Set(&memcache.Item{Key: d.ItemKey(c.b.Rows[i].Key), Value: vals[i], Expiration: exp})
	}
}

// Shutdown implements drivers.Driver.
func (d *driver) Shutdown(ctx context.Context) []string {
	d.mu.Lock()
	d.shutting = true
	d.mu.Unlock()
	labels := d.Driver.Shutdown(ctx) // no callback runs after it returned
	d.mu.Lock()
	client := d.client
	d.client = nil
	d.mu.Unlock()
	if client != nil {
		client.Close()
	}
	return labels
}
