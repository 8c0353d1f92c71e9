package backend

import (
	"errors"
	"fmt"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
)

// Errors returned by the backend; test them with errors.Is.
var (
	// ErrSubmissionRejected: admission refused (B-SUBMIT); nothing escaped
	// and no capacity was consumed. The more specific errors below wrap it.
	ErrSubmissionRejected = errors.New("submission rejected")
	// ErrClosed: the backend is shut down or never finished registering.
	ErrClosed = fmt.Errorf("%w: backend closed", ErrSubmissionRejected)
	// ErrOverCapacity: the view's batches do not all fit (B-BOUND).
	ErrOverCapacity = fmt.Errorf("%w: over capacity", ErrSubmissionRejected)
	// ErrTooManyUnprovable: the unprovable gauge exceeds MaxUnprovable (B-BOUND).
	ErrTooManyUnprovable = fmt.Errorf("%w: too many unprovable calls", ErrSubmissionRejected)

	// ErrRegistration wraps every registration failure New reports.
	ErrRegistration = errors.New("registration failed")
	// ErrBadConfig: a Config field New cannot use.
	ErrBadConfig = errors.New("bad backend config")

	// Reasons of Failed and Cancelled outcomes.
	ErrNotRegistered = errors.New("row outside any live registration")
	ErrRowFailed     = errors.New("row failed")
	ErrLookup        = errors.New("look-up failed")
	ErrSubmit        = errors.New("submit failed")
	ErrWrongLength   = errors.New("wrong number of results")
	ErrCancelled     = errors.New("attempt cancelled")
	ErrShutdown      = errors.New("backend shutting down")
)

// Defaults for zero Config fields.
const (
	DefaultMaxCallsInFlight = 8
	DefaultMaxQueuedCalls   = 64
	DefaultMaxUnprovable    = 16
	DefaultDrainTimeout     = 10 * time.Second
)

// Config configures a Backend. Zero fields take the defaults above.
type Config struct {
	// Name prefixes the backend's runtime event labels.
	Name string
	// MaxCallsInFlight bounds submitted calls without access evidence.
	MaxCallsInFlight int
	// MaxQueuedCalls bounds batches waiting for an in-flight slot. An
	// attempt is admitted only if in-flight + queued + its batches fit in
	// MaxCallsInFlight + MaxQueuedCalls (B-BOUND).
	MaxQueuedCalls int
	// MaxUnprovable: admission is refused while more calls than this are
	// UNPROVABLE (B-BOUND).
	MaxUnprovable int
	// DrainTimeout is how long Shutdown waits for the driver to drain.
	DrainTimeout time.Duration
	// OnChange, if set, runs in a runtime event after an attempt's outcome or
	// access changed (coalesced: it reads current state). The lender
	// subscribes here.
	OnChange func(*Attempt)
	// Attempts, when known, is about how many attempts the caller admits:
	// the records' first chunks hold what that many make (0: chunks grow
	// from 16 records). It bounds nothing.
	Attempts int
	_        struct{}
}

func (c Config) withDefaults() (Config, error) {
	if c.MaxCallsInFlight < 0 || c.MaxQueuedCalls < 0 || c.MaxUnprovable < 0 || c.DrainTimeout < 0 {
		return c, fmt.Errorf("%w: negative limit in %+v", ErrBadConfig, c)
	}
	if c.Name == "" {
		c.Name = "backend"
	}
	if c.MaxCallsInFlight == 0 {
		c.MaxCallsInFlight = DefaultMaxCallsInFlight
	}
	if c.MaxQueuedCalls == 0 {
		c.MaxQueuedCalls = DefaultMaxQueuedCalls
	}
	if c.MaxUnprovable == 0 {
		c.MaxUnprovable = DefaultMaxUnprovable
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	return c, nil
}

// Backend is the backend under test. It is not safe for concurrent use; see
// the package doc.
type Backend struct {
	rt   sim.Runtime
	d    drivers.Driver
	caps drivers.Capabilities
	cfg  Config
	// labels of the events the backend schedules often, built once: a
	// label formatted per event would cost an allocation each time.
	callLabel, notifyLabel string
	flushFn                func()          // b.flush, bound once: a method value allocates
	spareDirty             []*Attempt      // flush's drained list, reused by the next
	cuts                   [][]drivers.Row // admit's cut of the view, reused by the next
	mem                    records         // slabs of the per-attempt records
	first                  firstArrays     // the work lists' first arrays

	regions   []drivers.Region
	bindings  []*binding // in region order
	byHandle  map[drivers.Handle]*binding
	together  bool     // registered with RegisterTogether
	inDoubt   []string // region labels that may be registered without a handle
	closedErr error    // non-nil: admission refused

	nextAttempt uint64
	queue       []*batch
	inFlight    int     // calls holding an in-flight slot
	live        []*call // calls whose access is not ENDED, in submit order
	open        []*Attempt

	unprovable    int // gauge: calls UNPROVABLE now
	retainedBytes int64
	stats         Stats

	dirty        []*Attempt
	notifyPosted bool

	shut shutdown
}

// firstArrays are the first backing arrays of the backend's work lists,
// inside the Backend itself: a run's lists seldom outgrow them, so appends
// allocate nothing until one does; a longer list moves to the heap as usual.
type firstArrays struct {
	queue             [firstLen]*batch
	live              [firstLen]*call
	open, dirty, free [firstLen]*Attempt
	cuts              [firstLen][]drivers.Row
	bindings          [firstLen]*binding
	waiters           [1]func([]string) // Shutdown's usual one caller
}

const firstLen = 8

type binding struct {
	region drivers.Region
	handle drivers.Handle
	live   bool
	why    string // label reason while a close has failed
}

// New validates geometry (D-GEOM) and capabilities without asking the
// store, then registers regions. A validation error returns a nil Backend.
// A registration error returns a Backend that refuses admission and whose
// Shutdown closes whatever was bound, together with the error.
func New(rt sim.Runtime, d drivers.Driver, regions []drivers.Region, cfg Config) (*Backend, error) {
	if rt == nil || d == nil {
		return nil, fmt.Errorf("%w: nil runtime or driver", ErrBadConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := drivers.CheckGeometry(regions...); err != nil {
		return nil, err
	}
	caps := d.Capabilities()
	if err := caps.Check(); err != nil {
		return nil, err
	}
	labels := cfg.Name + "/call" + cfg.Name + "/notify" // one allocation for both
	b := &Backend{
		rt: rt, d: d, caps: caps, cfg: cfg,
		callLabel: labels[:len(cfg.Name)+len("/call")], notifyLabel: labels[len(cfg.Name)+len("/call"):],
		regions:  append([]drivers.Region(nil), regions...),
		byHandle: make(map[drivers.Handle]*binding, len(regions)),
	}
	b.flushFn = b.flush
	b.queue, b.live, b.cuts = b.first.queue[:0], b.first.live[:0], b.first.cuts[:0]
	b.open, b.dirty, b.spareDirty = b.first.open[:0], b.first.dirty[:0], b.first.free[:0]
	b.bindings, b.shut.waiters = b.first.bindings[:0], b.first.waiters[:0]
	b.reserve(cfg.Attempts)
	if err := b.register(); err != nil {
		b.closedErr = fmt.Errorf("%w: %w", ErrClosed, err)
		return b, err
	}
	return b, nil
}

func (b *Backend) register() error {
	if tr, ok := b.d.(drivers.TogetherRegisterer); ok {
		b.together = true
		return b.registerTogether(tr)
	}
	for _, r := range b.regions {
		h, err := b.d.Register(r)
		if err != nil {
			b.noteInDoubt(err, r.Label)
			// Earlier bindings stay: Shutdown closes them properly.
			return fmt.Errorf("%w: region %q: %w", ErrRegistration, r.Label, err)
		}
		b.bind(r, h)
	}
	return nil
}

func (b *Backend) registerTogether(tr drivers.TogetherRegisterer) error {
	hs, err := tr.RegisterTogether(b.regions)
	if err == nil && len(hs) != len(b.regions) {
		err = fmt.Errorf("%d handles for %d regions", len(hs), len(b.regions))
	}
	for i, h := range hs {
		if i < len(b.regions) {
			b.bind(b.regions[i], h)
		}
	}
	if err != nil {
		labels := make([]string, 0, len(b.regions))
		for _, r := range b.regions[min(len(hs), len(b.regions)):] {
			labels = append(labels, r.Label)
		}
		b.noteInDoubt(err, labels...)
		return fmt.Errorf("%w: together: %w", ErrRegistration, err)
	}
	return nil
}

// noteInDoubt records regions that may be registered without a handle. An
// *InDoubtError names them (D-TOG-2). A refusal proves nothing was
// registered (D-REG-2, D-TOG-1). Any other error cannot prove that, so the
// regions it concerns are treated as in doubt too: they stay held.
func (b *Backend) noteInDoubt(err error, labels ...string) {
	var doubt *drivers.InDoubtError
	switch {
	case errors.As(err, &doubt):
		b.inDoubt = append(b.inDoubt, doubt.Labels...)
	case errors.Is(err, drivers.ErrRegistrationRefused), errors.Is(err, drivers.ErrBadGeometry):
	default:
		b.inDoubt = append(b.inDoubt, labels...)
	}
}

func (b *Backend) bind(r drivers.Region, h drivers.Handle) {
	bd := b.mem.bindings.New()
	*bd = binding{region: r, handle: h, live: true}
	b.bindings = append(b.bindings, bd)
	b.byHandle[h] = bd
}

// Handle returns the live binding of the region labelled label, for
// building view rows.
func (b *Backend) Handle(label string) (drivers.Handle, bool) {
	for _, bd := range b.bindings {
		if bd.region.Label == label && bd.live {
			return bd.handle, true
		}
	}
	return 0, false
}

// Capabilities is the driver's declaration, as validated by New.
func (b *Backend) Capabilities() drivers.Capabilities { return b.caps }

// Config is the effective configuration (defaults applied).
func (b *Backend) Config() Config { return b.cfg }

// liveRegion answers whether a row's handle is a live binding and returns its
// region.
func (b *Backend) liveRegion(h drivers.Handle) (drivers.Region, bool) {
	bd, ok := b.byHandle[h]
	if !ok || !bd.live {
		return drivers.Region{}, false
	}
	return bd.region, true
}

func (b *Backend) slotBytes(rows []drivers.Row) int64 {
	var n int64
	for _, r := range rows {
		if bd, ok := b.byHandle[r.Handle]; ok {
			n += int64(bd.region.SlotBytes)
		}
	}
	return n
}
