package drivertest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
)

// Real-time cases start the realtime runtime's executor and the lock
// probes' goroutines; every one must be gone at the end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var short = Options{Short: true}

// TestCanaryNeverCertified: the canary's one lie (a FETCH MISS reported OK,
// slot unwritten) must always fail the suite, on D-STATUS; a suite that
// certifies it has been disabled somewhere.
func TestCanaryNeverCertified(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rep := Certify(Canary, Options{Short: true, Seed: seed})
		if rep.Certified || !slices.Contains(rep.Failed(), "D-STATUS") {
			t.Fatalf("seed %d: the canary was certified or did not fail D-STATUS (failed %v):\n%s(repro: %s)", seed, rep.Failed(), rep.Table(), reproOf(t))
		}
	}
}

// TestDeterministic: on the simulator a certification is a function of
// its options: two runs give the same certificate, byte for byte.
func TestDeterministic(t *testing.T) {
	a, _ := json.Marshal(Certify(Registered("together"), short))
	b, _ := json.Marshal(Certify(Registered("together"), short))
	if string(a) != string(b) {
		t.Fatalf("two certifications of one driver with one seed differ:\n%s\n%s\n(repro: %s)", a, b, reproOf(t))
	}
	c, _ := json.Marshal(Certify(Registered("together"), Options{Short: true, Seed: 2}))
	if string(a) == string(c) {
		t.Fatalf("seeds 1 and 2 gave the same certificate: the seed reaches nothing (repro: %s)", reproOf(t))
	}
}

// TestReportJSON: the certificate's field names are stable (the CLI prints
// it with --json) and it round-trips; a run of selected rules says so.
func TestReportJSON(t *testing.T) {
	rep := Certify(Registered("memory"), Options{Short: true, Rules: []string{"D-REG-3", "D-TOG-1"}})
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("marshal: %v (repro: %s)", err, reproOf(t))
	}
	for _, field := range []string{`"driver":"memory"`, `"version":`, `"capabilities":{`, `"together":false`, `"rules":[`,
		`"rule":"D-REG-3"`, `"verdict":"pass"`, `"verdict":"skip"`, `"cases":`, `"seeds":[`, `"found":0`, `"race_pairs":[`, `"gaps":[]`, `"selected":["D-REG-3","D-TOG-1"]`, `"certified":true`, `"swarm":{`} {
		if !strings.Contains(string(out), field) {
			t.Errorf("certificate JSON lacks %s:\n%s\n(repro: %s)", field, out, reproOf(t))
		}
	}
	var back Report
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("unmarshal: %v (repro: %s)", err, reproOf(t))
	}
	again, _ := json.Marshal(back)
	if string(again) != string(out) {
		t.Fatalf("certificate does not round-trip:\n%s\n%s\n(repro: %s)", out, again, reproOf(t))
	}
	if bad := Certify(Registered("memory"), Options{Short: true, Rules: []string{"D-NOPE"}}); bad.Certified || !strings.Contains(bad.Gaps[0], `unknown rule "D-NOPE"`) {
		t.Fatalf("a run of an unknown rule: certified %v, gaps %v (repro: %s)", bad.Certified, bad.Gaps, reproOf(t))
	}
	if rr, _ := back.Rule("D-GEOM"); rr.Verdict != Skip || rr.Reason != "not selected" {
		t.Fatalf("unselected rule: %+v, want skip \"not selected\" (repro: %s)", rr, reproOf(t))
	}
	if rr, _ := back.Rule("D-TOG-1"); rr.Verdict != Skip || !strings.Contains(rr.Reason, "together-registration") {
		t.Fatalf("D-TOG-1 on the plain driver: %+v, want skip naming together-registration (repro: %s)", rr, reproOf(t))
	}
	table := rep.Table()
	for _, want := range []string{"RULE", "VERDICT", "CASES", "SEEDS", "RACE PAIRS", "D-REG-3", "stale-handle-close×", "partial run: only D-REG-3 D-TOG-1", "certified: true"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s(repro: %s)", want, table, reproOf(t))
		}
	}
}

// TestCapabilitiesDecide: what a driver does not declare is skipped with
// the reason, not failed and not passed.
func TestCapabilitiesDecide(t *testing.T) {
	h := Registered("memory")
	h.Caps = drivers.Capabilities{MaxRowsPerOp: 3, AbsentIsMiss: false, CanFetch: true, CanCancel: false}
	rep := Certify(h, short)
	for rule, why := range map[string]string{
		"D-SUB-4": "CanPublish=false", "D-SUB-5": "CanPublish=false", "D-TOG-1": "together-registration",
		"D-QUAR": "together-registration", "D-SUB-2": "CanPublish=false",
	} {
		rr, _ := rep.Rule(rule)
		if rr.Verdict != Skip || !strings.Contains(rr.Reason, why) {
			t.Errorf("%s: %s %q, want skip naming %q (repro: %s)", rule, rr.Verdict, rr.Reason, why, reproOf(t))
		}
	}
	if rr, _ := rep.Rule("D-CAN-2"); !strings.Contains(rr.Reason, "CanCancel=false") {
		t.Errorf("D-CAN-2 with CanCancel=false: %s %q, want its cases skipped for CanCancel=false (repro: %s)", rr.Verdict, rr.Reason, reproOf(t))
	}
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("a fetch-only, non-cancelling memory driver failed %v:\n%s(repro: %s)", f, rep.Table(), reproOf(t))
	}
}

// TestGapsBlockCertification: a race pair never exercised is a gap, and a
// report with a gap is not certified even when every rule passed.
func TestGapsBlockCertification(t *testing.T) {
	c := newCertifier(Registered("memory"), short)
	c.probe = probe{caps: drivers.Capabilities{MaxRowsPerOp: 1, CanFetch: true}}
	for _, g := range c.groups {
		c.acc(g.rule.String()).ran = 1
	}
	c.pairs[CancelVsCompletion] = 3
	rep := c.report()
	if rep.Certified || len(rep.Gaps) != int(numPairs)-1 || len(rep.Failed()) != 0 {
		t.Fatalf("all rules pass, one pair hit: certified %v, gaps %v, failed %v; want not certified with %d gaps (repro: %s)",
			rep.Certified, rep.Gaps, rep.Failed(), numPairs-1, reproOf(t))
	}
}

// TestPairCounter: each pair is counted from the events that show it.
func TestPairCounter(t *testing.T) {
	p := NewPairCounter()
	r := drivers.Region{Label: "a", SlotBytes: 8, Slots: 2, Mem: make(drivers.Bytes, 16)}
	row := drivers.Row{Key: "k", Handle: 1}
	fetch := drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{row}}
	var at time.Duration
	p.Registering(r)
	p.Registered(at, 1, r)
	p.Registering(r) // duplicate
	p.Submitted(at, 7, fetch, nil)
	p.Submitted(at, 8, fetch, nil) // repeated key in flight
	p.Unregistering(1)             // unregister vs in-flight
	p.Cancelled(at, 7, drivers.CancelRequested)
	p.Drained(drivers.DrainStatus{Pending: []drivers.CallID{7, 8}})
	p.Callback(at, 7) // late callback
	p.Callback(at, 7) // counted once per call
	p.AccessChanged(at, 7, drivers.AccessEnded)
	p.Cancelled(at, 7, drivers.CancelAlreadyDone) // ended: no race
	p.ShuttingDown()                              // call 8 in flight
	p.ShutDown(at, []string{"call:8:unprovable"}) // announced: not counted twice
	p.ShutDown(at, []string{"call:8:unprovable"}) // unannounced: counted from the label
	p.Unregistered(at, 1, r)
	p.Unregistering(1) // stale
	want := map[Pair]int{CancelVsCompletion: 1, ShutdownVsInFlight: 2, UnregisterVsInFlight: 1, DrainVsLateCallback: 1,
		DuplicateRegistration: 1, StaleHandleClose: 1, RepeatedKeyInFlight: 1}
	for i, h := range p.Hits() {
		if h.Pair != Pair(i).String() || h.Hits != want[Pair(i)] {
			t.Errorf("%s: %d hits, want %d (repro: %s)", h.Pair, h.Hits, want[Pair(i)], reproOf(t))
		}
	}
}

// TestRealTime certifies the together driver on the wall-clock runtime:
// the same cases with real waits, the lock and cancel probes of
// monitor/realprobe, and no swarm.
func TestRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real waits")
	}
	h := Registered("together")
	h.RealTime = true
	rep := Certify(h, Options{Short: true, Rules: []string{"D-REG-6", "D-CB-4", "D-CAN-1", "D-DRAIN-2", "D-SHUT-1", "D-STATUS"}})
	if f := rep.Failed(); len(f) > 0 || !rep.RealTime || rep.Swarm.Runs != 0 {
		t.Fatalf("real-time together: failed %v, real-time %v, swarm %d runs:\n%s(repro: %s)", f, rep.RealTime, rep.Swarm.Runs, rep.Table(), reproOf(t))
	}
	if rr, _ := rep.Rule("D-REG-6"); rr.Verdict != Pass {
		t.Fatalf("D-REG-6 in real time: %s %q, want pass (repro: %s)", rr.Verdict, rr.Reason, reproOf(t))
	}
}

// TestRunSubtests: Run reports one subtest per rule group plus race-pairs.
func TestRunSubtests(t *testing.T) {
	RunWith(t, Registered("memory"), Options{Short: true, Rules: []string{"D-GEOM", "D-REG-1"}})
}

// TestBadHarness: a harness without a factory, or one whose factory fails,
// is a clear report, never a panic.
func TestBadHarness(t *testing.T) {
	for _, h := range []Harness{
		{Name: "nil"},
		{Name: "failing", New: func(Env) (drivers.Driver, error) { return nil, errFactory }},
		{Name: "panicking", New: func(Env) (drivers.Driver, error) { panic("boom") }},
	} {
		rep := Certify(h, short)
		if rep.Certified || len(rep.Gaps) == 0 || !strings.Contains(rep.Gaps[0], "could not be built") {
			t.Errorf("%s: certified %v, gaps %v; want not certified, naming why (repro: %s)", h.Name, rep.Certified, rep.Gaps, reproOf(t))
		}
	}
}

var errFactory = errorString("no driver today")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestNotApplicable: a race pair is excused only when the driver cannot
// give it a chance — it declares no cancel support, none of its calls was
// ever in flight when Submit returned, or (for the repeated key, which the
// report asks only when it was never hit) it refused as back-pressure every
// Submit that named a key in flight — and never merely because it was not
// hit: one call in flight makes every pair count again.
func TestNotApplicable(t *testing.T) {
	full := drivers.Capabilities{MaxRowsPerOp: 4, CanFetch: true, CanPublish: true, CanCancel: true}
	noCancel := full
	noCancel.CanCancel = false
	inflightPairs := []Pair{CancelVsCompletion, ShutdownVsInFlight, UnregisterVsInFlight, RepeatedKeyInFlight}
	for _, tc := range []struct {
		name string
		caps drivers.Capabilities
		ch   pairChances
		na   []Pair // the pairs excused
	}{
		{"nothing observed", full, pairChances{}, nil},
		{"all inline", full, pairChances{calls: 40}, append(slices.Clone(inflightPairs), DrainVsLateCallback)},
		{"inline, late callbacks", full, pairChances{calls: 40, late: 3}, inflightPairs},
		{"ended inline, rows later", full, pairChances{calls: 40, unsettled: 2}, inflightPairs},
		{"one call in flight", full, pairChances{calls: 40, pending: 1, unsettled: 1}, nil},
		{"no cancel support", noCancel, pairChances{calls: 40, pending: 9, unsettled: 9, late: 9}, []Pair{CancelVsCompletion}},
		{"pushed back every repeated key", full, pairChances{calls: 40, pending: 9, unsettled: 9, late: 9, keyPushedBack: 12}, []Pair{RepeatedKeyInFlight}},
		{"never asked for a repeated key", full, pairChances{calls: 40, pending: 9, unsettled: 9, late: 9}, nil},
	} {
		for _, p := range Pairs() {
			why := notApplicable(p, tc.caps, tc.ch)
			if want := slices.Contains(tc.na, p); want != (why != "") {
				t.Errorf("%s: %s: not applicable %q, want excused %v (repro: %s)", tc.name, p, why, want, reproOf(t))
			}
		}
	}
	// In a report: an excused pair is no gap, and says why.
	c := newCertifier(Registered("memory"), short)
	c.probe = probe{caps: noCancel}
	for _, g := range c.groups {
		c.acc(g.rule.String()).ran = 1
	}
	for _, p := range Pairs() {
		if p != CancelVsCompletion {
			c.pairs[p] = 1
		}
	}
	rep := c.report()
	if !rep.Certified || !strings.Contains(rep.RacePairs[CancelVsCompletion].NotApplicable, "CanCancel=false") || !strings.Contains(rep.Table(), "not applicable: cancel-vs-completion: the driver declares CanCancel=false") {
		t.Fatalf("CanCancel=false, every other pair hit: certified %v, gaps %v, pairs %+v; want certified with cancel-vs-completion not applicable:\n%s(repro: %s)", rep.Certified, rep.Gaps, rep.RacePairs, rep.Table(), reproOf(t))
	}
}

// TestDrainPairCountsCallbacksDuringDrain: a callback of an earlier call
// that runs while a Drain is under way races it as much as one after it
// returns (a driver that writes in batches delivers it before the caller
// sees the answer): it counts once the Drain answers not done, and not at
// all when it answers done.
func TestDrainPairCountsCallbacksDuringDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		done     bool
		duringOn bool // the callback runs between Draining and Drained
		want     int
	}{
		{"during a drain that was not done", false, true, 1},
		{"during a drain that was done", true, true, 0},
		{"after a drain that was not done", false, false, 1},
		{"after a drain that was done", true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPairCounter()
			p.Submitted(0, 1, drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k"}}}, nil)
			p.Draining()
			if tc.duringOn {
				p.Callback(0, 1)
			}
			p.Drained(drivers.DrainStatus{Done: tc.done, Pending: []drivers.CallID{1}})
			if !tc.duringOn {
				p.Callback(0, 1)
			}
			p.Callback(0, 1) // a second late callback of the same call counts no more
			if got := p.snapshot()[DrainVsLateCallback]; got != tc.want {
				t.Fatalf("drain-vs-late-callback = %d, want %d (repro: %s)", got, tc.want, reproOf(t))
			}
		})
	}
}
