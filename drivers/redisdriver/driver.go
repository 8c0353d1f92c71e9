package redisdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/drivers"
)

// ErrConfig is wrapped by every refusal of a Config.
var ErrConfig = errors.New("redisdriver: bad config")

// DefaultCaps is what a Config with zero Caps declares: 16 rows per call or
// lookup, absent keys answered MISS, both directions, cancellable.
var DefaultCaps = drivers.Capabilities{
	MaxRowsPerOp: 16,
	AbsentIsMiss: true,
	CanFetch:     true,
	CanPublish:   true,
	CanCancel:    true,
}

// Config configures a Driver. Only keyed literals compile.
type Config struct {
	// Addr is the server, host:port. Required.
	Addr string
	// Prefix is prepended to every key: row key K is stored as Prefix+K.
	// Two drivers with different prefixes never see each other's objects.
	// Empty means no prefix (Flush then refuses to run).
	Prefix string
	// TTL, when > 0, stores every published object with PX TTL (at least
	// 1ms); an expired object FETCHes as MISS. 0 stores without expiry. Note
	// that a server with a maxmemory eviction policy may evict any key at any
	// time, whatever the TTL: a FETCH then MISSes, honestly (see the package
	// doc, "TTL and eviction").
	TTL time.Duration
	// Caps is the declaration; the zero value means DefaultCaps.
	Caps drivers.Capabilities
	// Timeout, when > 0, bounds every call and lookup: a call still waiting
	// for the server after Timeout reports FAULT for the rows without answer.
	Timeout time.Duration
	_       struct{}
}

// Driver is the Redis driver. Create it with New; all methods are safe from
// any goroutine.
type Driver struct {
	cfg    Config
	caps   drivers.Capabilities
	client rueidis.Client

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

// New checks cfg, connects to cfg.Addr and returns the driver.
func New(cfg Config) (*Driver, error) {
	caps := cfg.Caps
	if caps == (drivers.Capabilities{}) {
		caps = DefaultCaps
	}
	switch {
	case cfg.Addr == "":
		return nil, fmt.Errorf("%w: Addr is empty", ErrConfig)
	case cfg.TTL < 0:
		return nil, fmt.Errorf("%w: TTL %v < 0", ErrConfig, cfg.TTL)
	case cfg.TTL > 0 && cfg.TTL < time.Millisecond:
		return nil, fmt.Errorf("%w: TTL %v below 1ms (Redis PX granularity)", ErrConfig, cfg.TTL)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v < 0", ErrConfig, cfg.Timeout)
	}
	if err := caps.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{cfg.Addr},
		// No client-side caching: a FETCH or lookup must ask the server, or
		// an evicted key could be answered from a stale local copy.
		DisableCache: true,
		// No client-side retries: rueidis retries read-only commands (GET,
		// EXISTS) on network errors, without a deadline forever. A transport
		// error must reach the row as FAULT (or the lookup as an error) at
		// once; retrying is the backend's decision.
		DisableRetry: true,
	})
	if err != nil {
		return nil, fmt.Errorf("redisdriver: connect to %s: %w", cfg.Addr, err)
	}
	return &Driver{
		cfg: cfg, caps: caps, client: client,
		regions: map[drivers.Handle]drivers.Region{},
		calls:   map[drivers.CallID]*call{},
	}, nil
}

// Capabilities implements drivers.Driver.
func (d *Driver) Capabilities() drivers.Capabilities { return d.caps }

// Register implements drivers.Driver. Redis has no memory registration, so
// this only adds the region to the driver's handle table; the store is never
// asked (D-REG-1). Handles count up from 1 and are never reused (D-REG-3).
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

// Contains implements drivers.Driver: one EXISTS per key, pipelined in one
// DoMulti. Any error, a reply that is not 0 or 1, or a wrong number of
// replies is an error wrapping ErrLookupFailed, never "absent" (D-LOOK-2).
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
	if d.cfg.Timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, d.cfg.Timeout)
		defer stop()
	}
	resps := d.doMulti(ctx, func() rueidis.Commands {
		cmds := make(rueidis.Commands, len(keys))
		for i, k := range keys {
			cmds[i] = d.client.B().Exists().Key(d.cfg.Prefix + k).Build()
		}
		return cmds
	})
	if len(resps) != len(keys) {
		return nil, fmt.Errorf("%w: D-LOOK-2: %d answers for %d keys", drivers.ErrLookupFailed, len(resps), len(keys))
	}
	found := make([]bool, len(keys))
	for i, r := range resps {
		n, err := r.AsInt64()
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: key %q: %w", drivers.ErrLookupFailed, keys[i], err)
		case n == 1:
			found[i] = true
		case n != 0:
			return nil, fmt.Errorf("%w: key %q: EXISTS answered %d", drivers.ErrLookupFailed, keys[i], n)
		}
	}
	return found, nil
}

// Submit implements drivers.Driver. The batch is validated before anything
// else (D-SUB-1); then the call runs on its own goroutine. onChange may run
// before Submit returns (D-CB-4); nil means no callback.
func (d *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return nil, fmt.Errorf("redisdriver: submit: %w", drivers.ErrClosed)
	}
	if err := b.Validate(d.caps, d.liveLocked); err != nil {
		return nil, err
	}
	if onChange == nil {
		onChange = func() {}
	}
	n := len(b.Rows)
	d.nextCall++
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &call{
		d: d, id: d.nextCall, dir: b.Dir,
		rows:     slices.Clone(b.Rows), // the caller's slice stays the caller's
		regions:  make([]drivers.Region, n),
		onChange: onChange,
		ctx:      ctx, cancel: cancel,
		done:    make(chan struct{}),
		results: make([]drivers.Status, n),
	}
	for i, r := range c.rows {
		c.regions[i] = d.regions[r.Handle]
	}
	d.calls[c.id] = c
	go c.run()
	return c, nil
}

// Drain implements drivers.Driver: admission stops, and the answer is a
// poll. A call is pending until it has access evidence, final results and
// its last callback has returned (D-DRAIN-1, D-DRAIN-2).
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
// for their goroutines until ctx ends. A call still running then is
// abandoned: its rows without result become FAULT, its access UNPROVABLE,
// and it is labelled call:<id>:unprovable; the regions it names stay
// registered and are labelled region:<label>:retained. Every other region
// is released and the client is closed. If an abandoned goroutine finishes
// later, its access silently becomes ENDED (no callback: D-CB-5 wins over
// D-CB-2 after Shutdown), so a second Shutdown releases what it retained.
func (d *Driver) Shutdown(ctx context.Context) []string {
	d.shutMu.Lock()
	defer d.shutMu.Unlock()

	d.mu.Lock()
	d.draining, d.stopping = true, true
	running := make([]*call, 0, len(d.calls))
	for _, id := range d.callIDsLocked() {
		running = append(running, d.calls[id])
	}
	d.mu.Unlock()

	for _, c := range running {
		c.cancel(errShutdown)
	}
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
	closeClient := !d.clientClosed
	d.clientClosed = true
	d.mu.Unlock()
	if closeClient {
		d.client.Close() // returns once the client's pending commands are done
	}
	return labels
}

// maxSetupRetries bounds how often one pipeline is sent again after the
// connection it waited for could not be set up because another caller's
// context ended (see doMulti).
const maxSetupRetries = 8

// doMulti sends one pipeline built by build and returns its replies. It
// sends it again (rebuilt: rueidis recycles sent commands) when the
// connection it was queued on could not be set up because *another*
// caller's context ended. rueidis dials and handshakes each of its pipelined
// connections lazily, with the context of the first command that needs it,
// and hands the outcome to every command waiting for that connection: when
// the first command's call is cancelled (Cancel, or Shutdown cancelling the
// calls in flight) mid-dial, every other call queued on that connection gets
// "dial tcp …: operation was canceled" although its own context is alive,
// and would report FAULT — for a FETCH of an absent key a miss reported as a
// fault (D-MISS-HONEST), seen on loaded machines. Such a failure is always
// context.Canceled (a real outage is never that) and hits every command of
// the pipeline before any is written, so nothing reached the server and
// sending again is safe for GET, EXISTS and SET NX alike.
func (d *Driver) doMulti(ctx context.Context, build func() rueidis.Commands) []rueidis.RedisResult {
	for try := 0; ; try++ {
		resps := d.client.DoMulti(ctx, build()...)
		if try == maxSetupRetries || ctx.Err() != nil || !foreignCancel(resps) {
			return resps
		}
	}
}

// foreignCancel reports whether every reply failed with context.Canceled:
// a connection set-up aborted by a cancelled context, which is not the
// caller's when the caller's context is alive.
func foreignCancel(resps []rueidis.RedisResult) bool {
	for _, r := range resps {
		if !errors.Is(r.Error(), context.Canceled) {
			return false
		}
	}
	return len(resps) > 0
}

// Flush deletes every key under the driver's prefix (SCAN MATCH, then one
// DEL per key, pipelined): the conformance suite's "forget everything" hook.
// It refuses an empty prefix, which would wipe the whole database.
func (d *Driver) Flush(ctx context.Context) error {
	if d.cfg.Prefix == "" {
		return fmt.Errorf("%w: Flush needs a non-empty Prefix", ErrConfig)
	}
	pattern := globEscape(d.cfg.Prefix) + "*"
	var cursor uint64
	for {
		e, err := d.client.Do(ctx, d.client.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return fmt.Errorf("redisdriver: flush: scan: %w", err)
		}
		if len(e.Elements) > 0 {
			cmds := make(rueidis.Commands, len(e.Elements))
			for i, k := range e.Elements {
				cmds[i] = d.client.B().Del().Key(k).Build()
			}
			for i, r := range d.client.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					return fmt.Errorf("redisdriver: flush: del %q: %w", e.Elements[i], err)
				}
			}
		}
		if e.Cursor == 0 {
			return nil
		}
		cursor = e.Cursor
	}
}

// Delete makes key absent (it is stored as Prefix+key): the conformance
// suite's "make this key absent" hook, e.g. to simulate an eviction.
func (d *Driver) Delete(ctx context.Context, key string) error {
	if err := d.client.Do(ctx, d.client.B().Del().Key(d.cfg.Prefix+key).Build()).Error(); err != nil {
		return fmt.Errorf("redisdriver: delete %q: %w", key, err)
	}
	return nil
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
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
