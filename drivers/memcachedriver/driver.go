package memcachedriver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/storesim/storesim/drivers"
)

// ErrConfig is wrapped by every refusal of a Config.
var ErrConfig = errors.New("memcachedriver: bad config")

// DefaultCaps is what a Config with zero Caps declares: 16 rows per call or
// lookup, absent keys answered MISS, both directions, cancellable.
var DefaultCaps = drivers.Capabilities{
	MaxRowsPerOp: 16,
	AbsentIsMiss: true,
	CanFetch:     true,
	CanPublish:   true,
	CanCancel:    true,
}

// DefaultMaxValueBytes is the largest object a server with memcached's
// default item limit (-I 1m, 1 MiB including the item header, the key and the
// CAS field) stores under any legal key (up to 250 bytes), with room to
// spare.
const DefaultMaxValueBytes = 1<<20 - 512

// DefaultNetTimeout is the client's socket read/write timeout when
// Config.NetTimeout is zero.
const DefaultNetTimeout = time.Second

// maxKey is memcached's key limit; hashedLen is the length of a hashed key
// after the prefix ("#" and 64 hex digits).
const (
	maxKey    = 250
	hashedLen = 1 + 2*sha256.Size
)

// maxTTL is the longest relative expiry memcached takes; a larger exptime
// is read as an absolute Unix time.
const maxTTL = 30 * 24 * time.Hour

// Config configures a Driver. Only keyed literals compile.
type Config struct {
	// Addr is the server, host:port. Required.
	Addr string
	// Prefix is prepended to every key (see the package doc, "Store
	// layout"). Two drivers with different prefixes never see each other's
	// objects. It must be a legal memcached key prefix (no space or control
	// byte) of at most 185 bytes, so that every hashed key fits; empty means
	// no prefix (Flush then refuses to run).
	Prefix string
	// TTL, when > 0, stores every published object with that expiry, in
	// whole seconds (at least 1 s, at most 30 days); an expired object
	// FETCHes as MISS. 0 stores without expiry. The server may evict any
	// object earlier (see the package doc, "Eviction and TTL").
	TTL time.Duration
	// Caps is the declaration; the zero value means DefaultCaps.
	Caps drivers.Capabilities
	// Timeout, when > 0, is every call's deadline: a call whose worker is
	// still running after Timeout reports FAULT for the rows without result
	// and, for a FETCH, access UNPROVABLE until the worker returns (see the
	// package doc, "Access evidence"). 0: no deadline beyond NetTimeout.
	Timeout time.Duration
	// NetTimeout is the client's socket read/write timeout (0:
	// DefaultNetTimeout): a server silent for that long fails the command
	// waiting for it (FAULT, or a lookup error).
	NetTimeout time.Duration
	// MaxValueBytes is the largest object the server stores (0:
	// DefaultMaxValueBytes, for the default -I 1m). Register refuses a
	// region whose SlotBytes is larger.
	MaxValueBytes int
	// MaxIdleConns is how many idle connections the client keeps (0: 32).
	// Every command in flight needs a connection of its own; beyond this
	// many, connections are dialled per command and closed after it.
	MaxIdleConns int
	_            struct{}
}

// Driver is the memcached driver. Create it with New; all methods are safe
// from any goroutine.
type Driver struct {
	cfg    Config
	caps   drivers.Capabilities
	client *memcache.Client

	shutMu sync.Mutex // serialises Shutdown calls

	mu           sync.Mutex
	regions      map[drivers.Handle]drivers.Region
	nextHandle   drivers.Handle
	calls        map[drivers.CallID]*call // every call not yet ENDED and settled
	nextCall     drivers.CallID
	draining     bool // admission stopped (Drain or Shutdown)
	stopping     bool // Shutdown began: registrations refused (D-REG-5)
	shut         bool // no callback may start any more (D-CB-5)
	clientClosed bool

	// cbs counts callbacks in flight. A callback is only started after
	// checking shut under mu (and Add happens under mu), so once Shutdown has
	// set shut and waited for cbs, no callback can run again (D-CB-5).
	cbs sync.WaitGroup
}

var _ drivers.Driver = (*Driver)(nil)

// New checks cfg, connects to cfg.Addr (one `version` round trip) and
// returns the driver.
func New(cfg Config) (*Driver, error) {
	caps := cfg.Caps
	if caps == (drivers.Capabilities{}) {
		caps = DefaultCaps
	}
	if cfg.NetTimeout == 0 {
		cfg.NetTimeout = DefaultNetTimeout
	}
	if cfg.MaxValueBytes == 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	if cfg.MaxIdleConns == 0 {
		cfg.MaxIdleConns = 32
	}
	switch {
	case cfg.Addr == "":
		return nil, fmt.Errorf("%w: Addr is empty", ErrConfig)
	case len(cfg.Prefix) > maxKey-hashedLen:
		return nil, fmt.Errorf("%w: Prefix is %d bytes, at most %d", ErrConfig, len(cfg.Prefix), maxKey-hashedLen)
	case !legalKey(cfg.Prefix):
		return nil, fmt.Errorf("%w: Prefix %q has a space or control byte", ErrConfig, cfg.Prefix)
	case cfg.TTL < 0:
		return nil, fmt.Errorf("%w: TTL %v < 0", ErrConfig, cfg.TTL)
	case cfg.TTL > 0 && (cfg.TTL < time.Second || cfg.TTL%time.Second != 0):
		return nil, fmt.Errorf("%w: TTL %v is not a whole number of seconds (memcached's granularity)", ErrConfig, cfg.TTL)
	case cfg.TTL > maxTTL:
		return nil, fmt.Errorf("%w: TTL %v above 30 days (memcached would read it as a Unix time)", ErrConfig, cfg.TTL)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v < 0", ErrConfig, cfg.Timeout)
	case cfg.NetTimeout < 0:
		return nil, fmt.Errorf("%w: NetTimeout %v < 0", ErrConfig, cfg.NetTimeout)
	case cfg.MaxValueBytes < 0:
		return nil, fmt.Errorf("%w: MaxValueBytes %d < 0", ErrConfig, cfg.MaxValueBytes)
	case cfg.MaxIdleConns < 0:
		return nil, fmt.Errorf("%w: MaxIdleConns %d < 0", ErrConfig, cfg.MaxIdleConns)
	}
	if err := caps.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	client := memcache.New(cfg.Addr)
	client.Timeout = cfg.NetTimeout
	client.MaxIdleConns = cfg.MaxIdleConns
	if err := client.Ping(); err != nil {
		client.Close()
		return nil, fmt.Errorf("memcachedriver: connect to %s: %w", cfg.Addr, err)
	}
	return &Driver{
		cfg: cfg, caps: caps, client: client,
		regions: map[drivers.Handle]drivers.Region{},
		calls:   map[drivers.CallID]*call{},
	}, nil
}

// legalKey is memcached's rule for the bytes of a key (the length is
// checked apart).
func legalKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] == 0x7f {
			return false
		}
	}
	return true
}

// ItemKey is the memcached key row key k is stored under: Prefix+k when that
// is a legal key and k does not begin with '#', else Prefix+"#"+hex(sha256(k))
// (see the package doc, "Store layout").
func (d *Driver) ItemKey(k string) string {
	if len(d.cfg.Prefix)+len(k) <= maxKey && !strings.HasPrefix(k, "#") && legalKey(k) {
		return d.cfg.Prefix + k
	}
	sum := sha256.Sum256([]byte(k))
	return d.cfg.Prefix + "#" + hex.EncodeToString(sum[:])
}

// Capabilities implements drivers.Driver.
func (d *Driver) Capabilities() drivers.Capabilities { return d.caps }

// Register implements drivers.Driver. Memcached has no memory registration,
// so this only adds the region to the driver's handle table; the store is
// never asked (D-REG-1). Handles count up from 1 and are never reused
// (D-REG-3). A region whose slots are larger than Config.MaxValueBytes is
// refused: the server would decline every object of it.
func (d *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		// D-REG-5: during or after shutdown. Registration is one step under
		// mu, so a registration racing Shutdown either completed before
		// stopping was set (and Shutdown then sees and releases it) or is
		// refused here.
		return 0, fmt.Errorf("%w: region %q: D-REG-5: driver is shutting down: %w",
			drivers.ErrRegistrationRefused, r.Label, drivers.ErrClosed)
	}
	if err := drivers.CheckGeometry(r); err != nil {
		return 0, fmt.Errorf("%w: D-REG-1: %w", drivers.ErrRegistrationRefused, err)
	}
	if r.SlotBytes > d.cfg.MaxValueBytes {
		return 0, fmt.Errorf("%w: region %q: slots of %d bytes exceed the server's item limit (MaxValueBytes %d; memcached -I)",
			drivers.ErrRegistrationRefused, r.Label, r.SlotBytes, d.cfg.MaxValueBytes)
	}
	for _, h := range d.handlesLocked() {
		o := d.regions[h]
		if o.Label == r.Label {
			return 0, fmt.Errorf("%w: D-REG-1: %w: region %q: label already registered (handle %d)",
				drivers.ErrRegistrationRefused, drivers.ErrBadGeometry, r.Label, h)
		}
		if r.Overlaps(o) {
			return 0, fmt.Errorf("%w: D-REG-1: region %q overlaps live region %q (handle %d)",
				drivers.ErrRegistrationRefused, r.Label, o.Label, h)
		}
	}
	d.nextHandle++
	d.regions[d.nextHandle] = r
	return d.nextHandle, nil
}

// Unregister implements drivers.Driver. A stale handle is a no-op (D-REG-3);
// a region named by a call whose access is not ENDED is refused with
// ErrBusy and stays live (D-REG-6). Removing a table entry cannot fail, so
// D-REG-4 never arises.
func (d *Driver) Unregister(h drivers.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.regions[h]
	if !ok {
		return nil
	}
	if id, acc, busy := d.busyLocked(h); busy {
		return fmt.Errorf("%w: D-REG-6: region %q (handle %d) is named by call %d whose access is %v",
			drivers.ErrBusy, r.Label, h, id, acc)
	}
	delete(d.regions, h)
	return nil
}

// Live reports whether h is a live registration (for the contract monitor).
func (d *Driver) Live(h drivers.Handle) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.regions[h]
	return ok
}

// Locked reports whether the driver's mutex is held right now. The contract
// monitor probes it from inside a change callback (D-CB-4): a driver that
// signals under its lock answers true there. Outside a callback the answer
// may be true merely because another goroutine is inside the driver.
func (d *Driver) Locked() bool {
	if d.mu.TryLock() {
		d.mu.Unlock()
		return false
	}
	return true
}

// Contains implements drivers.Driver: one multi-get of the keys. A key with
// an item in the answer is present, one without is absent. Any error, or an
// answer naming a key that was not asked, is an error wrapping
// ErrLookupFailed, never "absent" (D-LOOK-2). The client takes no context:
// ctx is checked before the lookup is sent, and the client's NetTimeout
// bounds each socket operation.
func (d *Driver) Contains(ctx context.Context, keys []string) ([]bool, error) {
	if len(keys) > d.caps.MaxRowsPerOp {
		return nil, fmt.Errorf("%w: D-LOOK-1: %d keys, at most %d (MaxRowsPerOp)",
			drivers.ErrInvalidSubmission, len(keys), d.caps.MaxRowsPerOp)
	}
	d.mu.Lock()
	stopped := d.stopping
	d.mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, drivers.ErrClosed)
	}
	if len(keys) == 0 {
		return []bool{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, err)
	}
	items := make([]string, len(keys))
	for i, k := range keys {
		items[i] = d.ItemKey(k)
	}
	got, err := d.client.GetMulti(items)
	if err != nil {
		return nil, fmt.Errorf("%w: D-LOOK-2: multi-get of %d keys: %w", drivers.ErrLookupFailed, len(keys), err)
	}
	found := make([]bool, len(keys))
	for i, it := range items {
		_, found[i] = got[it]
	}
	for k := range got {
		if !slices.Contains(items, k) {
			return nil, fmt.Errorf("%w: D-LOOK-2: the answer names key %q, which was not asked", drivers.ErrLookupFailed, k)
		}
	}
	return found, nil
}

// Submit implements drivers.Driver. The batch is validated before anything
// else (D-SUB-1); then the call runs on its own worker goroutine. onChange
// may run before Submit returns (D-CB-4); nil means no callback.
func (d *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return nil, fmt.Errorf("memcachedriver: submit: %w", drivers.ErrClosed)
	}
	if err := b.Validate(d.caps, d.liveLocked); err != nil {
		return nil, err
	}
	if onChange == nil {
		onChange = func() {}
	}
	n := len(b.Rows)
	d.nextCall++
	c := &call{
		d: d, id: d.nextCall, dir: b.Dir,
		rows:     slices.Clone(b.Rows), // the caller's slice stays the caller's
		regions:  make([]drivers.Region, n),
		items:    make([]string, n),
		onChange: onChange,
		done:     make(chan struct{}),
		results:  make([]drivers.Status, n),
		started:  make([]bool, n),
	}
	for i, r := range c.rows {
		c.regions[i] = d.regions[r.Handle]
		c.items[i] = d.ItemKey(r.Key)
	}
	d.calls[c.id] = c
	if t := d.cfg.Timeout; t > 0 {
		c.timer = time.AfterFunc(t, c.expire)
	}
	go c.run()
	return c, nil
}

// Drain implements drivers.Driver: admission stops, and the answer is a
// poll. A call is pending until its worker is done (or was given up), its
// results are final, it has access evidence and its last callback has
// returned (D-DRAIN-1, D-DRAIN-2).
func (d *Driver) Drain() drivers.DrainStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	var pending []drivers.CallID
	for _, id := range d.callIDsLocked() {
		if c := d.calls[id]; !c.settled {
			pending = append(pending, id)
		}
	}
	return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
}

// Shutdown implements drivers.Driver (D-SHUT-1, D-SHUT-2, D-CB-5).
//
// It stops admission and registration, cancels every running call and waits
// for their workers until ctx ends. A call still running then is abandoned:
// its rows without result become FAULT, its access UNPROVABLE (unless it had
// ended), and it is labelled call:<id>:unprovable; the regions it names stay
// registered and are labelled region:<label>:retained. Every other region
// is released and the client's idle connections are closed. If an
// abandoned worker finishes later, its call's access silently becomes ENDED
// (no callback: D-CB-5 wins over D-CB-2 after Shutdown), so a second
// Shutdown releases what it retained.
func (d *Driver) Shutdown(ctx context.Context) []string {
	d.shutMu.Lock()
	defer d.shutMu.Unlock()

	d.mu.Lock()
	d.draining, d.stopping = true, true
	running := make([]*call, 0, len(d.calls))
	for _, id := range d.callIDsLocked() {
		c := d.calls[id]
		c.cancelled = true
		running = append(running, c)
	}
	d.mu.Unlock()

wait:
	for _, c := range running {
		select {
		case <-c.done:
			continue
		default:
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			break wait
		}
	}
	for _, c := range running {
		select {
		case <-c.done:
		default:
			c.abandon()
		}
	}

	d.mu.Lock()
	d.shut = true
	d.mu.Unlock()
	d.cbs.Wait() // D-CB-5: callbacks already started finish before we return

	d.mu.Lock()
	var labels []string
	retained := map[drivers.Handle]bool{}
	for _, id := range d.callIDsLocked() {
		c := d.calls[id]
		if c.access == drivers.AccessEnded {
			continue
		}
		labels = append(labels, drivers.CallLabel(id, drivers.WhyUnprovable))
		for _, r := range c.rows {
			retained[r.Handle] = true
		}
	}
	for _, h := range d.handlesLocked() {
		if retained[h] {
			labels = append(labels, drivers.RegionLabel(d.regions[h].Label, drivers.WhyRetained))
		} else {
			delete(d.regions, h)
		}
	}
	d.clientClosed = true
	d.mu.Unlock()
	// Close drops the idle connections; a worker still inside the client
	// returns its connection later and closes it then (call.finish).
	d.client.Close()
	return labels
}

// Delete makes key absent (the item ItemKey(key)): the conformance suite's
// "make this key absent" hook, e.g. to simulate an eviction. An absent key
// is not an error.
func (d *Driver) Delete(_ context.Context, key string) error {
	if err := d.client.Delete(d.ItemKey(key)); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
		return fmt.Errorf("memcachedriver: delete %q: %w", key, err)
	}
	return nil
}

func (d *Driver) liveLocked(h drivers.Handle) (drivers.Region, bool) {
	r, ok := d.regions[h]
	return r, ok
}

// busyLocked names the lowest call whose access is not ENDED and that names h.
func (d *Driver) busyLocked(h drivers.Handle) (drivers.CallID, drivers.Access, bool) {
	for _, id := range d.callIDsLocked() {
		c := d.calls[id]
		if c.access == drivers.AccessEnded {
			continue
		}
		for _, r := range c.rows {
			if r.Handle == h {
				return id, c.access, true
			}
		}
	}
	return 0, 0, false
}

// handlesLocked and callIDsLocked sort map keys so no map order reaches a
// decision or a message.
func (d *Driver) handlesLocked() []drivers.Handle {
	hs := make([]drivers.Handle, 0, len(d.regions))
	for h := range d.regions {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

func (d *Driver) callIDsLocked() []drivers.CallID {
	ids := make([]drivers.CallID, 0, len(d.calls))
	for id := range d.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
