// Package redisbroken holds the broken Redis drivers, the Redis analogues of
// SPEC §7's broken drivers: each is the real driver of package
// drivers/redisdriver behind a wrapper with exactly one bug, so that
// certification can show the conformance suite catches it on its rule, in
// real time too. The bugs live here, as wrappers around the driver, its
// calls, its change callbacks and the region memory it touches;
// drivers/redisdriver itself is never broken on purpose.
//
// Unlike the simulated broken drivers of package broken, these run on real
// goroutines (the driver's own) and a real network; the wrappers start no
// goroutine of their own.
package redisbroken

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/redisdriver"
)

// Name names one broken Redis driver.
type Name string

// The broken Redis drivers, sorted.
const (
	// MissAsFault reports an absent key (nil GET) as FAULT instead of MISS
	// (D-MISS-HONEST).
	MissAsFault Name = "MissAsFault"
	// OverwritesOnPublish stores every PUBLISH row again with a plain SET
	// (no NX) once the call is done: a PUBLISH of a present key replaces it
	// (D-SUB-4, first writer wins).
	OverwritesOnPublish Name = "OverwritesOnPublish"
	// WritesAfterReport reports a FETCH row OK and signals it before writing
	// its slot (D-STATUS / D-CB-1: the row claims the object is in the slot
	// while it is not yet; a reader that acts on the result races the
	// write).
	WritesAfterReport Name = "WritesAfterReport"
)

// ErrUnknown is returned for a name that is not a broken Redis driver.
var ErrUnknown = errors.New("unknown broken Redis driver")

// Rule is the SPEC id the driver breaks.
func (n Name) Rule() string {
	switch n {
	case MissAsFault:
		return "D-MISS-HONEST"
	case OverwritesOnPublish:
		return "D-SUB-4"
	case WritesAfterReport:
		return "D-STATUS"
	}
	return ""
}

// Names lists every broken Redis driver, sorted.
func Names() []Name { return []Name{MissAsFault, OverwritesOnPublish, WritesAfterReport} }

// New connects the Redis driver of cfg (redisdriver.New) and returns it as
// the broken driver n.
func New(n Name, cfg redisdriver.Config) (drivers.Driver, error) {
	if !slices.Contains(Names(), n) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, n, strings.Join(names(), ", "))
	}
	d, err := redisdriver.New(cfg)
	if err != nil {
		return nil, err
	}
	w := &driver{Driver: d, name: n, cfg: cfg, calls: map[drivers.CallID]*call{}, read: map[drivers.Toucher][]byte{}}
	w.cond = sync.NewCond(&w.mu)
	if n == OverwritesOnPublish {
		w.client, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Addr}, DisableCache: true, DisableRetry: true})
		if err != nil {
			d.Shutdown(context.Background())
			return nil, fmt.Errorf("redisbroken: connect to %s: %w", cfg.Addr, err)
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

// driver is a broken Redis driver: the real driver, embedded (its probes
// and everything the bug leaves alone stay as they are), behind the bug.
type driver struct {
	*redisdriver.Driver
	name   Name
	cfg    redisdriver.Config
	client rueidis.Client // OverwritesOnPublish: its own connection for the plain SETs

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a call is registered
	calls    map[drivers.CallID]*call
	read     map[drivers.Toucher][]byte // OverwritesOnPublish: what each PUBLISH row read
	shutting bool
}

// call is a call of a broken Redis driver.
type call struct {
	drivers.Call // set once Submit returned (d.mu)
	d            *driver
	b            drivers.RowBatch
	user         func()
	early        []bool // WritesAfterReport: rows reported OK before their slot was written (d.mu)
	stored       bool   // OverwritesOnPublish: the plain SETs were sent (d.mu)
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
	case WritesAfterReport:
		c.d.mu.Lock()
		for i, e := range c.early {
			if e && i < len(res) {
				res[i] = drivers.OK
			}
		}
		c.d.mu.Unlock()
	}
	return res
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

// Write implements drivers.Memory: WritesAfterReport reports the row OK and
// signals it first (the real driver writes a FETCH slot whole, once).
func (m *memory) Write(by drivers.Toucher, off int, p []byte) error {
	if m.d.name == WritesAfterReport {
		m.d.reportEarly(by)
	}
	return m.Memory.Write(by, off, p)
}

func (d *driver) reportEarly(by drivers.Toucher) {
	d.mu.Lock()
	for d.calls[by.Call] == nil {
		d.cond.Wait()
	}
	c, shut := d.calls[by.Call], d.shutting
	if by.Row >= 0 && by.Row < len(c.early) {
		c.early[by.Row] = true
	}
	d.mu.Unlock()
	if !shut {
		c.user()
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
	c := &call{d: d, b: drivers.RowBatch{Dir: b.Dir, Rows: slices.Clone(b.Rows)}, user: onChange, early: make([]bool, len(b.Rows))}
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
// has its result, every OK row is stored again with a plain SET, replacing
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
	ctx := context.Background()
	if d.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Timeout)
		defer cancel()
	}
	for i, st := range res {
		if st != drivers.OK || vals[i] == nil {
			continue
		}
		set := client.B().Set().Key(d.cfg.Prefix + c.b.Rows[i].Key).Value(rueidis.BinaryString(vals[i]))
		cmd := set.Build()
		if d.cfg.TTL > 0 {
			cmd = set.Px(d.cfg.TTL).Build()
		}
		_ = client.Do(ctx, cmd).Error()
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
