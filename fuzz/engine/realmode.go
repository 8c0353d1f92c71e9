package engine

// Real-time mode (RunReal): the run function for real drivers — drivers that
// run their own goroutines against a real store (drivers/redisdriver). It is
// the one file of this package where goroutines, channels and wall-clock
// waits appear (its name starts with "real"; the determinism check exempts
// it).
//
// Everything but the clock is the simulated path's: the workload comes from
// the seed (Plan), and the same backend, lender (arenas), contract monitor,
// history recorder, memory oracle, liveness checks and porcupine model run —
// on sim/realtime instead of the scheduler. The backend and the lender are
// not safe for concurrent use, so every call into them runs on the
// runtime's one executor: the setup through Runtime.Do, each op as an
// rt.After timer at its virtual time taken as a real duration, and the
// driver's change callbacks through rt.Wake (the backend hands those to the
// driver). The driver's goroutines touch the arenas directly (arenas and the
// recorder are safe for concurrent use).
//
// What real time changes, and says in the Result (RealTime) and its report:
//
//   - A seed replays the WORKLOAD, not the interleaving: timing is real, so
//     two runs of one seed may interleave differently and find different
//     things. There is no trace hash (Result.TraceHash is 0, Steps 0).
//   - Fault lines of the profile are stripped from the log: a real store
//     takes no injected memdriver faults (its faults are its own).
//   - The recorder cannot know what the store ran (no StoreLogComplete: an
//     ambiguous publish may or may not have happened) and does not record
//     lookups as operations (a real Contains is not an instant of the
//     runtime).
//   - Endpoints' shutdowns are awaited with a wall-clock bound
//     (RealDriver.Wait); running out is a liveness failure that names what
//     is pending.
//   - One memory rule is added that only an online touch stamp can judge:
//     a FETCH slot written after its row was reported OK (D-STATUS: OK means
//     the object IS in the slot when reported; the backend and the lender
//     act on the result at once).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

// ErrRealTimeout is wrapped by the liveness failure of a real-time run whose
// endpoints did not all shut down within RealDriver.Wait after the last op.
var ErrRealTimeout = errors.New("real time: run not finished")

// DefaultStretch is RealDriver.Stretch when zero: on the Redis driver it
// delivers about 90 % of the attempts (430 of 469 on 6 seeds, 37 ms a
// seed) while calls still overlap on keys.
const DefaultStretch = 30

// RealDriver is a real store's driver, as RunReal uses it. Build a fresh one
// per run when the store needs per-run state (a fresh key prefix).
type RealDriver struct {
	// Name names the store in reports and repro commands
	// ("redis://127.0.0.1:6379"); it is the run's Config.Driver when that is
	// empty.
	Name string
	// New builds the driver of one endpoint (the shape of Config.Factory, so
	// registry-style factories fit): name is the endpoint's driver name in
	// the log, env.RT the run's realtime.Runtime, env.Name the endpoint,
	// env.Caps the endpoint's capabilities (honour them or declare your own:
	// the backend follows the declaration); env.Store is nil and env.Faults
	// zero. Required.
	New func(name string, env registry.Env) (drivers.Driver, error)
	// Cleanup, when set, runs once at the end of every run, after the checks
	// and whatever the verdict, with a context bounded by Wait: remove what
	// the run stored (e.g. delete the run's key prefix). Its error is
	// Result.Err, and turns a pass into a harness error.
	Cleanup func(ctx context.Context) error
	// Wait bounds, in wall time after the last op, the wait for every
	// endpoint's shutdown to return (0: 10 s). Running out is a liveness
	// failure naming what is pending.
	Wait time.Duration
	// DrainTimeout is each backend's drain deadline at shutdown (0: 2 s;
	// the simulated path's 1 ms is below one network round trip, and a
	// drain cut short turns every call still in flight UNPROVABLE).
	DrainTimeout time.Duration
	// Stretch multiplies op times into wall time: an op at virtual time t
	// is issued at Stretch×t (0: DefaultStretch). Generated workloads are
	// paced for simulated drivers (10 µs per transfer step) and span about
	// a millisecond; a Redis round trip is 50–100 µs, so at 1 the closing
	// shutdowns cancel nearly every attempt (measured on 6 seeds: 9 of 137
	// attempts delivered, 373 ops refused for lack of room) and little is
	// checked. 1 is still allowed: it is the most concurrent.
	Stretch float64
	// SharedMemory says the driver maps region memory itself, from another
	// process (a driver process, drivers/procdriver): the run's arenas then
	// live in a file-backed shared mapping (arena.Shared), removed when the
	// run ends, so the process moves the lender's bytes themselves.
	SharedMemory bool
	_            struct{}
}

func (rd RealDriver) withDefaults() RealDriver {
	if rd.Wait <= 0 {
		rd.Wait = 10 * time.Second
	}
	if rd.DrainTimeout <= 0 {
		rd.DrainTimeout = 2 * time.Second
	}
	if rd.Stretch <= 0 {
		rd.Stretch = DefaultStretch
	}
	return rd
}

// RunReal plays log in real time against the driver rd builds and checks it
// as Run does (see the file comment for what differs). cfg.Factory and
// cfg.MaxSteps do not apply; cfg.Driver defaults to rd.Name.
func RunReal(log *workload.Log, cfg Config, rd RealDriver) *Result {
	if log == nil {
		return &Result{Verdict: HarnessError, Err: errors.New("real time: no op log"), RealTime: true, Config: cfg}
	}
	if cfg.Driver == "" {
		cfg.Driver = rd.Name
	}
	cfg = cfg.withDefaults()
	rd = rd.withDefaults()
	log = withoutFaults(log)
	r := &run{log: log, cfg: cfg, res: &Result{Seed: log.Seed, Log: log, Config: cfg, RealTime: true, Stretch: rd.Stretch}}
	if rd.New == nil {
		r.res.Verdict, r.res.Err = HarnessError, errors.New("real time: RealDriver.New is nil")
		return r.res
	}
	rt := realtime.New(log.Seed)
	r.rt = rt
	rr := &realRun{run: r, rt: rt, rd: rd, done: make(chan struct{})}
	var err error
	if rd.SharedMemory {
		if rr.sh, err = arena.NewShared(""); err != nil {
			rt.Close()
			r.res.Verdict, r.res.Err = HarnessError, fmt.Errorf("real time: %w", err)
			return r.res
		}
	}
	rt.Do(func() { err = rr.setup() })
	if err != nil {
		rr.stop()
		r.res.Verdict, r.res.Err = HarnessError, err
		rr.cleanup()
		return r.res
	}
	runErr := rr.play()
	if err := rt.Flood(); err != nil {
		runErr = err // the run's events were dropped: nothing after it can be trusted
	}
	rr.stop()
	r.res.End = rt.Now()
	for _, e := range rr.eps {
		r.found = append(r.found, e.writesAfterReport(r.log.Seed)...)
	}
	r.judge(runErr)
	rr.cleanup()
	return r.res
}

// withoutFaults copies l without its fault lines: a real driver takes no
// injected memdriver faults.
func withoutFaults(l *workload.Log) *workload.Log {
	c := *l
	c.Endpoints = slices.Clone(l.Endpoints)
	for i := range c.Endpoints {
		c.Endpoints[i].Faults = nil
	}
	return &c
}

// realRun is a run's real-time state. Fields below rt are touched only on the
// runtime's executor (until stop closed it).
type realRun struct {
	*run
	rt *realtime.Runtime
	rd RealDriver
	sh *arena.Shared // the arenas' memory (RealDriver.SharedMemory), or nil

	eps      []*realEndpoint
	issued   int
	finished bool
	done     chan struct{} // closed on the executor when every op ran and every asked shutdown returned
	stuck    bool          // the executor did not answer (a driver call blocks it)

	// shutting names the endpoints whose shutdown was asked and has not
	// returned, readable off the executor (when it is blocked).
	mu       sync.Mutex
	shutting []string
}

// realEndpoint is an endpoint plus what real time adds: the write stamps.
type realEndpoint struct {
	ep *Endpoint

	mu     sync.Mutex
	writes []stampedWrite
	// byRow indexes writes: per (call, row) the first write and the latest
	// (a write after the report is decided by them alone: see onTouch).
	byRow   map[writeRow][2]int
	dropped int // writes of rows beyond maxWriteRows
}

type writeRow struct {
	call drivers.CallID
	row  int
}

// maxWriteRows bounds the (call, row) pairs whose writes are kept.
const maxWriteRows = model.MaxTouches

// stampedWrite is a slot write placed among the recorder's events: seq is
// the recorder's sequence number read right after the write.
type stampedWrite struct {
	touch arena.Touch
	seq   int64
}

func (rr *realRun) setup() error {
	for _, spec := range rr.log.Endpoints {
		e, err := rr.endpoint(spec)
		if e != nil {
			rr.eps = append(rr.eps, e)
		}
		if err != nil {
			return fmt.Errorf("endpoint %s: %w", spec.Name, err)
		}
		rr.run.eps = append(rr.run.eps, e.ep) // what the shared checks walk, and endpointNamed
	}
	return nil
}

// endpoint is run.endpoint on the real runtime: the real driver, the
// wall-clock probes of the monitor (D-CB-4, D-CAN-1), no store events, no
// lookups as operations, write stamps. The returned realEndpoint is non-nil
// once a driver exists, even with an error, so stop can shut it down.
func (rr *realRun) endpoint(spec workload.Endpoint) (*realEndpoint, error) {
	if len(spec.Regions) == 0 {
		return nil, fmt.Errorf("%w: no regions", ErrBadLog)
	}
	e := &realEndpoint{}
	o := rr.endpointOptions(spec)
	o.New, o.RT, o.OnTouch, o.Shared = rr.rd.New, rr.rt, e.onTouch, rr.sh
	o.Recorder = model.RecorderOptions{Sequence: &rr.seq}
	o.Monitor = monitor.Options{LockProbe: realprobe.LockProbe(0), CancelBound: realprobe.Stopwatch(0)}
	o.Backend.DrainTimeout = rr.rd.DrainTimeout
	ep, err := NewEndpoint(o)
	if err != nil && !errors.Is(err, ErrDriver) {
		err = fmt.Errorf("%w: %w", ErrBadLog, err) // the factory failing is not the log's fault
	}
	if ep == nil {
		return nil, err
	}
	e.ep = ep
	return e, err
}

// onTouch runs after the recorder saw the touch (the memory oracle orders
// touches against its events) and keeps writes stamped with the recorder's
// sequence number. The stamp is read after the write: for a driver that
// reports a FETCH row only after writing its slot, the row's final event
// comes later still, so its sequence number is larger than the stamp; a
// stamp at or after it means the write followed the report.
func (e *realEndpoint) onTouch(t arena.Touch) {
	if t.Op != arena.Write {
		return
	}
	seq := e.ep.Recorder.Seq()
	e.mu.Lock()
	defer e.mu.Unlock()
	// writesAfterReport reports the first write of a row stamped at or
	// after the row's report: the first write of the row, if it is; else,
	// since stamps only grow, the latest one tells whether any is. So a
	// row keeps two writes, however often a driver writes it.
	k := writeRow{t.By.Call, t.By.Row}
	w := stampedWrite{touch: t, seq: seq}
	if e.byRow == nil {
		e.byRow = map[writeRow][2]int{}
	}
	if at, ok := e.byRow[k]; ok {
		if at[1] == at[0] {
			at[1] = len(e.writes)
			e.writes = append(e.writes, w)
			e.byRow[k] = at
		} else {
			e.writes[at[1]] = w
		}
		return
	}
	if len(e.byRow) >= maxWriteRows {
		e.dropped++
		return
	}
	e.byRow[k] = [2]int{len(e.writes), len(e.writes)}
	e.writes = append(e.writes, w)
}

// writesAfterReport is the added memory rule (D-STATUS): a FETCH row
// reported OK claims the object is in the slot; a write of that slot by the
// row after the report means it was not (the backend and the lender may
// already have acted on the result). One violation per call and row.
func (e *realEndpoint) writesAfterReport(seed uint64) []rules.Violation {
	calls := map[drivers.CallID]model.CallInfo{}
	for _, c := range e.ep.Recorder.Calls() {
		calls[c.ID] = c
	}
	e.mu.Lock()
	writes := slices.Clone(e.writes)
	e.mu.Unlock()
	type callRow struct {
		call drivers.CallID
		row  int
	}
	seen := map[callRow]bool{}
	var out []rules.Violation
	for _, w := range writes {
		c, ok := calls[w.touch.By.Call]
		row := w.touch.By.Row
		if !ok || c.Dir != drivers.Fetch || row < 0 || row >= len(c.Rows) {
			continue // unknown calls and rows are D-SUB-6, judged by the memory oracle
		}
		ri := c.Rows[row]
		k := callRow{c.ID, row}
		if ri.Status != drivers.OK || ri.FinalSeq == 0 || w.seq < ri.FinalSeq || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, rules.Violation{Rule: rules.DStatus, Class: rules.Safety, Endpoint: e.ep.Name, Call: uint64(c.ID), Row: row, Key: ri.Key, At: w.touch.At, Seed: seed,
			Detail: fmt.Sprintf("FETCH row reported OK (#%d at %v) but its slot was written after the report, so the object was not in the slot when reported: %s",
				ri.FinalSeq, ri.FinalAt, w.touch)})
	}
	rules.Sort(out)
	return out
}

// play schedules every op at its (stretched) virtual time and waits, in wall
// time, until every op ran and every shutdown asked for returned, or
// RealDriver.Wait after the last op. A timeout is the liveness error it
// returns, naming what is pending.
func (rr *realRun) play() error {
	var last time.Duration
	rr.rt.Do(func() {
		for i, op := range rr.log.Ops {
			st := &opState{op: &rr.log.Ops[i], ep: rr.endpointNamed(op.Endpoint)}
			rr.ops = append(rr.ops, st)
			at := time.Duration(float64(op.At) * rr.rd.Stretch)
			last = max(last, at)
			rr.rt.After(at, "op", func() { rr.do(i, st) })
		}
		rr.settle()
	})
	t := time.NewTimer(last + rr.rd.Wait)
	defer t.Stop()
	select {
	case <-rr.done:
		return nil
	case <-t.C:
	}
	return fmt.Errorf("%w %v after the last op; pending: %s", ErrRealTimeout, rr.rd.Wait, strings.Join(rr.pending(), "; "))
}

// do runs one op on the executor: the simulated path's, except that a
// shutdown also reports back (realRun.shutdown).
func (rr *realRun) do(i int, st *opState) {
	if st.op.Kind == workload.Shutdown {
		rr.shutdown(st.ep)
	} else {
		rr.run.do(i, st)
	}
	rr.issued++
	rr.settle()
}

func (rr *realRun) shutdown(ep *Endpoint) {
	if ep.Asked {
		return
	}
	rr.mu.Lock()
	rr.shutting = append(rr.shutting, ep.Name)
	rr.mu.Unlock()
	ep.Shutdown(func([]string) {
		rr.mu.Lock()
		rr.shutting = slices.DeleteFunc(rr.shutting, func(n string) bool { return n == ep.Name })
		rr.mu.Unlock()
		rr.settle()
	})
}

// settle closes done once every op ran and every asked shutdown returned.
// An endpoint the log never shuts down does not hold the run up; the
// checks report it (B-SHUT) and stop shuts its driver down.
func (rr *realRun) settle() {
	if rr.finished || rr.issued < len(rr.log.Ops) {
		return
	}
	for _, e := range rr.eps {
		if e.ep.Asked && !e.ep.Down {
			return
		}
	}
	rr.finished = true
	close(rr.done)
}

// pending lists what holds a timed-out run up, read on the executor within
// a bound (a driver call may be blocking it).
func (rr *realRun) pending() []string {
	ch := make(chan []string, 1)
	rr.rt.Post("pending", func() {
		var out []string
		if n := len(rr.log.Ops) - rr.issued; n > 0 {
			out = append(out, fmt.Sprintf("%d ops not issued", n))
		}
		for _, e := range rr.eps {
			ep := e.ep
			for _, p := range ep.Backend.Pending() {
				out = append(out, ep.Name+"/backend: "+p)
			}
			if ep.Asked && !ep.Down {
				out = append(out, ep.Name+"/shutdown: shutdown has not returned")
			}
		}
		ch <- out
	})
	t := time.NewTimer(rr.rd.Wait)
	defer t.Stop()
	select {
	case out := <-ch:
		return out
	case <-t.C:
	}
	rr.stuck = true
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := []string{fmt.Sprintf("the runtime's executor is blocked (a driver or backend call on it has not returned for %v)", rr.rd.Wait)}
	for _, n := range rr.shutting {
		out = append(out, n+"/shutdown: shutdown has not returned")
	}
	return out
}

// stop closes the runtime (queued events run first; later driver callbacks
// post into the void) and shuts down, directly, every driver whose backend
// did not, so no driver goroutine or connection outlives the run. With a
// blocked executor, Close waits in the background for the driver shutdowns
// to unblock it, for at most Wait.
func (rr *realRun) stop() {
	closed := make(chan struct{})
	if rr.stuck {
		go func() { rr.rt.Close(); close(closed) }()
	} else {
		rr.rt.Close()
		close(closed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rr.rd.Wait)
	defer cancel()
	for _, e := range rr.eps {
		if e.ep.Backend == nil || !e.ep.Down {
			e.ep.Driver.Shutdown(ctx)
		}
	}
	select {
	case <-closed:
	case <-ctx.Done():
	}
}

// cleanup runs RealDriver.Cleanup, bounded by Wait.
func (rr *realRun) cleanup() {
	if rr.sh != nil {
		if err := rr.sh.Close(); err != nil { // every driver is down: the arenas keep a heap copy
			rr.res.Err = errors.Join(rr.res.Err, fmt.Errorf("real time: %w", err))
		}
	}
	if rr.rd.Cleanup == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rr.rd.Wait)
	defer cancel()
	if err := rr.rd.Cleanup(ctx); err != nil {
		err = fmt.Errorf("real time: cleanup: %w", err)
		rr.res.Err = errors.Join(rr.res.Err, err)
		if rr.res.Verdict == Pass {
			rr.res.Verdict = HarnessError
		}
	}
}
