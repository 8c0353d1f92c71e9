package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
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
//
// This file has the prober and the store's history of the probe keys; the
// probes, one per kind, are in probe_kinds.go, and their steps and checks in
// probe_steps.go.

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
// and keys whose state a probe could not settle. The maps are made at
// their first entry: most runs have no probe keys.
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
	f := &probeFacts{store: store}
	for _, op := range log.Ops {
		for _, k := range op.Keys {
			if isProbeKey(k) {
				if f.views == nil {
					f.views = map[string]bool{}
				}
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
	if f.events == nil {
		f.events = map[string][]probeEvent{}
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

// taint marks key as one whose state a probe could not settle.
func (f *probeFacts) taint(key string) {
	if f.tainted == nil {
		f.tainted = map[string]bool{}
	}
	f.tainted[key] = true
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
	ctl   faultControl            // nil: the driver's faults cannot be switched off
	clean map[drivers.CallID]bool // probe calls without faults (made at the first)
	found []rules.Violation
	seen  map[string]bool // rule/call/row/key of every finding (made at the first)
	ends  []func()        // end-of-run checks, run once by violations
	ended bool
}

func newProber(r *run) *prober {
	return &prober{r: r}
}

// injected is the monitor's Options.Injected: every call but a probe call
// submitted with the per-call faults off may have had a fault injected,
// and so may any call once the endpoint's shutdown began (Shutdown fails
// the rows still in flight).
func (p *prober) injected(id drivers.CallID, _ int) bool {
	return !p.clean[id] || p.ep == nil || p.ep.Asked
}

// cleanCall notes a probe call submitted with the per-call faults off.
func (p *prober) cleanCall(id drivers.CallID) {
	if p.clean == nil {
		p.clean = map[drivers.CallID]bool{}
	}
	p.clean[id] = true
}

func (p *prober) d() drivers.Driver { return p.ep.Monitor.Driver() }

func (p *prober) fail(rule rules.ID, id drivers.CallID, row int, key, detail string) {
	k := fmt.Sprintf("%v/%d/%d/%s", rule, id, row, key)
	if p.seen[k] {
		return
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[k] = true
	p.found = append(p.found, rules.Violation{Rule: rule, Class: rules.Contract, Endpoint: p.ep.Name, Call: uint64(id), Row: row, Key: key,
		At: p.r.s.Now(), Seq: sim.Stamp(p.r.s), Seed: p.r.log.Seed, Detail: "driver probe: " + detail})
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

// The prober acts; it watches nothing at the boundary (a blindOracle: the
// monitor does not call these).
func (*prober) blind()                                                           {}
func (*prober) Registered(time.Duration, drivers.Handle, drivers.Region)         {}
func (*prober) Unregistered(time.Duration, drivers.Handle, drivers.Region)       {}
func (*prober) Submitted(time.Duration, drivers.CallID, drivers.RowBatch, error) {}
func (*prober) RowFinal(time.Duration, drivers.CallID, int, drivers.Status)      {}
func (*prober) AccessChanged(time.Duration, drivers.CallID, drivers.Access)      {}
func (*prober) Cancelled(time.Duration, drivers.CallID, drivers.CancelResult)    {}
func (*prober) LookedUp(time.Duration, []string, []bool, error)                  {}
func (*prober) ShutDown(time.Duration, []string)                                 {}

// quiet switches the per-call faults off until restore runs on what it
// returns (a value, not a closure: a probe's Submit allocates nothing for it).
func (p *prober) quiet() quieted {
	if p.ctl == nil {
		return quieted{}
	}
	q := quieted{ctl: p.ctl, mix: p.ctl.Faults()}
	for i, f := range callFaults {
		if f.rate(q.mix) > 0 && p.ctl.SetFault(f.name, 0) == nil {
			q.off |= 1 << i
		}
	}
	return q
}

// quieted is what quiet switched off: the callFaults whose bit is set in
// off, each to be set back to its rate in mix.
type quieted struct {
	ctl faultControl
	mix memdriver.FaultMix
	off uint32
}

func (q quieted) restore() {
	for i, f := range callFaults {
		if q.off&(1<<i) != 0 {
			_ = q.ctl.SetFault(f.name, f.rate(q.mix))
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
// capability it needs, the store cannot evict) says why in skip.
func (p *prober) start(i int, st *opState) {
	x := &probe{p: p, op: i, kind: st.op.Probe, slot: 16, caps: p.ep.Monitor.Capabilities()}
	if len(p.ep.Regions) > 0 && p.ep.Regions[0].SlotBytes > 0 {
		x.slot = p.ep.Regions[0].SlotBytes
	}
	if why := x.run(); why != "" {
		st.skip = errors.New("probe " + string(x.kind) + ": " + why)
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
