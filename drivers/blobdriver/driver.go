package blobdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:///dir
	_ "gocloud.dev/blob/s3blob"   // s3://bucket?endpoint=…

	"github.com/storesim/storesim/drivers"
)

// ErrConfig is wrapped by every refusal of a Config.
var ErrConfig = errors.New("blobdriver: bad config")

// ErrNoIfNotExist is wrapped by New's error when the bucket's store wrote
// an object over one that was already there although the write asked
// WriterOptions.IfNotExist: the store cannot keep the first writer's object
// (D-SUB-4), so the driver refuses to publish into it.
var ErrNoIfNotExist = errors.New("blobdriver: the store ignores WriterOptions.IfNotExist (a conditional write overwrote an existing object)")

// DefaultCaps is what a Config with zero Caps declares: 16 rows per call or
// lookup, absent keys answered MISS, both directions, cancellable.
var DefaultCaps = drivers.Capabilities{
	MaxRowsPerOp: 16,
	AbsentIsMiss: true,
	CanFetch:     true,
	CanPublish:   true,
	CanCancel:    true,
}

// DefaultOpTimeout bounds each store operation (one object's write, read,
// attributes or delete) when Config.OpTimeout is zero.
const DefaultOpTimeout = 10 * time.Second

// DefaultMaxObjectBytes is the largest slot Register takes when
// Config.MaxObjectBytes is zero. It stays below the S3 transfer manager's
// multipart threshold (16 MiB), so every object is one PutObject, which S3
// makes visible whole (D-SUB-5).
const DefaultMaxObjectBytes = 4 << 20

// maxPrefix bounds Config.Prefix, so that prefix and name fit an S3 key
// (1024 bytes) and a file path.
const maxPrefix = 128

// Config configures a Driver. Only keyed literals compile.
type Config struct {
	// URL is the bucket, as gocloud.dev/blob opens it: file:///DIR (the
	// directory must exist), s3://BUCKET?endpoint=…&region=…, or any other
	// scheme whose gocloud package the program links. Required.
	URL string
	// Prefix is prepended to every object key (see the package doc,
	// "Store layout"): two drivers with different prefixes never see each
	// other's objects. At most 128 bytes of letters, digits, '-', '_',
	// '.' and '/', not starting with '/' and without a ".." segment;
	// empty means the bucket's root (Flush then refuses to run).
	Prefix string
	// Caps is the declaration; the zero value means DefaultCaps.
	Caps drivers.Capabilities
	// Timeout, when > 0, is every call's deadline: a call whose worker is
	// still running after Timeout reports FAULT for the rows it started
	// and NOT_ATTEMPTED for the rest, and its access is UNPROVABLE until
	// the worker returns (see the package doc, "Access evidence").
	Timeout time.Duration
	// OpTimeout bounds each store operation (0: DefaultOpTimeout); one that
	// runs out is a FAULT (or a lookup error).
	OpTimeout time.Duration
	// MaxObjectBytes is the largest slot Register takes (0:
	// DefaultMaxObjectBytes).
	MaxObjectBytes int
	_              struct{}
}

// Driver is the gocloud.dev/blob driver. Create it with New; all methods
// are safe from any goroutine.
type Driver struct {
	cfg    Config
	caps   drivers.Capabilities
	bucket *blob.Bucket
	// pubLock serialises this process's conditional writes into one file
	// bucket: fileblob's IfNotExist is a stat and then a rename, with no
	// lock shared between writers (see the package doc, "First writer
	// wins"). nil for other stores, which decide IfNotExist themselves.
	pubLock *sync.Mutex
	// dir is a file bucket's directory ("" for other stores): a NotFound
	// is "absent" only while it exists (absent).
	dir string

	shutMu sync.Mutex // serialises Shutdown calls

	mu           sync.Mutex
	regions      map[drivers.Handle]drivers.Region
	nextHandle   drivers.Handle
	calls        map[drivers.CallID]*call // every call not yet ENDED and settled
	nextCall     drivers.CallID
	draining     bool // admission stopped (Drain or Shutdown)
	stopping     bool // Shutdown began: registrations refused (D-REG-5)
	shut         bool // no callback may start any more (D-CB-5)
	bucketClosed bool

	// cbs counts callbacks in flight. A callback is only started after
	// checking shut under mu (and Add happens under mu), so once Shutdown
	// has set shut and waited for cbs, no callback can run again (D-CB-5).
	cbs sync.WaitGroup
}

var _ drivers.Driver = (*Driver)(nil)

// Capabilities implements drivers.Driver.
func (d *Driver) Capabilities() drivers.Capabilities { return d.caps }

// Register implements drivers.Driver. A bucket has no memory
// registration, so this only adds the region to the driver's handle table;
// the store is never asked (D-REG-1). Handles count up from 1 and are never
// reused (D-REG-3). A region whose slots are larger than
// Config.MaxObjectBytes is refused.
func (d *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		// D-REG-5: registration is one step under mu, so one racing
		// Shutdown either completed before stopping was set (and Shutdown
		// releases it) or is refused here.
		return 0, fmt.Errorf("%w: region %q: D-REG-5: driver is shutting down: %w",
			drivers.ErrRegistrationRefused, r.Label, drivers.ErrClosed)
	}
	if err := drivers.CheckGeometry(r); err != nil {
		return 0, fmt.Errorf("%w: D-REG-1: %w", drivers.ErrRegistrationRefused, err)
	}
	if r.SlotBytes > d.cfg.MaxObjectBytes {
		return 0, fmt.Errorf("%w: region %q: slots of %d bytes exceed MaxObjectBytes %d",
			drivers.ErrRegistrationRefused, r.Label, r.SlotBytes, d.cfg.MaxObjectBytes)
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

// Locked reports whether the driver's mutex is held right now: the contract
// monitor probes it from inside a change callback (D-CB-4).
func (d *Driver) Locked() bool {
	if d.mu.TryLock() {
		d.mu.Unlock()
		return false
	}
	return true
}

// Contains implements drivers.Driver: the attributes of each key's object,
// one key after another. An object is present; NotFound is absent, the
// store's own answer; any other error is an error wrapping ErrLookupFailed,
// never "absent" (D-LOOK-2).
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
	found := make([]bool, len(keys))
	for i, k := range keys {
		ok, err := d.exists(ctx, d.ObjectKey(k))
		if err != nil {
			return nil, fmt.Errorf("%w: D-LOOK-2: attributes of %q: %w", drivers.ErrLookupFailed, k, err)
		}
		found[i] = ok
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
		return nil, fmt.Errorf("blobdriver: submit: %w", drivers.ErrClosed)
	}
	if err := b.Validate(d.caps, d.liveLocked); err != nil {
		return nil, err
	}
	if onChange == nil {
		onChange = func() {}
	}
	n := len(b.Rows)
	d.nextCall++
	ctx, stop := context.WithCancel(context.Background())
	c := &call{
		d: d, id: d.nextCall, dir: b.Dir,
		rows:     slices.Clone(b.Rows), // the caller's slice stays the caller's
		regions:  make([]drivers.Region, n),
		objects:  make([]string, n),
		onChange: onChange,
		ctx:      ctx, stop: stop,
		done:    make(chan struct{}),
		results: make([]drivers.Status, n),
		started: make([]bool, n),
	}
	for i, r := range c.rows {
		c.regions[i] = d.regions[r.Handle]
		c.objects[i] = d.ObjectKey(r.Key)
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
// its store operation's context is cancelled, its rows without result
// become FAULT (or NOT_ATTEMPTED if never started), its access UNPROVABLE
// (unless it had ended), and it is labelled call:<id>:unprovable; the
// regions it names stay registered and are labelled region:<label>:retained.
// Every other region is released and the bucket is closed. An abandoned
// worker that finishes later makes its call's access ENDED silently (no
// callback after Shutdown: D-CB-5), so a second Shutdown releases what the
// first retained.
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
	d.mu.Unlock()
	d.closeBucket()
	return labels
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
