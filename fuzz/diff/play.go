package diff

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/drivers/monitor/simprobe"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// rowID names one answer: a row of an op (its view position) in one phase.
type rowID struct {
	op, pos int
	what    string
}

// phase orders the answers of one row: its lookup before its call.
func (r rowID) phase() int {
	if strings.HasSuffix(r.what, "lookup") {
		return 0
	}
	return 1
}

func (r rowID) less(o rowID) bool {
	if r.op != o.op {
		return r.op < o.op
	}
	if r.pos != o.pos {
		return r.pos < o.pos
	}
	return r.phase() < o.phase()
}

// answer is one side's answer to one row, and its judgement.
type answer struct {
	key, endpoint, text string
	v                   verdict
}

// player is one side playing a log: its runtime, store, endpoints and
// what its answers proved (knowledge).
type player struct {
	side  Side
	log   *workload.Log
	objs  map[string]obj // the bytes of every publish row of the log → its row
	first map[string]obj // every key's first publish row in the log
	sched *sim.Scheduler // simulated side
	rtr   *realtime.Runtime
	rt    sim.Runtime
	store *memdriver.Store
	seq   atomic.Int64

	eps    []*endpoint
	byName map[string]*endpoint
	know   *knowledge
	ans    map[rowID]answer
	res    SideResult

	maxSteps uint64
	stopped  error       // the simulation ran out of steps or was flooded
	stalled  string      // real time: a call got no final answer within the wait; play stopped there
	kick     chan func() // real time: the change callbacks' wake-up (realwait.go)
}

// endpoint is one endpoint of the log on one side: the monitored driver
// and the memory it plays on, a fresh slot per row.
type endpoint struct {
	spec      workload.Endpoint
	ep        *engine.Endpoint
	d         drivers.Driver // the monitored driver
	caps      drivers.Capabilities
	slotBytes int
	arenas    []*arena.Arena
	handles   []drivers.Handle
	next      int    // next fresh slot, counted across arenas
	down      string // why the endpoint cannot play ("" when it can)
	closed    bool   // the log shut it down: later ops on it are not played
}

func newPlayer(log *workload.Log, side Side, objs map[string]obj, first map[string]obj) (*player, error) {
	p := &player{side: side, log: log, objs: objs, first: first, byName: map[string]*endpoint{}, ans: map[rowID]answer{},
		know:     newKnowledge(side.Evicting || log.Store == "evicting"),
		maxSteps: engine.DefaultMaxSteps + engine.StepsPerOp*uint64(len(log.Ops)),
		res:      SideResult{Name: side.Name, Freedoms: map[string]int{}},
	}
	if side.RealTime {
		p.rtr = realtime.New(log.Seed)
		p.rt = p.rtr
		p.kick = make(chan func(), 1)
	} else {
		p.sched = sim.New(engine.SchedFor(log))
		p.rt = p.sched
		store, err := memdriver.NewStore(memdriver.StoreOptions{
			Evicting: log.Store == "evicting", EvictChance: engine.EvictChance(log.Store),
			Rand: p.sched.Rand("harness/store"), OnEvent: p.storeEvent,
		})
		if err != nil {
			return nil, err
		}
		p.store = store
	}
	need := rowsPerEndpoint(log)
	for _, spec := range log.Endpoints {
		e, err := p.endpoint(spec, need[spec.Name])
		if e != nil {
			p.eps = append(p.eps, e)
			p.byName[spec.Name] = e
		}
		if err != nil {
			p.close()
			return nil, fmt.Errorf("%w %s: endpoint %s: %w", ErrSide, side.Name, spec.Name, err)
		}
	}
	return p, nil
}

// storeEvent tells the recorder of the endpoint that ran a put that the
// simulated store stored it (the store's log is complete on the simulator).
func (p *player) storeEvent(e memdriver.StoreEvent) {
	if e.Kind != memdriver.EventPut || !e.Stored {
		return
	}
	if ep := p.byName[e.By.Driver]; ep != nil {
		ep.ep.Recorder.Put(p.sched.Now(), e.By.Call, e.By.Row, e.Key)
		return
	}
	for _, ep := range p.eps { // a put no endpoint's call names (model.Recorder.UnattributedPut)
		ep.ep.Recorder.UnattributedPut(e.Key)
	}
}

// rowsPerEndpoint counts the slots each endpoint needs: one per masked-in
// row of its publishes and fetches, and one per key of the log for the
// final content (read through any endpoint).
func rowsPerEndpoint(log *workload.Log) map[string]int {
	n := map[string]int{}
	keys := len(logKeys(log))
	for _, e := range log.Endpoints {
		n[e.Name] = keys
	}
	for _, op := range log.Ops {
		if playable(op) {
			for _, m := range op.Mask {
				if m {
					n[op.Endpoint]++
				}
			}
		}
	}
	return n
}

// playable: a publish or fetch with a well-formed view (a bad view is the
// backend's business).
func playable(op workload.Op) bool {
	return (op.Kind == workload.Publish || op.Kind == workload.Fetch) && op.Bad == "" && len(op.Mask) == len(op.Keys)
}

// logKeys is every key a playable op names, sorted.
func logKeys(log *workload.Log) []string {
	seen := map[string]bool{}
	var keys []string
	for _, op := range log.Ops {
		if !playable(op) {
			continue
		}
		for i, k := range op.Keys {
			if op.Mask[i] && k != "" && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// endpoint builds one endpoint: the side's driver behind the contract
// monitor, with the recorder, and fresh memory registered through it.
func (p *player) endpoint(spec workload.Endpoint, slots int) (*endpoint, error) {
	if len(spec.Regions) == 0 {
		return nil, fmt.Errorf("%w: no regions", engine.ErrBadLog)
	}
	var faults []string
	for _, f := range spec.Faults {
		if !engine.IsLie(f) { // lies are told to a backend; there is none here
			faults = append(faults, f)
		}
	}
	mix, err := memdriver.ParseFaultMix(strings.Join(faults, "\n"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrBadLog, err)
	}
	o := engine.EndpointOptions{
		Name: spec.Name, Driver: p.side.Name, New: p.side.New, RT: p.rt, Seed: p.log.Seed,
		Caps: drivers.Capabilities{MaxRowsPerOp: spec.MaxRows, AbsentIsMiss: spec.AbsentIsMiss, CanFetch: true, CanPublish: true, CanCancel: true},
	}
	if p.sched != nil {
		o.Sched, o.Store, o.Faults = p.sched, p.store, mix
		o.Recorder = model.RecorderOptions{Sequence: &p.seq, StoreLogComplete: true, Lookups: true}
		o.Tune = func(d drivers.Driver, mo *monitor.Options) {
			if _, ok := d.(monitor.LockProber); !ok {
				mo.LockProbe = simprobe.LockProbe()
			}
		}
	} else {
		o.Recorder = model.RecorderOptions{Sequence: &p.seq}
		o.Monitor = monitor.Options{LockProbe: realprobe.LockProbe(0), CancelBound: realprobe.Stopwatch(0)}
	}
	ep, err := engine.NewEndpoint(o)
	if ep == nil {
		return nil, err
	}
	e := &endpoint{spec: spec, ep: ep, d: ep.Monitor.Driver(), caps: ep.Monitor.Capabilities(), slotBytes: spec.Regions[0].SlotBytes}
	if err != nil {
		return e, err
	}
	if err := e.caps.Check(); err != nil {
		e.down = "the driver's capabilities are unusable: " + err.Error()
		return e, nil
	}
	for i := 0; slots > 0; i++ {
		n := min(slots, workload.MaxSlots, workload.MaxRegionBytes/e.slotBytes)
		slots -= n
		a := arena.New(fmt.Sprintf("diff-%s-%d", spec.Name, i), n, e.slotBytes, arena.Options{Clock: p.rt, OnTouch: ep.Recorder.OnTouch})
		for s := range n {
			a.Lend(s, 1) // every slot is the diff's: a touch of it is legal until the end
		}
		ep.AddArena(a)
		var h drivers.Handle
		for range 8 { // a refusal is legal (and injected by some fault mixes): try again
			if h, err = e.d.Register(a.Region()); err == nil {
				break
			}
		}
		if err != nil {
			e.down = fmt.Sprintf("registering region %s was refused 8 times (last: %v)", a.Label(), err)
			return e, nil
		}
		e.arenas, e.handles = append(e.arenas, a), append(e.handles, h)
	}
	return e, nil
}

// slot is a fresh slot of e: its arena, handle and index.
func (e *endpoint) slot() (*arena.Arena, drivers.Handle, int) {
	at := e.next
	e.next++
	for i, a := range e.arenas {
		if n := a.Region().Slots; at < n {
			return a, e.handles[i], at
		} else {
			at -= n
		}
	}
	panic("diff: out of slots (rowsPerEndpoint undercounted)") // a bug of this package
}

// poison is what a FETCH slot holds before the call: bytes no publish
// writes (with overwhelming probability).
const poison = 0xDB

// firstPublishes is every key's first publish row in log.
func firstPublishes(log *workload.Log) map[string]obj {
	out := map[string]obj{}
	for i, op := range log.Ops {
		if op.Kind != workload.Publish || !playable(op) {
			continue
		}
		for pos, k := range op.Keys {
			if _, seen := out[k]; op.Mask[pos] && !seen {
				out[k] = obj{i, pos}
			}
		}
	}
	return out
}

// objects maps the bytes of every publish row of log to the row.
func objects(log *workload.Log) map[string]obj {
	slotBytes := map[string]int{}
	for _, e := range log.Endpoints {
		if len(e.Regions) > 0 {
			slotBytes[e.Name] = e.Regions[0].SlotBytes
		}
	}
	out := map[string]obj{}
	for i, op := range log.Ops {
		if op.Kind != workload.Publish || !playable(op) {
			continue
		}
		for pos, m := range op.Mask {
			if m && slotBytes[op.Endpoint] > 0 {
				out[string(engine.Content(log.Seed, i, pos, slotBytes[op.Endpoint]))] = obj{i, pos}
			}
		}
	}
	return out
}

// play plays every op, then the final content, then shuts every driver
// down.
func (p *player) play() {
	for i, op := range p.log.Ops {
		if p.stopped != nil || p.stalled != "" {
			break
		}
		e := p.byName[op.Endpoint]
		switch {
		case e == nil:
		case op.Kind == workload.Shutdown:
			e.closed = true
		case !playable(op) || e.closed:
		case e.down != "":
			p.unplayed(i, op, e)
		default:
			p.playOp(i, op, e)
		}
	}
	p.final()
	p.shutdown()
}

// unplayed records the rows of an op its endpoint cannot play.
func (p *player) unplayed(i int, op workload.Op, e *endpoint) {
	for pos, k := range op.Keys {
		if op.Mask[pos] {
			p.record(rowID{i, pos, op.Kind.String()}, k, e, "not played: "+e.down, verdict{freedom: "endpoint not usable (" + e.down + ")"})
		}
	}
}

// final reads the final store content: every key of the log looked up and
// fetched through the first endpoint that can play.
func (p *player) final() {
	var e *endpoint
	for _, c := range p.eps {
		if c.down == "" {
			e = c
			break
		}
	}
	keys := logKeys(p.log)
	if e == nil || len(keys) == 0 || p.stopped != nil || p.stalled != "" || !e.caps.CanFetch {
		return
	}
	op := len(p.log.Ops)
	var b []row
	flush := func() {
		if len(b) > 0 && p.stopped == nil && p.stalled == "" {
			p.lookup(op, "final lookup", e, b)
			p.call(op, drivers.Fetch, "final fetch", e, b)
		}
		b = nil
	}
	for pos, k := range keys {
		b = append(b, row{pos, k})
		if len(b) == e.caps.MaxRowsPerOp {
			flush()
		}
	}
	flush()
}

// record keeps one answer and counts its freedom.
func (p *player) record(id rowID, key string, e *endpoint, text string, v verdict) {
	p.ans[id] = answer{key: key, endpoint: e.spec.Name, text: text, v: v}
	if v.freedom != "" {
		p.res.Freedoms[v.freedom]++
	}
}

// shutdown shuts every driver down through its monitor and, on the
// simulator, lets late events run.
func (p *player) shutdown() {
	for _, e := range p.eps {
		ctx, cancel := p.ctx()
		e.d.Shutdown(ctx)
		cancel()
	}
	if p.sched != nil {
		p.settle(true)
	}
}

// settle runs the simulation until nothing is runnable, within the run's
// step cap. During play a call that never ends is legal (until Shutdown),
// so only the settle after Shutdown (done) asks the scheduler's pending
// sources: what is still pending then is a hang.
func (p *player) settle(done bool) {
	if p.stopped != nil {
		return
	}
	for p.sched.Step() {
		if err := p.sched.Flood(); err != nil {
			p.stopped = err
			return
		}
		if p.sched.Steps() >= p.maxSteps {
			p.stopped = &engine.StepCapError{What: "the diff's simulated side", Steps: p.maxSteps, At: p.sched.Now(), Last: p.sched.LastLabel()}
			return
		}
	}
	if err := p.sched.Flood(); err != nil {
		p.stopped = err
	} else if pend := p.sched.Pending(); done && len(pend) > 0 {
		p.stopped = &sim.HangError{At: p.sched.Now(), Pending: pend}
	}
}

// judge runs the engine's checks on the side: the monitor's end-of-run
// checks, the memory oracle, call liveness and S-LIN over the history.
func (p *player) judge(linTimeout time.Duration) {
	storeModel := model.DurableStore
	if p.know.evicting {
		storeModel = model.EvictingStore
	}
	eps := make([]*engine.Endpoint, len(p.eps))
	for i, e := range p.eps {
		eps[i] = e.ep
	}
	cr := engine.Check(engine.CheckInput{
		Endpoints: eps, Stopped: p.stopped, Finished: p.stopped == nil, Idle: p.stopped == nil,
		At: p.rt.Now(), Seed: p.log.Seed, StoreModel: storeModel, LinTimeout: linTimeout, Lin: engine.LinIfClean,
	})
	p.res.Violations, p.res.Verdict = cr.Violations, cr.Verdict()
}

// close stops the side's runtime (real time).
func (p *player) close() {
	if p.rtr != nil {
		p.rtr.Close()
	}
}

// CheckLog reports a log a diff cannot play as written, before anything
// is built (an input error, wrapping engine.ErrBadLog): an endpoint without
// regions or with a bad fault line, or more fresh memory than
// workload.MaxTotalBytes — a diff gives every row a slot of its own, so its
// memory grows with the rows, not with the log's regions.
func CheckLog(log *workload.Log) error {
	need := rowsPerEndpoint(log)
	total := 0
	for _, e := range log.Endpoints {
		if len(e.Regions) == 0 {
			return fmt.Errorf("%w: endpoint %s: no regions", engine.ErrBadLog, e.Name)
		}
		var faults []string
		for _, f := range e.Faults {
			if !engine.IsLie(f) {
				faults = append(faults, f)
			}
		}
		if _, err := memdriver.ParseFaultMix(strings.Join(faults, "\n")); err != nil {
			return fmt.Errorf("%w: endpoint %s: %w", engine.ErrBadLog, e.Name, err)
		}
		total += need[e.Name] * e.Regions[0].SlotBytes
		if total > workload.MaxTotalBytes {
			return fmt.Errorf("%w: %w: a diff gives every row a fresh slot, and this log's rows need more than %d bytes (%d MiB) of them (%s)",
				engine.ErrBadLog, workload.ErrLimit, workload.MaxTotalBytes, workload.MaxTotalBytes>>20, workload.LimitsDoc)
		}
	}
	return nil
}
