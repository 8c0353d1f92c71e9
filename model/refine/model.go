package refine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/slab"
)

// AttemptView is what the model reads of a backend attempt
// (*backend.Attempt implements it).
type AttemptView interface {
	ID() uint64
	State() backend.State // the outcome's kind, without copying it
	Outcome() backend.Outcome
	Access() drivers.Access
}

// Config is what the model must know of the endpoint.
type Config struct {
	Endpoint string
	Clock    sim.Clock
	Seed     uint64
	// Attempts, when known, is about how many attempts the backend admits
	// (the ops of the endpoint): the model's map of them starts with room
	// for as many, up to the 64 it keeps before it forgets finished ones,
	// and its records' slabs with room for what as many make.
	// 0 means room for an endpoint of a 100-op run of the engine.
	Attempts int
	_        struct{}
}

// Model is the reference model of one endpoint's backend. It is stepped from
// the simulation's single goroutine and is not safe for concurrent use.
type Model struct {
	cfg  Config
	caps drivers.Capabilities
	bcfg backend.Config

	declared     drivers.Capabilities // what the driver under the tap declares
	haveDeclared bool
	stats        func() backend.Stats
	ready        bool

	bindings  []*binding
	inDoubt   []string
	regFailed bool

	attempts  []*attempt // admitted, in admission order
	live      []*attempt // ... those a step may still judge: not done, or done and its last report not judged
	byView    map[AttemptView]*attempt
	admitting *attempt
	queue     []*batch // dispatch order (B-CUT: admission order)
	calls     []*call  // every call submitted, in order

	pending *batch // looked up first; its follow-up Submit may still come
	// lookFailed is the batch whose lookup just failed, until the next
	// lookup or Submit: a Submit of its rows then is a fold that ignored
	// the failure (B-FETCH, B-PUBLISH), not a cut (B-CUT).
	lookFailed *batch
	recheck    *call // a publish call whose declined rows must be looked up next

	shut shutState

	count backend.Stats // the counters Stats must show (its gauges are judged apart)

	dirty  bool // a fact arrived since the last step was judged
	qdirty bool // ... since the last quiescent point was judged

	// The model's records, carved from chunks: they live as long as the
	// model (finished ones are only forgotten, see compact).
	attemptSlab slab.Of[attempt]
	batchSlab   slab.Of[batch]
	callSlab    slab.Of[call]
	bindingSlab slab.Of[binding]
	rowSlab     slab.Of[drivers.Row]    // the attempts' masked-in rows, the calls' rows
	resSlab     slab.Of[drivers.Status] // the calls' results
	flagSlab    slab.Of[bool]           // the served and present flags of attempts larger than attempt.flags

	found []rules.Violation
	seen  map[string]bool // rule+attempt already reported (nil until the first)

	// first is the lists' first storage, in the model's own allocation.
	first struct {
		attempts, live [16]*attempt
		calls          [16]*call
		queue          [8]*batch
		bindings       [maxBindings]*binding
	}
}

type binding struct {
	region drivers.Region
	handle drivers.Handle
	live   bool
	tried  bool // an unregister was asked during the current shutdown
}

type shutState struct {
	asked      bool
	askedAt    time.Duration
	drainDone  bool
	driverShut bool // the driver's Shutdown was called in this round
	everShut   bool // ... in any round (the drain deadline is the first round's)
	// readSincePoll: in this step the backend read a call while draining,
	// and has not asked Drain since.
	readSincePoll bool
	// polled: the driver was asked to Drain since the first Shutdown.
	polled bool
	// reporting: a driver shutdown returned in this step; its round is
	// recorded when the step ends. rounds: the finished rounds whose dones
	// have not all run; owed: Shutdown calls a round owes a done.
	reporting      bool
	rounds         []round
	owed           int
	done           []bool // by Shutdown call: its done ran
	asks, returns  int    // Shutdown calls, and done callbacks run
	driverLabels   []string
	driverPanicked bool // the driver's Shutdown of the round being reported panicked
	late           bool // the deadline passed without a driver shutdown (reported)
}

type attempt struct {
	view    AttemptView
	nrows   int     // the view's rows, masked in or out
	batches []batch // B-CUT's cut of the masked-in rows, in dispatch order
	served  []bool  // by view position
	present []bool  // storage for the batches' lookup answers, by masked-in row

	failCause cause     // a definite failure the backend has seen (nil: none)
	submitErr error     // the driver's own error of a failed Submit (not a panic): a Failed reason of ErrSubmit wraps it
	maybeFail cause     // a failure the backend may have acted on early (nil: none)
	noRoom    roomCheck // whether B-BOUND refuses it at admission, and why
	missed    int       // fetch rows not served: absent at lookup, or MISS
	declined  int       // publish rows declined, then absent at the second lookup
	raced     int       // publish rows declined, then present (served)
	bad       string    // why the view is malformed ("" if it is not)
	flags     [16]bool  // served's and present's storage for a view of up to 8 rows

	// The small fields last, together: no padding between them.
	dir         drivers.Direction
	state       backend.State  // last committed state seen (Pending until then)
	cancelAsk   bool           // Cancel or Shutdown asked while Pending
	askNow      bool           // the Cancel being judged found it Pending
	unprovable  bool           // sticky: the model's access was UNPROVABLE
	expectFail  bool           // failed at admission (unregistered row)
	done        bool           // committed and access ENDED: nothing more to judge
	touched     bool           // seen in this step
	settled     bool           // judged, and no fact about it arrived since (see judge)
	judgedAcc   drivers.Access // ... and the access it showed then
	stopDue     bool           // committed Failed or Cancelled in this step
	noted       bool           // an OnChange report arrived
	notedState  backend.State  // ... and showed this outcome
	notedAccess drivers.Access // ... and this access
	noteChecked bool           // done, and its last report was judged
	// why: the failures and cancels the model saw the attempt meet, each a
	// reason its outcome may carry (whyErr); several when they raced.
	why why
}

type phase uint8

const (
	queued   phase = iota
	waiting        // looked up; a Submit may follow
	calling        // submitted
	complete       // every row has its fold
	dropped        // never sent
)

type batch struct {
	a       *attempt
	rows    []drivers.Row
	phase   phase
	present []bool // the lookup's answer, when one was asked
	call    *call
	// lookupErr is why the batch's lookup failed (see lookupCause).
	lookupErr error
}

type call struct {
	tap         callTap // what the tap's Submit returns
	b           *batch
	id          drivers.CallID
	rows        []drivers.Row
	res         []drivers.Status // what the backend read, final entries kept
	acc         drivers.Access   // what the backend read
	stuck       bool             // UNPROVABLE for good (submit error, wrong length)
	folded      bool             // the backend read every result final
	cancels     int
	recheckRows []drivers.Row // declined rows to look up again
	// The row causes this call gave its attempt (each is set at most once:
	// a pointer to them is a cause that needs no allocation of its own).
	maybeRow, failRow rowCause
}

var errPanicked = errors.New("Submit panicked")

// errLookupPanicked is what the model takes a panicking Contains for.
var errLookupPanicked = errors.New("Contains panicked")

// why is a set of the reasons an outcome may carry (SPEC §3, B-OUTCOME): a
// bit per failure or cancel the model saw, each naming the backend error the
// outcome's Reason must wrap.
type why uint8

const (
	whyNotRegistered why = 1 << iota
	whyRow
	whyLookup
	whySubmit
	whyWrongLength
	whyCancel
	whyShutdown
	numWhy = iota
)

var whyErr = [numWhy]error{backend.ErrNotRegistered, backend.ErrRowFailed, backend.ErrLookup,
	backend.ErrSubmit, backend.ErrWrongLength, backend.ErrCancelled, backend.ErrShutdown}

// allows says whether reason wraps the error of one of w's reasons.
func (w why) allows(reason error) bool {
	for i, e := range whyErr {
		if w&(1<<i) != 0 && errors.Is(reason, e) {
			return true
		}
	}
	return false
}

func (w why) String() string {
	var s []string
	for i, e := range whyErr {
		if w&(1<<i) != 0 {
			s = append(s, e.Error())
		}
	}
	return strings.Join(s, " or ")
}

// New returns the model of one endpoint. SetBackend must follow once the
// backend exists (its effective configuration and Stats).
func New(cfg Config) *Model {
	// The lists and maps start at about what a run of the engine needs:
	// they do not grow from nothing.
	n := 32
	if cfg.Attempts > 0 {
		n = min(cfg.Attempts, 64)
	}
	m := &Model{cfg: cfg, byView: make(map[AttemptView]*attempt, n)}
	m.attempts, m.live, m.calls, m.queue = m.first.attempts[:0], m.first.live[:0], m.first.calls[:0], m.first.queue[:0]
	m.bindings = m.first.bindings[:0]
	m.bindingSlab.Reserve(maxBindings)
	if a := cfg.Attempts; a > 0 {
		// The slabs' first chunks too: about the 90th percentile of each
		// over 600 one-endpoint seeds of 2, 35 and 100 ops, but the
		// calls' median (a fuzz input's ops make fewer calls).
		m.attemptSlab.Reserve(a*4/5 + 1)
		m.batchSlab.Reserve(2 * a)
		m.callSlab.Reserve(a/2 + 3)
		m.rowSlab.Reserve(3*a + 2)
		m.resSlab.Reserve(a + 8)
	}
	return m
}

// maxBindings is the first chunk of bindings and the room for their list
// in the model's allocation: an endpoint of the engine registers at most 3
// regions (fuzz/workload's maxRegions).
const maxBindings = 3

// SetBackend gives the model the backend's effective configuration, the
// driver's capabilities and the backend's gauges.
//
// asked is the configuration the backend was given: the model applies the
// contract's defaults to its zero fields itself and judges by that, and a
// backend that runs with other bounds (got, its Config()) or other
// capabilities (its Capabilities(), against the driver's declaration) is
// found out at once (B-BOUND).
func (m *Model) SetBackend(caps drivers.Capabilities, asked, got backend.Config, stats func() backend.Stats) {
	want := withDefaults(asked)
	m.caps, m.bcfg, m.stats, m.ready = m.declared, want, stats, true
	if !m.haveDeclared {
		m.caps = caps
	}
	if caps != m.caps {
		m.fail(rules.BBound, nil, 0, "caps", fmt.Sprintf("the backend works with capabilities %+v, but the driver declares %+v", caps, m.caps))
	}
	if got.MaxCallsInFlight != want.MaxCallsInFlight || got.MaxQueuedCalls != want.MaxQueuedCalls ||
		got.MaxUnprovable != want.MaxUnprovable || got.DrainTimeout != want.DrainTimeout {
		m.fail(rules.BBound, nil, 0, "config", fmt.Sprintf("asked for %d in flight, %d queued, %d UNPROVABLE, drain %v (zero: the default), the backend runs with %d, %d, %d, %v",
			want.MaxCallsInFlight, want.MaxQueuedCalls, want.MaxUnprovable, want.DrainTimeout,
			got.MaxCallsInFlight, got.MaxQueuedCalls, got.MaxUnprovable, got.DrainTimeout))
	}
}

// withDefaults is backend.Config's documented defaults for zero fields.
func withDefaults(c backend.Config) backend.Config {
	if c.MaxCallsInFlight == 0 {
		c.MaxCallsInFlight = backend.DefaultMaxCallsInFlight
	}
	if c.MaxQueuedCalls == 0 {
		c.MaxQueuedCalls = backend.DefaultMaxQueuedCalls
	}
	if c.MaxUnprovable == 0 {
		c.MaxUnprovable = backend.DefaultMaxUnprovable
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = backend.DefaultDrainTimeout
	}
	return c
}

// Violations is what the model found so far.
func (m *Model) Violations() []rules.Violation { return slices.Clone(m.found) }

func (m *Model) now() time.Duration {
	if m.cfg.Clock == nil {
		return 0
	}
	return m.cfg.Clock.Now()
}

// fail records a finding, once per (rule, attempt, what).
func (m *Model) fail(rule rules.ID, a *attempt, call drivers.CallID, what, detail string) {
	key := fmt.Sprintf("%v/%p/%s", rule, a, what)
	if m.seen[key] {
		return
	}
	if m.seen == nil {
		m.seen = map[string]bool{} // made at the first finding: a passing run has none
	}
	m.seen[key] = true
	if a != nil && a.view != nil {
		detail = fmt.Sprintf("attempt %d (%v): %s", a.view.ID(), a.dir, detail)
	}
	m.found = append(m.found, rules.Violation{Rule: rule, Class: rule.Class(), Endpoint: m.cfg.Endpoint, Call: uint64(call), Row: -1,
		At: m.now(), Seq: sim.Stamp(m.cfg.Clock), Seed: m.cfg.Seed, Detail: detail})
}

// guard runs one step of the model; a bug of the model is reported as the
// harness's, never passed to the backend as the driver's panic.
func (m *Model) guard(f func()) {
	defer func() {
		if p := recover(); p != nil {
			m.fail(rules.HarnessErr, nil, 0, fmt.Sprintf("panic/%d", len(m.found)), fmt.Sprintf("the backend's reference model panicked: %v", p))
		}
	}()
	f()
}

// event marks a new boundary event: a first lookup not followed by its
// Submit is settled first.
func (m *Model) event() {
	m.dirty = true
	m.settleLookup()
	m.checkRecheck()
}

// checkRecheck: the event after a declined publish's read must be its
// second lookup (B-PUBLISH).
func (m *Model) checkRecheck() {
	if m.recheck != nil {
		c := m.recheck
		m.recheck = nil
		m.fail(rules.BPublish, c.b.a, c.id, "recheck", "the store declined some of its rows, and they were not looked up again before the backend went on")
	}
}

// ---- registration

func (m *Model) registered(regions []drivers.Region, hs []drivers.Handle, err error, together bool) {
	if m.regFailed && !together && len(regions) > 0 {
		m.fail(rules.BModel, nil, 0, "register-after-failure", fmt.Sprintf("region %q was registered after a registration had failed: the backend registers one by one and stops at the first failure", regions[0].Label))
	}
	n := 0
	if err == nil || together {
		n = min(len(hs), len(regions))
	}
	if err == nil && !together {
		n = 1
	}
	for i := 0; i < n; i++ {
		b := m.bindingSlab.New()
		*b = binding{region: regions[i], handle: hs[i], live: true}
		m.bindings = append(m.bindings, b)
	}
	if err == nil && len(hs) == len(regions) {
		return
	}
	m.regFailed = true
	switch doubt, isDoubt := errors.AsType[*drivers.InDoubtError](err); {
	case isDoubt:
		m.inDoubt = append(m.inDoubt, doubt.Labels...)
	case err != nil && (errors.Is(err, drivers.ErrRegistrationRefused) || errors.Is(err, drivers.ErrBadGeometry)):
	default: // an unknown error, or too few handles: what has no handle is in doubt
		for _, r := range regions[n:] {
			m.inDoubt = append(m.inDoubt, r.Label)
		}
	}
}

func (m *Model) binding(h drivers.Handle) *binding {
	for _, b := range m.bindings {
		if b.handle == h {
			return b
		}
	}
	return nil
}

func (m *Model) unregistered(hs []drivers.Handle, err error) {
	doubt, isDoubt := errors.AsType[*drivers.InDoubtError](err)
	for _, h := range hs {
		b := m.binding(h)
		if b == nil {
			m.fail(rules.BShut, nil, 0, fmt.Sprintf("unregister-unknown/%d", h), fmt.Sprintf("the backend closed handle %d, which no registration returned (a handle of a failed Register is no binding)", h))
			continue
		}
		b.tried = b.tried || m.shut.asked
		if !b.live {
			m.fail(rules.BShut, nil, 0, fmt.Sprintf("reclosed-%d", h), fmt.Sprintf("the backend closed handle %d of region %q again, though its close already succeeded (a shutdown after one finished closes only what was freed since)", h, b.region.Label))
			continue
		}
		if m.busy(h) {
			m.fail(rules.BShut, nil, 0, "closed-busy-"+b.region.Label, fmt.Sprintf("the binding of region %q was closed while a call the backend had not read ENDED names it (only a binding no unfinished call names is closed)", b.region.Label))
		}
		switch {
		case err == nil, errors.Is(err, drivers.ErrStaleHandle):
			b.live = false
		case isDoubt && len(hs) > 1 && !slices.Contains(doubt.Labels, b.region.Label):
			b.live = false
		}
	}
}

func (m *Model) dequeue(a *attempt) {
	m.queue = slices.DeleteFunc(m.queue, func(b *batch) bool { return b.a == a })
}

func (m *Model) dispatched(a *attempt) bool {
	for i := range a.batches {
		b := &a.batches[i]
		if b.phase != queued {
			return true
		}
	}
	return false
}

// queued counts the batches waiting to be dispatched.
func (m *Model) queued() int {
	n := 0
	for _, b := range m.queue {
		if b.phase == queued && !m.committed(b.a) {
			n++
		}
	}
	return n
}

// openCalls counts, in one walk, the calls the backend knows to lack access
// evidence (in flight) and the UNPROVABLE ones.
func (m *Model) openCalls() (inFlight, unprovable int) {
	for _, c := range m.calls {
		switch {
		case c.acc == drivers.AccessUnprovable:
			unprovable++
		case !c.stuck && c.acc == drivers.AccessPending:
			inFlight++
		}
	}
	return inFlight, unprovable
}

// sweepCalls is openCalls and the bytes the UNPROVABLE calls retain, in
// one walk of the calls, for the quiescent point's checks; the walk also
// forgets the calls the backend knows ENDED. ENDED is final
// (Access.CanBecome), and every reader of m.calls passes over ENDED calls,
// so forgetting them changes no answer and keeps the walks (this one, and
// openCalls on every admission and Submit) to the calls still open.
func (m *Model) sweepCalls() (inFlight, unprovable int, retained int64) {
	n := 0 // open calls kept so far
	for i, c := range m.calls {
		switch {
		case c.acc == drivers.AccessEnded:
			continue
		case c.acc == drivers.AccessUnprovable:
			unprovable++
			retained += m.rowBytes(c)
		case !c.stuck && c.acc == drivers.AccessPending:
			inFlight++
		}
		if n != i { // written only once one was forgotten: no write barrier for the rest
			m.calls[n] = c
		}
		n++
	}
	clear(m.calls[n:]) // no stale pointers past the end
	m.calls = m.calls[:n]
	return inFlight, unprovable, retained
}

// rowBytes is the bytes of c's rows' slots (rows on no known registration
// count nothing).
func (m *Model) rowBytes(c *call) int64 {
	var n int64
	for _, r := range c.rows {
		if b := m.binding(r.Handle); b != nil {
			n += int64(b.region.SlotBytes)
		}
	}
	return n
}
