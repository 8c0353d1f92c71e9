package memdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// TestSwarm runs 1000 seeds (100 with -short), each with the fault mix
// Swarm(seed), a random driver shape (plain or together, MaxRowsPerOp,
// AbsentIsMiss, directions, cancel support), an evicting or plain store,
// random batches, lookups, cancels, an optional drain and closes, and a
// shutdown at a random time; then it runs the scheduler to idle. With plain
// assertions (the full monitor lives elsewhere) it checks that every call
// reaches evidence or is labelled by Shutdown, that no correctly lent slot
// sees a late or stray access (arena violations, D-ACCESS-END), that results
// are final and monotonic and access moves along D-ACCESS, that MISS and
// NOT_ATTEMPTED rows were never touched (touch logs), that a FETCH OK slot
// holds the object, and that callbacks keep D-CB-4 and D-CB-5.
func TestSwarm(t *testing.T) {
	seeds := uint64(1000)
	if testing.Short() {
		seeds = 100
	}
	var st swarmStats
	for seed := uint64(0); seed < seeds; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runSwarm(t, seed, &st) })
	}
	// The swarm must not be vacuous: every outcome it claims to check happened.
	t.Logf("swarm over %d seeds: %+v", seeds, st)
	for name, n := range map[string]int{
		"calls": st.calls, "rows OK": st.ok, "rows MISS": st.miss, "rows FAULT": st.fault,
		"rows NOT_ATTEMPTED": st.notAttempted, "calls ENDED": st.ended, "calls UNPROVABLE at the end": st.unprovable,
		"UNPROVABLE then ENDED": st.provenLater, "cancels requested": st.cancels, "shutdown labels": st.labels,
		"touches": st.touches, "late touches after a result": st.lateTouches, "quarantined drivers": st.quarantined,
		"escaped submit errors": st.escaped, "busy closes": st.busy,
	} {
		if n == 0 {
			t.Errorf("swarm never produced %s %s", name, repro(t))
		}
	}
}

// swarmStats counts what the swarm exercised.
type swarmStats struct {
	calls, ok, miss, fault, notAttempted, ended, unprovable, provenLater int
	cancels, labels, touches, lateTouches, quarantined, escaped, busy    int
}

const (
	swSlotBytes = 16
	swSlots     = 6
	swBadKey    = "kbad" // pre-put with the wrong size: FETCH must FAULT
)

var swKeys = []string{"k0", "k1", "k2", "k3", "k4", "k5", swBadKey}

type swRegion struct {
	a    *arena.Arena
	h    drivers.Handle
	live bool     // registered, as far as the test knows
	used []uint64 // per slot: the call holding it (0 free, ^0 retained forever)
}

type swCall struct {
	c        drivers.Call
	b        drivers.RowBatch
	regions  []int
	res      []drivers.Status
	acc      drivers.Access
	released bool
	retained bool
}

type swarmRun struct {
	t        testing.TB
	seed     uint64
	s        *sim.Scheduler
	w        *sim.Rand
	store    *Store
	d        *Driver
	td       *TogetherDriver
	caps     drivers.Capabilities
	regions  []*swRegion
	calls    map[drivers.CallID]*swCall
	order    []drivers.CallID
	doubt    []string
	draining bool
	shut     bool
	st       *swarmStats
}

func (r *swarmRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d: %s\nfault mix:\n%s\n%s", r.seed, fmt.Sprintf(format, args...), DescribeSwarm(r.seed), repro(r.t))
}

func runSwarm(t testing.TB, seed uint64, st *swarmStats) *swarmRun {
	w := sim.NewRand(sim.SubSeed(seed, "test/workload"))
	r := &swarmRun{t: t, seed: seed, w: w, calls: map[drivers.CallID]*swCall{}, st: st}
	r.s = sim.New(sim.Options{
		Seed: seed, MaxWakeDelay: time.Duration(w.Intn(20)) * time.Microsecond, CoalesceChance: w.Float64() / 2,
	})
	so := StoreOptions{}
	if w.Chance(0.5) {
		so = StoreOptions{Evicting: true, EvictChance: 0.05, Rand: sim.NewRand(sim.SubSeed(seed, "test/store"))}
	}
	r.store, _ = NewStore(so)
	r.store.Put(swBadKey, []byte("short"))
	r.caps = drivers.Capabilities{MaxRowsPerOp: 1 + w.Intn(4), AbsentIsMiss: w.Chance(0.7), CanFetch: true, CanPublish: true, CanCancel: w.Chance(0.8)}
	switch w.Intn(10) {
	case 0:
		r.caps.CanPublish = false
	case 1:
		r.caps.CanFetch = false
	}
	cfg := Config{Name: "swarm", Caps: r.caps, Faults: Swarm(seed)}
	if w.Chance(0.5) {
		r.td = NewTogether(r.s, r.store, cfg)
		r.d = r.td.Driver
	} else {
		r.d = New(r.s, r.store, cfg)
	}
	r.s.AddPending("memdriver", r.d.PendingCalls)
	for i := 0; i < 2; i++ {
		a := arena.New(fmt.Sprint("r", i), swSlots, swSlotBytes, arena.Options{Clock: r.s, Log: true, OnTouch: r.onTouch})
		r.regions = append(r.regions, &swRegion{a: a, used: make([]uint64, swSlots)})
	}
	r.register()

	ops := 10 + w.Intn(25)
	for i := 0; i < ops; i++ {
		r.s.After(time.Duration(w.Intn(300_000)), "test op", r.op)
	}
	if w.Chance(0.3) {
		r.s.After(time.Duration(250_000+w.Intn(100_000)), "test drain", func() { r.draining = true; r.pollDrain() })
	}
	if w.Chance(0.3) {
		r.s.After(time.Duration(w.Intn(400_000)), "test close", r.closeSome)
	}
	r.s.After(time.Duration(300_000+w.Intn(3_000_000)), "test shutdown", r.shutdown)
	if err := r.s.RunUntilIdle(5_000_000); err != nil {
		r.fail("liveness: %v", err)
	}
	if !r.shut {
		r.fail("the shutdown event never ran")
	}
	r.finalChecks()
	r.count()
	return r
}

// TestSwarmDeterminism: one seed replays exactly: the same trace hash, the
// same results and the same store.
func TestSwarmDeterminism(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		var st swarmStats
		a, b := runSwarm(t, seed, &st), runSwarm(t, seed, &st)
		if a.s.TraceHash() != b.s.TraceHash() || a.summary() != b.summary() {
			t.Fatalf("seed %d: two runs differ: trace %x vs %x\n%s\nvs\n%s %s", seed, a.s.TraceHash(), b.s.TraceHash(), a.summary(), b.summary(), repro(t))
		}
	}
}

func (r *swarmRun) summary() string {
	var b bytes.Buffer
	for _, id := range r.order {
		fmt.Fprintf(&b, "call %d %v %v\n", id, r.calls[id].c.Results(), r.calls[id].c.Access())
	}
	fmt.Fprintf(&b, "store %v\n", r.store.Keys())
	return b.String()
}

func (r *swarmRun) count() {
	st := r.st
	st.calls += len(r.order)
	if r.d.Quarantined() != "" {
		st.quarantined++
	}
	for _, id := range r.order {
		sc := r.calls[id]
		for _, s := range sc.c.Results() {
			switch s {
			case drivers.OK:
				st.ok++
			case drivers.Miss:
				st.miss++
			case drivers.Fault:
				st.fault++
			case drivers.NotAttempted:
				st.notAttempted++
			}
		}
		switch {
		case sc.c.Access() == drivers.AccessUnprovable:
			st.unprovable++
		case sc.retained:
			st.provenLater++
			st.ended++
		default:
			st.ended++
		}
	}
	for _, reg := range r.regions {
		st.touches += len(reg.a.Touches())
	}
}

// register registers both regions (together when offered), retrying plain
// refusals a few times.
func (r *swarmRun) register() {
	for try := 0; try < 3; try++ {
		if r.td != nil {
			hs, err := r.td.RegisterTogether([]drivers.Region{r.regions[0].a.Region(), r.regions[1].a.Region()})
			var doubt *drivers.InDoubtError
			switch {
			case err == nil:
				if len(hs) != 2 {
					r.fail("D-TOG-1: %d handles for 2 regions", len(hs))
				}
				for i, h := range hs {
					r.regions[i].h, r.regions[i].live = h, true
					r.regions[i].a.SetRegistered(true)
				}
				return
			case errors.As(err, &doubt):
				r.doubt = doubt.Labels
				return // quarantined (D-QUAR)
			case !errors.Is(err, drivers.ErrRegistrationRefused):
				r.fail("D-TOG-1: RegisterTogether = %v", err)
			}
			continue
		}
		for _, reg := range r.regions {
			if reg.live {
				continue
			}
			h, err := r.d.Register(reg.a.Region())
			if err != nil && !errors.Is(err, drivers.ErrRegistrationRefused) {
				r.fail("Register = %v", err)
			}
			if err == nil {
				reg.h, reg.live = h, true
				reg.a.SetRegistered(true)
			}
		}
	}
}

// op is one workload step: a submit, a lookup or a cancel.
func (r *swarmRun) op() {
	switch n := r.w.Intn(100); {
	case n < 70:
		r.submit()
	case n < 85:
		r.lookup()
	default:
		if len(r.order) > 0 {
			r.cancel(r.calls[r.order[r.w.Intn(len(r.order))]])
		}
	}
}

func (r *swarmRun) submit() {
	dir := drivers.Fetch
	if !r.caps.CanFetch || (r.caps.CanPublish && r.w.Chance(0.5)) {
		dir = drivers.Publish
	}
	keys := slices.Clone(swKeys)
	for i := len(keys) - 1; i > 0; i-- {
		j := r.w.Intn(i + 1)
		keys[i], keys[j] = keys[j], keys[i]
	}
	type ref struct{ reg, slot int }
	var free []ref
	for ri, reg := range r.regions {
		for s, u := range reg.used {
			if reg.live && u == 0 {
				free = append(free, ref{ri, s})
			}
		}
	}
	n := min(1+r.w.Intn(r.caps.MaxRowsPerOp), len(free))
	if n == 0 {
		return
	}
	sc := &swCall{b: drivers.RowBatch{Dir: dir}}
	for i := 0; i < n; i++ {
		j := r.w.Intn(len(free))
		f := free[j]
		free = append(free[:j], free[j+1:]...)
		sc.b.Rows = append(sc.b.Rows, drivers.Row{Key: keys[i], Handle: r.regions[f.reg].h, Slot: f.slot, Position: i})
		sc.regions = append(sc.regions, f.reg)
	}
	for i, row := range sc.b.Rows {
		a := r.regions[sc.regions[i]].a
		a.Lend(row.Slot, 1)
		if dir == drivers.Publish {
			a.Fill(row.Slot, content(row.Key, swSlotBytes))
		}
	}
	c, err := r.d.Submit(sc.b, func() { r.onChange(sc) })
	switch {
	case err == nil:
		sc.c = c
		r.calls[c.ID()] = sc
		r.order = append(r.order, c.ID())
		sc.res = make([]drivers.Status, len(sc.b.Rows))
		for i, row := range sc.b.Rows {
			r.regions[sc.regions[i]].used[row.Slot] = uint64(c.ID())
		}
	case errors.Is(err, drivers.ErrInvalidSubmission):
		r.fail("D-SUB-1: a valid batch was refused: %v", err)
	case errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrRejected):
		for i, row := range sc.b.Rows { // nothing escaped: the slots come back
			r.regions[sc.regions[i]].a.Release(row.Slot)
		}
	default: // D-SUB-2: something may have escaped; keep the slots forever
		r.st.escaped++
		for i, row := range sc.b.Rows {
			r.regions[sc.regions[i]].a.Retain(row.Slot)
			r.regions[sc.regions[i]].used[row.Slot] = ^uint64(0)
		}
	}
}

func (r *swarmRun) lookup() {
	n := 1 + r.w.Intn(r.caps.MaxRowsPerOp)
	keys := swKeys[:min(n, len(swKeys))]
	found, err := r.d.Contains(context.Background(), keys)
	switch {
	case err != nil && !errors.Is(err, drivers.ErrLookupFailed):
		r.fail("D-LOOK-2: Contains error %v does not wrap ErrLookupFailed", err)
	case err == nil && len(found) != len(keys):
		r.fail("D-LOOK-1: %d answers for %d keys", len(found), len(keys))
	}
}

func (r *swarmRun) cancel(sc *swCall) {
	before := sc.c.Access()
	res := sc.c.Cancel()
	after, results := sc.c.Access(), sc.c.Results()
	switch {
	case !r.caps.CanCancel && res != drivers.CancelUnsupported:
		r.fail("D-CAN-1: Cancel without CanCancel = %v", res)
	case r.caps.CanCancel && res == drivers.CancelUnsupported:
		r.fail("D-CAN-1: Cancel with CanCancel = UNSUPPORTED")
	case before != after:
		r.fail("D-CAN-2: Cancel itself moved access %v -> %v", before, after)
	case res == drivers.CancelAlreadyDone && slices.Contains(results, drivers.Pending):
		r.fail("D-CAN-1: ALREADY_DONE with results %v", results)
	case res == drivers.CancelRequested:
		r.st.cancels++
	}
}

// closeSome tries to close the regions; a close that succeeds must not
// leave a call with live access naming the region (D-REG-6, D-TOG-4).
func (r *swarmRun) closeSome() {
	if r.td != nil && r.regions[0].live && r.regions[1].live && r.w.Chance(0.5) {
		err := r.td.UnregisterTogether([]drivers.Handle{r.regions[0].h, r.regions[1].h})
		var doubt *drivers.InDoubtError
		if err != nil && !errors.As(err, &doubt) {
			r.fail("D-TOG-3: UnregisterTogether = %v, want nil or *InDoubtError", err)
		}
		for _, reg := range r.regions {
			if doubt == nil || !slices.Contains(doubt.Labels, reg.a.Label()) {
				r.closed(reg)
			}
		}
		return
	}
	for _, reg := range r.regions {
		if !reg.live {
			continue
		}
		switch err := r.d.Unregister(reg.h); {
		case err == nil:
			r.closed(reg)
		case errors.Is(err, drivers.ErrBusy):
			r.st.busy++
			if !r.namedByLive(reg) {
				r.fail("D-REG-6: close of %s refused as busy with no live call naming it", reg.a.Label())
			}
		case !errors.Is(err, drivers.ErrUnregisterFailed):
			r.fail("D-REG-4: Unregister = %v", err)
		}
	}
}

func (r *swarmRun) namedByLive(reg *swRegion) bool {
	for _, id := range r.order {
		sc := r.calls[id]
		for _, row := range sc.b.Rows {
			if row.Handle == reg.h && sc.c.Access() != drivers.AccessEnded {
				return true
			}
		}
	}
	return false
}

// closed records a successful close of reg.
func (r *swarmRun) closed(reg *swRegion) {
	if !reg.live {
		return
	}
	if r.namedByLive(reg) {
		r.fail("D-REG-6: %s closed while a call with live access names it", reg.a.Label())
	}
	reg.live = false
	reg.a.SetRegistered(false)
}

func (r *swarmRun) onChange(sc *swCall) {
	if r.shut {
		r.fail("D-CB-5: callback of call %d after Shutdown returned", sc.c.ID())
	}
	if !r.d.mu.TryLock() {
		r.fail("D-CB-4: callback while the driver holds its mutex")
	}
	r.d.mu.Unlock()
	if sc.c == nil {
		return // a callback before Submit returned: legal, nothing to read yet
	}
	r.observe(sc)
	if r.draining {
		r.pollDrain()
	}
}

// observe checks one call's state against what was seen before and lends
// back or retains its slots as a lender would.
func (r *swarmRun) observe(sc *swCall) {
	res, acc := sc.c.Results(), sc.c.Access()
	if len(res) != len(sc.b.Rows) {
		r.fail("D-STATUS: call %d has %d results for %d rows", sc.c.ID(), len(res), len(sc.b.Rows))
	}
	for i, st := range res {
		if sc.res[i].Final() && st != sc.res[i] {
			r.fail("D-CB-3: call %d row %d went %v -> %v", sc.c.ID(), i, sc.res[i], st)
		}
		if !sc.res[i].Final() && st == drivers.OK && sc.b.Dir == drivers.Fetch && !sc.released {
			row := sc.b.Rows[i]
			if got := r.regions[sc.regions[i]].a.Peek(row.Slot); !bytes.Equal(got, content(row.Key, swSlotBytes)) {
				r.fail("D-STATUS: FETCH OK of %s but the slot holds %x", row.Key, got)
			}
		}
	}
	if !sc.acc.CanBecome(acc) {
		r.fail("D-ACCESS: call %d went %v -> %v", sc.c.ID(), sc.acc, acc)
	}
	sc.res, sc.acc = res, acc
	switch {
	case acc == drivers.AccessUnprovable && !sc.retained:
		sc.retained = true
		for i, row := range sc.b.Rows {
			r.regions[sc.regions[i]].a.Retain(row.Slot)
		}
	case acc == drivers.AccessEnded && !sc.released:
		// Proven quiet: hand the slots back (poisoned), so any later touch
		// is an S-NO-LATE-ACCESS violation the arena records.
		sc.released = true
		for i, row := range sc.b.Rows {
			reg := r.regions[sc.regions[i]]
			reg.a.Release(row.Slot)
			reg.used[row.Slot] = 0
		}
	}
}

// pollDrain checks D-DRAIN-1: Done only when every call has evidence, and
// every call without evidence is listed.
func (r *swarmRun) pollDrain() {
	ds := r.d.Drain()
	for _, id := range r.order {
		sc := r.calls[id]
		ev := sc.c.Access().Evidenced()
		if !ev && (ds.Done || !slices.Contains(ds.Pending, id)) {
			r.fail("D-DRAIN-1: Drain %+v while call %d is %v", ds, id, sc.c.Access())
		}
	}
}

func (r *swarmRun) onTouch(tc arena.Touch) {
	sc, ok := r.calls[tc.By.Call]
	if !ok {
		r.fail("touch by a call the driver never returned: %v", tc)
	}
	if sc.c.Access() == drivers.AccessEnded {
		r.fail("D-ACCESS-END: touch after access ENDED: %v", tc)
	}
	if sc.c.Results()[tc.By.Row].Final() {
		r.st.lateTouches++ // a transfer landing after its row's result (late write, abandoned transfer)
	}
	row := sc.b.Rows[tc.By.Row]
	if r.regions[sc.regions[tc.By.Row]].a.Label() != tc.Region || row.Slot != tc.Slot {
		r.fail("D-SUB-6: row %d is slot %d of %s; touch %v", tc.By.Row, row.Slot, r.regions[sc.regions[tc.By.Row]].a.Label(), tc)
	}
}

func (r *swarmRun) shutdown() {
	labels := r.d.Shutdown(context.Background())
	r.shut = true
	r.st.labels += len(labels)
	want := map[string]bool{}
	named := map[drivers.Handle]bool{}
	for _, id := range r.order {
		sc := r.calls[id]
		r.observe(sc)
		switch sc.acc {
		case drivers.AccessUnprovable:
			want[drivers.CallLabel(id, drivers.WhyUnprovable)] = true
			for _, row := range sc.b.Rows {
				named[row.Handle] = true
			}
		case drivers.AccessPending:
			r.fail("D-SHUT-1: call %d still PENDING after Shutdown", id)
		}
	}
	for _, reg := range r.regions {
		if reg.live && named[reg.h] {
			want[drivers.RegionLabel(reg.a.Label(), drivers.WhyRetained)] = true
		}
	}
	for _, l := range labels {
		switch {
		case want[l]:
			delete(want, l)
		case r.isRegionLabel(l, drivers.WhyUnregisterFailed):
		case r.isDoubtLabel(l):
		default:
			r.fail("D-SHUT-1: unexpected label %q in %v", l, labels)
		}
	}
	if len(want) > 0 {
		r.fail("D-SHUT-1: labels %v miss %v", labels, want)
	}
	for _, reg := range r.regions {
		if reg.live && !slices.Contains(labels, drivers.RegionLabel(reg.a.Label(), drivers.WhyRetained)) &&
			!slices.Contains(labels, drivers.RegionLabel(reg.a.Label(), drivers.WhyUnregisterFailed)) {
			r.closed(reg) // released by Shutdown
		}
	}
	if again := r.d.Shutdown(context.Background()); len(again) > len(labels) {
		r.fail("D-SHUT-2: second Shutdown %v holds more than the first %v", again, labels)
	}
}

func (r *swarmRun) isRegionLabel(l, why string) bool {
	for _, reg := range r.regions {
		if reg.live && l == drivers.RegionLabel(reg.a.Label(), why) {
			return true
		}
	}
	return false
}

func (r *swarmRun) isDoubtLabel(l string) bool {
	for _, d := range r.doubt {
		if l == drivers.RegionLabel(d, drivers.WhyInDoubt) {
			return true
		}
	}
	return false
}

func (r *swarmRun) finalChecks() {
	for _, id := range r.order {
		sc := r.calls[id]
		for i, st := range sc.c.Results() {
			if !st.Final() {
				r.fail("D-SUB-3: call %d row %d has no result at the end", id, i)
			}
		}
		if !sc.c.Access().Evidenced() {
			r.fail("D-SUB-3: call %d has no access evidence at the end", id)
		}
	}
	for _, reg := range r.regions {
		for _, v := range reg.a.Violations() {
			r.fail("%s: %v", v.Rule, v)
		}
		for _, tc := range reg.a.Touches() {
			sc := r.calls[tc.By.Call]
			if st := sc.c.Results()[tc.By.Row]; st == drivers.Miss || st == drivers.NotAttempted {
				r.fail("D-STATUS: a %v row was touched: %v", st, tc)
			}
			if want := map[drivers.Direction]arena.Op{drivers.Fetch: arena.Write, drivers.Publish: arena.Read}[sc.b.Dir]; tc.Op != want {
				r.fail("D-STATUS: a %v row was touched by a %v: %v", sc.b.Dir, tc.Op, tc)
			}
		}
	}
	for _, key := range r.store.Keys() {
		obj, _ := r.store.Get(key)
		if !bytes.Equal(obj, content(key, swSlotBytes)) && !(key == swBadKey && string(obj) == "short") {
			r.fail("D-SUB-5: store holds %x under %s, not an object anyone published", obj, key)
		}
	}
	if !r.store.Evicting() {
		for _, id := range r.order {
			sc := r.calls[id]
			for i, st := range sc.c.Results() {
				if sc.b.Dir == drivers.Publish && st == drivers.OK && !r.store.Has(sc.b.Rows[i].Key) {
					r.fail("D-STATUS: PUBLISH OK of %s but a store that never evicts does not hold it", sc.b.Rows[i].Key)
				}
			}
		}
	}
}
