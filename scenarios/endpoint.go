package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim/arena"
)

// regionSpec is one region of an endpoint: LABEL:SLOTSxBYTES, optionally
// /MEM (the memory really behind it, in bytes, when it differs from
// SLOTS*BYTES) or @OTHER (carved from region OTHER's memory). The last two
// exist to state bad geometry (D-GEOM).
type regionSpec struct {
	label            string
	slots, slotBytes int
	mem              int    // bytes of memory; 0: slots*slotBytes
	share            string // label of the region whose memory it uses
}

func parseRegion(s string) (regionSpec, error) {
	var r regionSpec
	label, rest, ok := strings.Cut(s, ":")
	if !ok || label == "" {
		return r, fmt.Errorf("%q: want LABEL:SLOTSxBYTES", s)
	}
	r.label = label
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		r.share, rest = rest[i+1:], rest[:i]
		if r.share == "" {
			return r, fmt.Errorf("%q: empty region after @", s)
		}
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n <= 0 {
			return r, fmt.Errorf("%q: memory size after / must be a positive number of bytes", s)
		}
		r.mem, rest = n, rest[:i]
	}
	a, b, ok := strings.Cut(rest, "x")
	slots, err1 := strconv.Atoi(a)
	bytes, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || slots < 0 || bytes < 0 {
		return r, fmt.Errorf("%q: want LABEL:SLOTSxBYTES with non-negative numbers", s)
	}
	r.slots, r.slotBytes = slots, bytes
	return r, nil
}

// limitRegion holds a region to the limits of an op log
// (workload.CheckRegion; the memory of every region of the file together
// within workload.MaxTotalBytes), so a region of 3000000000 slots is one
// error line, not an out-of-memory crash.
func (w *scenarioRun) limitRegion(r regionSpec) error {
	if err := workload.CheckRegion(r.String(), r.slots, r.slotBytes); err != nil {
		return err
	}
	if r.share != "" {
		return nil // carved from another region's memory: nothing new
	}
	mem := r.mem
	if mem == 0 {
		mem = r.slots * max(1, r.slotBytes)
	}
	if err := workload.CheckRegion(r.String(), 1, mem); err != nil {
		return err
	}
	return w.budget.Add(r.String(), 1, mem)
}

func (r regionSpec) String() string {
	s := fmt.Sprintf("%s:%dx%d", r.label, r.slots, r.slotBytes)
	if r.mem > 0 {
		s += fmt.Sprintf("/%d", r.mem)
	}
	if r.share != "" {
		s += "@" + r.share
	}
	return s
}

// cmdEndpoint creates an endpoint: lender (one arena per region), driver
// (through the registry), contract monitor with the history recorder and the
// scenario's printer as observers, and the backend, which registers at once
// unless register=later.
func cmdEndpoint(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	name := b.pos[0]
	if w.byName[name] != nil {
		return w.fail(b, "endpoint %q defined twice", name)
	}
	if strings.ContainsAny(name, "/@") {
		return w.fail(b, "endpoint name %q must not contain / or @", name)
	}
	ep := &endpoint{name: name, labels: map[drivers.Handle]string{}, calls: map[drivers.CallID]*callRec{}}
	ep.driver = b.args["driver"]
	if ep.driver == "" {
		ep.driver = "memory"
	}
	if w.opts.Driver != "" {
		ep.driver = w.opts.Driver
	}
	rows, err := w.intArg(b, "rows", 4)
	if err != nil {
		return err
	}
	absentIsMiss, err := w.boolArg(b, "absent-is-miss", true)
	if err != nil {
		return err
	}
	canCancel, err := w.boolArg(b, "cancel", true)
	if err != nil {
		return err
	}
	ep.caps = drivers.Capabilities{MaxRowsPerOp: rows, AbsentIsMiss: absentIsMiss, CanFetch: true, CanPublish: true, CanCancel: canCancel}
	inflight, err := w.intArg(b, "inflight", backend.DefaultMaxCallsInFlight)
	if err != nil {
		return err
	}
	queued, err := w.intArg(b, "queued", backend.DefaultMaxQueuedCalls)
	if err != nil {
		return err
	}
	unprovable, err := w.intArg(b, "unprovable", backend.DefaultMaxUnprovable)
	if err != nil {
		return err
	}
	drainTimeout, err := w.durArg(b, "drain-timeout", time.Millisecond)
	if err != nil {
		return err
	}
	cfg := backend.Config{MaxCallsInFlight: inflight, MaxQueuedCalls: queued, MaxUnprovable: unprovable, DrainTimeout: drainTimeout}
	mix, err := w.faultsArg(b)
	if err != nil {
		return err
	}
	ep.faulty = mix != (memdriver.FaultMix{})
	regs := listArg(b, "regions")
	if len(regs) == 0 {
		regs = []string{"r0:8x64"}
	}
	if len(regs) > workload.MaxRegions {
		return w.fail(b, "bad argument regions=: %d regions; at most %d per endpoint (%s)", len(regs), workload.MaxRegions, workload.LimitsDoc)
	}
	for _, s := range regs {
		r, err := parseRegion(s)
		if err == nil {
			err = w.limitRegion(r)
		}
		if err != nil {
			return w.fail(b, "bad argument regions=%q: %v", b.args["regions"], err)
		}
		ep.specs = append(ep.specs, r)
	}
	later := false
	switch v := b.args["register"]; v {
	case "", "now":
	case "later":
		later = true
	default:
		return w.badArg(b, "register", "now or later")
	}
	memory, claim := w.memory(b, ep)
	ep.Endpoint, err = engine.NewEndpoint(engine.EndpointOptions{
		Name: name, Driver: ep.driver, New: w.opts.Factory, RT: w.s, Sched: w.s, Store: w.store, Caps: ep.caps, Faults: mix, Seed: w.seed,
		Recorder: model.RecorderOptions{Sequence: &w.seq, StoreLogComplete: true, Lookups: true},
		Monitor: monitor.Options{
			Truth:    w.truth,
			Injected: func(drivers.CallID, int) bool { return ep.faulty || !ep.caps.AbsentIsMiss },
		},
		Observers: []monitor.Observer{&printer{w: w, ep: ep}},
		OnTouch:   func(t arena.Touch) { w.touch(ep, t) },
		Memory:    memory, Claim: claim, Backend: cfg, Later: true,
	})
	var se *Error
	var ee *engine.EndpointError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &ee) && ee.Part == engine.ErrMemory:
		return w.fail(b, "bad argument regions=%q: %v", b.args["regions"], ee.Err)
	case errors.As(err, &ee):
		return w.fail(b, "bad argument driver=%q: %v", ep.driver, ee.Err)
	case err != nil:
		return w.fail(b, "%v", err)
	}
	w.eps = append(w.eps, ep)
	w.byName[name] = ep
	_, together := ep.Driver.(drivers.TogetherRegisterer)
	w.printf("%s driver %s: rows=%d absent-is-miss=%v cancel=%v together=%v", name, ep.driver, rows, absentIsMiss, canCancel, together)
	if s := mix.String(); s != "" {
		w.printf("%s faults: %s", name, strings.Join(strings.Split(strings.ReplaceAll(s, "fault ", ""), "\n"), ", "))
	}
	var shown []string
	for _, r := range ep.specs {
		shown = append(shown, r.String())
	}
	w.printf("%s regions %s; backend inflight=%d queued=%d unprovable=%d drain-timeout=%v", name, strings.Join(shown, " "), inflight, queued, unprovable, drainTimeout)
	if !later {
		w.register(ep)
	}
	return nil
}

// memory is the endpoint's memory: the lender's specs (one arena per
// region that has memory of its own) and the claim of the regions the
// backend is asked to register, which may state a geometry their memory
// does not have.
func (w *scenarioRun) memory(b *block, ep *endpoint) ([]lender.Spec, func(*lender.Lender) ([]drivers.Region, error)) {
	var specs []lender.Spec
	arenaLabel := map[int]string{}
	used := map[string]bool{}
	for i, r := range ep.specs {
		if r.share != "" {
			continue
		}
		sb := max(1, r.slotBytes)
		mem := r.mem
		if mem == 0 {
			mem = r.slots * sb
		}
		label := r.label
		for n := 2; used[label]; n++ {
			label = fmt.Sprintf("%s~%d", r.label, n) // a duplicate label (D-GEOM) still needs its own arena
		}
		used[label] = true
		arenaLabel[i] = label
		specs = append(specs, lender.Spec{Label: label, Slots: max(1, mem/sb), SlotBytes: sb})
	}
	claim := func(l *lender.Lender) ([]drivers.Region, error) {
		var regions []drivers.Region
		for i, r := range ep.specs {
			var mem drivers.Memory
			if r.share != "" {
				owner := -1
				for j, o := range ep.specs {
					if o.label == r.share && o.share == "" {
						owner = j
					}
				}
				if owner < 0 {
					return nil, w.fail(b, "bad argument regions=%q: region %s shares the memory of %q, which is not a region with memory of its own", b.args["regions"], r.label, r.share)
				}
				mem = l.Arena(arenaLabel[owner])
			} else {
				mem = l.Arena(arenaLabel[i])
			}
			regions = append(regions, drivers.Region{Label: r.label, Slots: r.slots, SlotBytes: r.slotBytes, Mem: mem})
		}
		return regions, nil
	}
	return specs, claim
}

// touch prints a memory touch when the scenario shows touches (the
// recorder, the memory oracle, saw it first).
func (w *scenarioRun) touch(ep *endpoint, t arena.Touch) {
	if !w.touches {
		return
	}
	where := fmt.Sprintf("%s/%d", t.Region, t.Slot)
	off := t.Off
	if t.Slot >= 0 {
		if a := ep.Lender.Arena(t.Region); a != nil {
			off -= t.Slot * a.Region().SlotBytes
		}
	} else {
		where = fmt.Sprintf("%s@%d", t.Region, t.Off)
	}
	w.printf("%s touch %s %v [%d,%d) by call %d row %d (slot %v)", ep.name, where, t.Op, off, off+t.N, t.By.Call, t.By.Row, t.State)
}

// register builds the backend, which validates and registers the regions.
func (w *scenarioRun) register(ep *endpoint) {
	ep.Register()
	switch b, err := ep.Backend, ep.RegErr; {
	case b == nil:
		w.printf("%s backend refused: %v", ep.name, err)
		w.printf("%s nothing registered", ep.name)
	case err != nil:
		w.printf("%s registration failed: %v", ep.name, err)
		w.printf("%s backend refuses admission", ep.name)
	default:
		w.printf("%s ready", ep.name)
	}
}

// faultsArg reads faults=row-fault:0.5,late-write:1.
func (w *scenarioRun) faultsArg(b *block) (memdriver.FaultMix, error) {
	var lines []string
	for _, f := range listArg(b, "faults") {
		name, rate, ok := strings.Cut(f, ":")
		if !ok {
			rate = "1"
		}
		lines = append(lines, "fault "+name+" rate="+rate)
	}
	mix, err := memdriver.ParseFaultMix(strings.Join(lines, "\n"))
	if err != nil {
		return mix, w.fail(b, "bad argument faults=%q: %v", b.args["faults"], err)
	}
	return mix, nil
}

// printer is the scenario's monitor observer: it prints every event at the
// driver boundary as it happens and keeps the scenario's truth about
// publishes and fetches in flight.
type printer struct {
	w  *scenarioRun
	ep *endpoint
}

var (
	_ monitor.Observer         = (*printer)(nil)
	_ monitor.CallbackObserver = (*printer)(nil)
)

func (p *printer) Registered(_ time.Duration, h drivers.Handle, r drivers.Region) {
	p.ep.labels[h] = r.Label
	p.w.printf("%s registered %s %dx%d handle %d", p.ep.name, r.Label, r.Slots, r.SlotBytes, h)
}

func (p *printer) Unregistered(_ time.Duration, h drivers.Handle, r drivers.Region) {
	p.w.printf("%s unregistered %s handle %d", p.ep.name, r.Label, h)
}

func (p *printer) Submitted(_ time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	if err != nil {
		p.w.printf("%s submit %v %s refused: %v", p.ep.name, b.Dir, p.ep.rows(b.Rows), err)
		return
	}
	p.w.printf("%s call %d %v %s", p.ep.name, id, b.Dir, p.ep.rows(b.Rows))
	c := &callRec{dir: b.Dir, keys: b.Keys(), seq: p.w.change + 1}
	p.ep.calls[id] = c
	for _, k := range c.keys {
		if b.Dir == drivers.Publish {
			p.w.pubs[k]++
		} else {
			p.w.fetches[k] = append(p.w.fetches[k], c.seq)
		}
	}
}

func (p *printer) RowFinal(_ time.Duration, id drivers.CallID, row int, st drivers.Status) {
	key := "?"
	if c := p.ep.calls[id]; c != nil && row < len(c.keys) {
		key = c.keys[row]
	}
	p.w.printf("%s call %d row %d %s %v", p.ep.name, id, row, key, st)
}

func (p *printer) AccessChanged(_ time.Duration, id drivers.CallID, acc drivers.Access) {
	p.w.printf("%s call %d access %v", p.ep.name, id, acc)
	c := p.ep.calls[id]
	if c == nil || c.ended || acc != drivers.AccessEnded {
		return
	}
	c.ended = true
	for _, k := range c.keys {
		if c.dir == drivers.Publish {
			p.w.pubs[k]--
			continue
		}
		fs := p.w.fetches[k]
		for i, s := range fs {
			if s == c.seq {
				p.w.fetches[k] = append(fs[:i:i], fs[i+1:]...)
				break
			}
		}
	}
}

func (p *printer) Cancelled(_ time.Duration, id drivers.CallID, res drivers.CancelResult) {
	p.w.printf("%s call %d cancel: %v", p.ep.name, id, res)
}

func (p *printer) LookedUp(_ time.Duration, keys []string, found []bool, err error) {
	if err != nil {
		p.w.printf("%s lookup [%s] failed: %v", p.ep.name, strings.Join(keys, " "), err)
		return
	}
	ans := make([]string, len(found))
	for i, f := range found {
		ans[i] = "absent"
		if f {
			ans[i] = "present"
		}
	}
	p.w.printf("%s lookup [%s]: [%s]", p.ep.name, strings.Join(keys, " "), strings.Join(ans, " "))
}

func (p *printer) ShutDown(_ time.Duration, labels []string) {
	p.w.printf("%s driver shutdown labels [%s]", p.ep.name, strings.Join(labels, " "))
}

func (p *printer) Callback(_ time.Duration, id drivers.CallID) {
	p.w.printf("%s call %d callback", p.ep.name, id)
}
