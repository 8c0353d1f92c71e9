package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim/arena"
)

// Driver probes (workload.ProbeKind): situations of the driver contract
// (SPEC §2) that the backend never creates — it registers disjoint memory
// once, never names a key twice in a batch, never closes a stale handle or
// a busy region, never registers after shutdown and always fetches into
// slots of the objects' size. A probe op puts the endpoint's driver in one
// of them directly: it calls the monitored driver (Endpoint.Monitor.Driver:
// the contract monitor sees every call, the recorder records it, the memory
// oracle watches the probe's memory), past the backend and its reference
// model, on memory of its own (arenas added with Endpoint.AddArena, regions
// labelled "probe-<op>-…") and keys of its own ("probe/<op>/…"), so the
// backend's registrations, calls and judgement are untouched.
//
// The monitor judges most answers (D-REG-1, D-BATCH-KEYS, D-REG-3, D-REG-5,
// D-REG-6); for D-MISS-HONEST it is given ground truth about the probe keys
// (Options.Truth) and told which probe calls ran without an injected
// call-level fault (Options.Injected): on a driver with the reference
// driver's fault control (memdriver's Faults and SetFault) a probe's Submit
// runs with the per-call faults off — every mix is legal, and the backend's
// calls, planned in their own Submits, keep theirs — so a FAULT of a key
// known absent is the driver's own answer. The prober itself judges what
// needs the store's history (from its events): an OK fetch must deliver an
// object the store held under the key, of exactly the slot's size
// (D-STATUS), and concurrent puts of one key must leave one of their
// objects whole, or nothing (D-SUB-5), never replacing a stored one on a
// durable store (D-SUB-4).
//
// Probes run on the simulator only (in real time the op is skipped).

// probeOwner is the attempt id a probe's slots are lent to.
const probeOwner = 1 << 40

// faultControl is the reference driver's fault control (memdriver.Driver,
// and every driver of package broken, which embeds it).
type faultControl interface {
	Faults() memdriver.FaultMix
	SetFault(kind string, rate float64) error
}

// callFaults are the per-call fault kinds, drawn inside Submit: a probe's
// Submit runs with them off.
var callFaults = []struct {
	name string
	rate func(memdriver.FaultMix) float64
}{
	{"submit-reject", func(m memdriver.FaultMix) float64 { return m.SubmitReject }},
	{"submit-error", func(m memdriver.FaultMix) float64 { return m.SubmitError }},
	{"error-before", func(m memdriver.FaultMix) float64 { return m.ErrorBefore }},
	{"error-after", func(m memdriver.FaultMix) float64 { return m.ErrorAfter }},
	{"wrong-length", func(m memdriver.FaultMix) float64 { return m.WrongLength }},
	{"delay", func(m memdriver.FaultMix) float64 { return m.Delay }},
	{"timeout", func(m memdriver.FaultMix) float64 { return m.Timeout }},
	{"unprovable-later", func(m memdriver.FaultMix) float64 { return m.UnprovableLater }},
	{"never-ends", func(m memdriver.FaultMix) float64 { return m.NeverEnds }},
}

// probeFacts is what a run knows of the probe keys: every put the store
// stored and every eviction, in order (from the store's events), the keys
// some view names (those are the backend's business: no truth about them)
// and keys whose state a probe could not settle.
type probeFacts struct {
	store   *memdriver.Store
	events  map[string][]probeEvent
	views   map[string]bool
	tainted map[string]bool
}

type probeEvent struct {
	at    time.Duration
	evict bool
	obj   []byte // a stored put's object; nil when it was gone at once
	by    memdriver.Origin
}

func newProbeFacts(store *memdriver.Store, log *workload.Log) *probeFacts {
	f := &probeFacts{store: store, events: map[string][]probeEvent{}, views: map[string]bool{}, tainted: map[string]bool{}}
	for _, op := range log.Ops {
		for _, k := range op.Keys {
			if isProbeKey(k) {
				f.views[k] = true
			}
		}
	}
	return f
}

func isProbeKey(k string) bool { return strings.HasPrefix(k, workload.ProbeKeyPrefix) }

// event records one store event of a probe key.
func (f *probeFacts) event(e memdriver.StoreEvent, at time.Duration) {
	if !e.Stored || !isProbeKey(e.Key) {
		return
	}
	ev := probeEvent{at: at, evict: e.Kind == memdriver.EventEvict, by: e.By}
	if e.Kind == memdriver.EventPut {
		ev.obj, _ = f.store.Get(e.Key)
	}
	f.events[e.Key] = append(f.events[e.Key], ev)
}

// objects is every object the store held under key, and whether each is
// known (false: one was evicted the instant it was stored).
func (f *probeFacts) objects(key string) (objs [][]byte, complete bool) {
	complete = true
	for _, e := range f.events[key] {
		switch {
		case e.evict:
		case e.obj == nil:
			complete = false
		default:
			objs = append(objs, e.obj)
		}
	}
	return objs, complete
}

// truth is the monitor's Options.Truth: a probe key no view names and no
// probe left in doubt is known present or absent on a durable store (what
// the store holds now: probes fetch a key only after its puts settled), and
// known absent on an evicting one while it was never stored.
func (f *probeFacts) truth(key string) (present, known bool) {
	if !isProbeKey(key) || f.views[key] || f.tainted[key] {
		return false, false
	}
	if f.store.Evicting() {
		return false, len(f.events[key]) == 0
	}
	return f.store.Has(key), true
}

// prober runs one endpoint's probes and judges what the monitor cannot. It
// is an [Oracle] of the endpoint (endpointOracles).
type prober struct {
	r     *run
	ep    *Endpoint
	ctl   faultControl // nil: the driver's faults cannot be switched off
	clean map[drivers.CallID]bool
	found []rules.Violation
	seen  map[string]bool // rule/call/row/key of every finding
	ends  []func()        // end-of-run checks, run once by violations
	ended bool
}

func newProber(r *run) *prober {
	return &prober{r: r, clean: map[drivers.CallID]bool{}, seen: map[string]bool{}}
}

// injected is the monitor's Options.Injected: every call but a probe call
// submitted with the per-call faults off may have had a fault injected,
// and so may any call once the endpoint's shutdown began (Shutdown fails
// the rows still in flight).
func (p *prober) injected(id drivers.CallID, _ int) bool {
	return !p.clean[id] || p.ep == nil || p.ep.Asked
}

func (p *prober) d() drivers.Driver { return p.ep.Monitor.Driver() }

func (p *prober) fail(rule rules.ID, id drivers.CallID, row int, key, detail string) {
	k := fmt.Sprintf("%v/%d/%d/%s", rule, id, row, key)
	if p.seen[k] {
		return
	}
	p.seen[k] = true
	p.found = append(p.found, rules.Violation{Rule: rule, Class: rules.Contract, Endpoint: p.ep.Name, Call: uint64(id), Row: row, Key: key,
		At: p.r.s.Now(), Seed: p.r.log.Seed, Detail: "driver probe: " + detail})
}

// violations runs the end-of-run checks once and returns every finding.
func (p *prober) violations() []rules.Violation {
	if !p.ended {
		p.ended = true
		for _, f := range p.ends {
			f()
		}
	}
	return p.found
}

// Judge implements Oracle.
func (p *prober) Judge(*Endpoint, *CheckInput) []rules.Violation {
	return append([]rules.Violation(nil), p.violations()...)
}

// The prober acts; it watches nothing at the boundary.
func (*prober) Registered(time.Duration, drivers.Handle, drivers.Region)         {}
func (*prober) Unregistered(time.Duration, drivers.Handle, drivers.Region)       {}
func (*prober) Submitted(time.Duration, drivers.CallID, drivers.RowBatch, error) {}
func (*prober) RowFinal(time.Duration, drivers.CallID, int, drivers.Status)      {}
func (*prober) AccessChanged(time.Duration, drivers.CallID, drivers.Access)      {}
func (*prober) Cancelled(time.Duration, drivers.CallID, drivers.CancelResult)    {}
func (*prober) LookedUp(time.Duration, []string, []bool, error)                  {}
func (*prober) ShutDown(time.Duration, []string)                                 {}

// quiet switches the per-call faults off until the returned undo runs.
func (p *prober) quiet() func() {
	if p.ctl == nil {
		return func() {}
	}
	m := p.ctl.Faults()
	var undo []func()
	for _, f := range callFaults {
		if rate := f.rate(m); rate > 0 && p.ctl.SetFault(f.name, 0) == nil {
			name := f.name
			undo = append(undo, func() { _ = p.ctl.SetFault(name, rate) })
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// probe is one probe op being run.
type probe struct {
	p    *prober
	op   int
	kind workload.ProbeKind
	slot int // the endpoint's slot size
	caps drivers.Capabilities
}

// start runs the probe op i; a probe that cannot apply (the driver lacks a
// capability it needs, the store cannot evict) says why in skipped.
func (p *prober) start(i int, st *opState) {
	x := &probe{p: p, op: i, kind: st.op.Probe, slot: 16, caps: p.ep.Monitor.Capabilities()}
	if len(p.ep.Regions) > 0 && p.ep.Regions[0].SlotBytes > 0 {
		x.slot = p.ep.Regions[0].SlotBytes
	}
	if why := x.run(); why != "" {
		st.skipped = "probe " + string(x.kind) + ": " + why
	}
}

func (x *probe) run() string {
	c := x.caps
	switch x.kind {
	case workload.ProbeOverlap:
		x.overlap()
	case workload.ProbeStaleClose:
		x.staleClose()
	case workload.ProbeAfterShutdown:
		x.afterShutdown(0)
	case workload.ProbeBusyClose:
		if !c.CanFetch && !c.CanPublish {
			return "the driver moves nothing"
		}
		x.busyClose()
	case workload.ProbeAbsentFetch:
		if !c.CanFetch {
			return "the driver does not fetch"
		}
		x.absentFetch()
	case workload.ProbeRepeatedKey:
		if !c.CanFetch || c.MaxRowsPerOp < 2 {
			return "the driver does not fetch two rows in one call"
		}
		x.publishThen(x.repeatedKey)
	case workload.ProbeSizeMismatch:
		if !c.CanFetch || !c.CanPublish {
			return "the driver does not both publish and fetch"
		}
		x.publishThen(x.sizeMismatch)
	case workload.ProbeConcurrentPut:
		if !c.CanPublish {
			return "the driver does not publish"
		}
		x.concurrentPut()
	case workload.ProbeEvictDuringFetch:
		if !c.CanFetch || !c.CanPublish {
			return "the driver does not both publish and fetch"
		}
		if !x.p.r.store.Evicting() {
			return "the store is durable (only an evicting store may drop a key)"
		}
		x.publishThen(x.evictDuringFetch)
	default:
		return "unknown probe kind"
	}
	return ""
}

func (x *probe) label(what string) string {
	return fmt.Sprintf("%s%d-%s", workload.ProbeLabelPrefix, x.op, what)
}

func (x *probe) key(what string) string {
	return fmt.Sprintf("%s%d/%s", workload.ProbeKeyPrefix, x.op, what)
}

// arena is fresh memory of the probe, every slot lent to it, judged by the
// memory oracle; hook (if set) sees every touch after the recorder.
func (x *probe) arena(what string, slots, slotBytes int, hook func(arena.Touch)) *arena.Arena {
	ep := x.p.ep
	a := arena.New(x.label(what), slots, slotBytes, arena.Options{Clock: x.p.r.s, OnTouch: func(t arena.Touch) {
		ep.Recorder.OnTouch(t)
		if hook != nil {
			hook(t)
		}
	}})
	for i := range slots {
		a.Lend(i, probeOwner)
	}
	ep.AddArena(a)
	return a
}

// register registers a under its own label.
func (x *probe) register(a *arena.Arena) (drivers.Handle, bool) {
	h, err := x.p.d().Register(a.Region())
	return h, err == nil
}

// close closes h, retrying a close that failed (D-REG-4 says a later close
// retries); it reports whether a close succeeded.
func (x *probe) close(h drivers.Handle) bool {
	for range 3 {
		err := x.p.d().Unregister(h)
		if err == nil {
			return true
		}
		if !errors.Is(err, drivers.ErrUnregisterFailed) {
			return false
		}
	}
	return false
}

// closeWhenEnded closes h once every call of cs is done with access ENDED
// (an UNPROVABLE call keeps its memory registered: Shutdown labels it).
func (x *probe) closeWhenEnded(h drivers.Handle, cs ...drivers.Call) {
	for _, c := range cs {
		if c != nil && c.Access() != drivers.AccessEnded {
			return
		}
	}
	x.close(h)
}

// submit starts a probe call with the per-call faults off; then runs once
// the call is done (see done). A refused Submit returns its error and
// calls nothing.
func (x *probe) submit(what string, b drivers.RowBatch, then func(drivers.Call)) (drivers.Call, error) {
	p := x.p
	var c drivers.Call
	finished := false
	wake := p.r.s.Wake(fmt.Sprintf("probe/%s %d %s", p.ep.Name, x.op, what), func() {
		if c == nil || finished || !done(c, len(b.Rows)) {
			return
		}
		finished = true
		if then != nil {
			then(c)
		}
	})
	undo := p.quiet()
	c, err := p.d().Submit(b, wake)
	undo()
	if err != nil {
		return nil, err
	}
	if p.ctl != nil {
		p.clean[c.ID()] = true
	}
	return c, nil
}

// done: the call has access evidence and every row a final result (or
// the driver answered a wrong number of results, which the monitor
// reports).
func done(c drivers.Call, rows int) bool {
	if !c.Access().Evidenced() {
		return false
	}
	res := c.Results()
	if len(res) != rows {
		return true
	}
	for _, s := range res {
		if !s.Final() {
			return false
		}
	}
	return true
}

// object is the content the probe publishes from row of its op.
func (x *probe) object(row, n int) []byte { return content(x.p.r.log.Seed, x.op, 1000+row, n) }

// settled records what a probe publish of key left behind: a row that
// FAULTed, or a call without proof that it ended, may still land.
func (x *probe) settled(c drivers.Call, key string) {
	res := c.Results()
	if c.Access() != drivers.AccessEnded || len(res) != 1 || (res[0] != drivers.OK && res[0] != drivers.Miss) {
		x.p.r.facts.tainted[key] = true
	}
}

// publishThen publishes the probe's object (slotBytes of its size) under
// key "obj" from memory of its own, then (once the publish is done, or at
// once when the driver does not publish) looks the key up and runs next.
// The lookup is judged against the truth (D-LOOK-2).
func (x *probe) publishThen(next func(key string)) {
	key := x.key("obj")
	lookThenNext := func() {
		_, _ = x.p.d().Contains(context.Background(), []string{key})
		next(key)
	}
	if !x.caps.CanPublish {
		lookThenNext()
		return
	}
	size := x.slot
	if x.kind == workload.ProbeSizeMismatch {
		size = x.slot / 2
		if size == 0 {
			size = 2 * x.slot
		}
	}
	a := x.arena("pub", 1, size, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	a.Fill(0, x.object(0, size))
	b := drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h, Slot: 0, Position: 0}}}
	if _, err := x.submit("publish", b, func(c drivers.Call) {
		x.settled(c, key)
		x.closeWhenEnded(h, c)
		lookThenNext()
	}); err != nil {
		x.close(h)
	}
}

// fetch fetches keys into consecutive slots of fresh memory of the
// endpoint's slot size, judges every OK row against the store (okCheck),
// and closes the memory once the call ended. hook sees its touches.
func (x *probe) fetch(what string, keys []string, hook func(c *drivers.Call) func(arena.Touch)) {
	var c drivers.Call
	var th func(arena.Touch)
	if hook != nil {
		th = hook(&c)
	}
	a := x.arena(what, len(keys), x.slot, th)
	h, ok := x.register(a)
	if !ok {
		return
	}
	b := drivers.RowBatch{Dir: drivers.Fetch}
	for i, k := range keys {
		b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
	}
	var err error
	c, err = x.submit(what, b, func(c drivers.Call) {
		x.okCheck(c, b, a)
		x.closeWhenEnded(h, c)
	})
	if err != nil {
		x.close(h)
	}
}

// okCheck is D-STATUS for every row of a done FETCH answered OK: the slot
// holds, whole, an object of exactly the slot's size that the store held
// under the key. A key the store never held is judged only when the driver
// is known to use the harness's store (the reference driver's kind).
func (x *probe) okCheck(c drivers.Call, b drivers.RowBatch, a *arena.Arena) {
	res := c.Results()
	if len(res) != len(b.Rows) {
		return // the monitor reports a wrong number of results (D-STATUS)
	}
	f := x.p.r.facts
	for i, s := range res {
		row := b.Rows[i]
		if s != drivers.OK || f.views[row.Key] {
			continue
		}
		got := a.Peek(row.Slot)
		objs, complete := f.objects(row.Key)
		switch {
		case !complete:
		case len(objs) == 0 && len(f.events[row.Key]) == 0 && x.p.ctl != nil:
			x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q, which the store never held (OK means the whole object is in the slot)", i, row.Key))
		case len(objs) == 0:
		case !holdsOne(got, objs):
			sizes := map[int]bool{}
			for _, o := range objs {
				sizes[len(o)] = true
			}
			if !sizes[len(got)] {
				x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q into a %d-byte slot, but every object the store held under it has another size (%d bytes first): OK means the whole object, of exactly the slot's size", i, row.Key, len(got), len(objs[0])))
				continue
			}
			last := objs[len(objs)-1]
			x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q but the slot holds no object the store held under it (%d of %d bytes differ from the last one)", i, row.Key, diffBytes(got, last), len(got)))
		}
	}
}

func holdsOne(got []byte, objs [][]byte) bool {
	for _, o := range objs {
		if bytes.Equal(got, o) {
			return true
		}
	}
	return false
}

func diffBytes(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// overlap: register memory, then a second region over the same memory
// (D-REG-1 refuses it); whatever registered is closed again.
func (x *probe) overlap() {
	a := x.arena("a", 2, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	alias := a.Region()
	alias.Label = x.label("alias")
	if h2, err := x.p.d().Register(alias); err == nil {
		x.close(h2)
	}
	x.close(h)
}

// staleClose: register, close, register the same memory again, close the
// old handle (D-REG-3: a no-op), then — for a driver that cannot tell the
// monitor whether a handle is live — use the new handle (a call on it must
// be accepted), and close it once the call ended.
func (x *probe) staleClose() {
	a := x.arena("a", 2, x.slot, nil)
	h1, ok := x.register(a)
	if !ok || !x.close(h1) {
		return
	}
	h2, ok := x.register(a)
	if !ok {
		return
	}
	_ = x.p.d().Unregister(h1)
	if _, ok := x.p.ep.Monitor.Unwrap().(monitor.LiveReporter); ok {
		// The monitor asked the driver whether h2 is still live; without
		// that probe it learns it from a call on h2 (refused as stale?).
		x.close(h2)
		return
	}
	b := drivers.RowBatch{Rows: []drivers.Row{{Handle: h2, Slot: 0, Position: 0}}}
	switch {
	case x.caps.CanPublish:
		b.Dir, b.Rows[0].Key = drivers.Publish, x.key("obj")
		a.Fill(0, x.object(0, x.slot))
	case x.caps.CanFetch:
		b.Dir, b.Rows[0].Key = drivers.Fetch, x.key("absent")
	default:
		x.close(h2)
		return
	}
	if _, err := x.submit("after stale close", b, func(c drivers.Call) {
		if b.Dir == drivers.Publish {
			x.settled(c, b.Rows[0].Key)
		}
		x.closeWhenEnded(h2, c)
	}); err != nil {
		x.close(h2)
	}
}

// afterShutdown: once the endpoint's driver was shut down (its backend's
// shutdown returned), register memory (D-REG-5 refuses it). It waits for
// the shutdown in steps of 100µs, for at most 20ms.
func (x *probe) afterShutdown(tries int) {
	if !x.p.ep.Down {
		if tries < 200 {
			x.p.r.s.After(100*time.Microsecond, fmt.Sprintf("probe/%s %d waits for shutdown", x.p.ep.Name, x.op), func() { x.afterShutdown(tries + 1) })
		}
		return
	}
	a := x.arena("late", 1, x.slot, nil)
	if h, ok := x.register(a); ok {
		x.close(h)
	}
}

// busyClose: a call on fresh memory, and at once a close of its region
// while the call's access is not ENDED (D-REG-6 refuses it); the region is
// closed for good once the call ended.
func (x *probe) busyClose() {
	a := x.arena("busy", 1, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	b := drivers.RowBatch{Rows: []drivers.Row{{Handle: h, Slot: 0, Position: 0}}}
	if x.caps.CanPublish {
		b.Dir, b.Rows[0].Key = drivers.Publish, x.key("obj")
		a.Fill(0, x.object(0, x.slot))
	} else {
		b.Dir, b.Rows[0].Key = drivers.Fetch, x.key("absent")
	}
	closed := false
	c, err := x.submit("busy", b, func(c drivers.Call) {
		if b.Dir == drivers.Publish {
			x.settled(c, b.Rows[0].Key)
		}
		if !closed {
			x.closeWhenEnded(h, c)
		}
	})
	if err != nil {
		x.close(h)
		return
	}
	closed = c != nil && x.p.d().Unregister(h) == nil
}

// absentFetch: fetch a key no one publishes; the monitor judges the
// answer against the truth (D-MISS-HONEST), the memory oracle the slot.
func (x *probe) absentFetch() {
	x.fetch("absent", []string{x.key("absent")}, nil)
}

// repeatedKey: a FETCH batch naming the key twice (D-BATCH-KEYS refuses
// it).
func (x *probe) repeatedKey(key string) {
	x.fetch("twice", []string{key, key}, nil)
}

// sizeMismatch: fetch the object, published from a slot half the
// endpoint's size, into a slot of the endpoint's size (D-STATUS: not OK).
func (x *probe) sizeMismatch(key string) {
	x.fetch("fetch", []string{key}, nil)
}

// evictDuringFetch: fetch the object and evict it from the store as the
// fetch's first bytes land (the store may drop a key at any time); an OK
// must still deliver the whole object (D-STATUS).
func (x *probe) evictDuringFetch(key string) {
	store := x.p.r.store
	x.fetch("fetch", []string{key}, func(c *drivers.Call) func(arena.Touch) {
		evicted := false
		return func(t arena.Touch) {
			if evicted || t.Op != arena.Write || *c == nil || t.By.Call != (*c).ID() {
				return
			}
			evicted = true
			x.p.r.s.After(0, fmt.Sprintf("probe/%s %d evicts %s", x.p.ep.Name, x.op, key), func() { store.Evict(key) })
		}
	})
}

// concurrentPut: two different objects published under one key by two
// calls in flight together. Once both are done, and again at the end of
// the run, the store holds one of them whole or nothing (D-SUB-5); on a
// durable store no stored object is ever replaced (D-SUB-4).
func (x *probe) concurrentPut() {
	key := x.key("obj")
	a := x.arena("puts", 2, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	objs := [][]byte{x.object(0, x.slot), x.object(1, x.slot)}
	var calls [2]drivers.Call
	left := 0
	for i := range 2 {
		a.Fill(i, objs[i])
		b := drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h, Slot: i, Position: 0}}}
		c, err := x.submit(fmt.Sprintf("put %d", i), b, func(c drivers.Call) {
			x.settled(c, key)
			if left--; left == 0 {
				x.storeCheck(key, objs, calls[0], calls[1])
				x.closeWhenEnded(h, calls[0], calls[1])
			}
		})
		if err == nil {
			calls[i] = c
			left++
		}
	}
	if left == 0 {
		x.close(h)
		return
	}
	x.p.ends = append(x.p.ends, func() { x.storeCheck(key, objs, calls[0], calls[1]) })
}

// storeCheck judges the store under key after the probe's puts of objs.
func (x *probe) storeCheck(key string, objs [][]byte, cs ...drivers.Call) {
	p, f := x.p, x.p.r.facts
	if f.views[key] {
		return
	}
	var id drivers.CallID
	for _, c := range cs {
		if c != nil {
			id = c.ID()
		}
	}
	if obj, ok := f.store.Get(key); ok && !holdsOne(obj, objs) {
		p.fail(rules.DSub5, id, 0, key, fmt.Sprintf("after two concurrent PUBLISHes of key %q the store holds an object neither wrote whole (%d of %d bytes differ from the first, %d from the second): a put is visible whole or not at all",
			key, diffBytes(obj, objs[0]), len(obj), diffBytes(obj, objs[1])))
	}
	if f.store.Evicting() {
		return // the store may drop the first object; a later put may then store
	}
	stored := 0
	for _, e := range f.events[key] {
		if e.evict {
			continue
		}
		if stored++; stored > 1 {
			// A durable store drops nothing, so a second stored object
			// replaced the first.
			who := "a put outside any driver call"
			if e.by.Driver != "" {
				who = fmt.Sprintf("%s call %d row %d", e.by.Driver, e.by.Call, e.by.Row)
			}
			p.fail(rules.DSub4, id, 0, key, fmt.Sprintf("on a durable store the object under key %q was replaced at %v (by %s) after a PUBLISH had stored one: first writer wins", key, e.at, who))
			return
		}
	}
}
