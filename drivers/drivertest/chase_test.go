package drivertest

import (
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
)

// TestChaseRacePairs: a race pair that the draw (timing in real time, the
// seeds on the simulator) kept from happening in a case's directed and
// randomized runs gets up to raceChases more runs of the cases built for
// it, stopping at the first hit; when only part of the suite runs, a pair
// never hit is not judged. The case below stands for a driver whose first runs always
// won the race: it attempts the duplicate registration only from run hitOn
// on, so each verdict is decided by the run count alone, not by timing.
func TestChaseRacePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("real waits")
	}
	seeds := Options{Short: true}.withDefaults(Harness{RealTime: true}).Seeds
	main := 1 + seeds // the directed run and the randomized runs
	simMain := 1 + Options{Short: true}.withDefaults(Harness{}).Seeds
	for _, tc := range []struct {
		name     string
		realTime bool
		rules    []string
		hitOn    int // the run that first attempts the race (0: none)
		wantRuns int
		wantHit  bool
		wantGap  bool
	}{
		{name: "hit in the main runs", realTime: true, hitOn: 1, wantRuns: main, wantHit: true},
		{name: "hit on the third chase", realTime: true, hitOn: main + 3, wantRuns: main + 3, wantHit: true},
		{name: "never hit", realTime: true, wantRuns: main + raceChases, wantGap: true},
		{name: "simulator: hit on the second chase", hitOn: simMain + 2, wantRuns: simMain + 2, wantHit: true},
		{name: "simulator: never hit", wantRuns: simMain + raceChases, wantGap: true},
		{name: "partial: no chase", realTime: true, rules: []string{"D-REG-1"}, wantRuns: main},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Registered("memory")
			h.RealTime = tc.realTime
			c := newCertifier(h, Options{Short: true, Rules: tc.rules})
			runs := 0
			c.groups = []*group{{rule: rules.DReg1, needs: always, cases: []caseDef{{
				name: "chased", chases: []Pair{DuplicateRegistration},
				run: func(w *world) {
					runs++
					a, _ := w.region(64, 32)
					if tc.hitOn > 0 && runs >= tc.hitOn && !w.aliasRefused(a) {
						w.fail(rules.DReg1, "the memory driver took overlapping memory twice")
					}
				},
			}}}}
			c.run()
			rep := c.report()
			hits := 0
			for _, p := range rep.RacePairs {
				if p.Pair == DuplicateRegistration.String() {
					hits = p.Hits
				}
			}
			gap := false
			for _, g := range rep.Gaps {
				gap = gap || strings.Contains(g, "race pair "+DuplicateRegistration.String())
			}
			if runs != tc.wantRuns || (hits > 0) != tc.wantHit || gap != tc.wantGap || len(rep.Failed()) > 0 {
				t.Fatalf("%d runs, %d hits, gap %v, failed %v: want %d runs, hit %v, gap %v, nothing failed (gaps %q) (repro: %s)",
					runs, hits, gap, rep.Failed(), tc.wantRuns, tc.wantHit, tc.wantGap, rep.Gaps, reproOf(t))
			}
		})
	}
}

// TestGapNamesWhyChasesSkipped: when no run of the cases built for a race
// pair got as far as the race, the gap says why, so a driver author reads
// what kept the suite from it rather than a bare "never exercised".
func TestGapNamesWhyChasesSkipped(t *testing.T) {
	c := newCertifier(Registered("memory"), Options{Short: true})
	c.groups = []*group{{rule: rules.DReg1, needs: always, cases: []caseDef{{
		name: "chased", chases: []Pair{DuplicateRegistration},
		run: func(w *world) { w.skip("the store would not hold a thing") },
	}}}}
	c.run()
	rep := c.report()
	want := "race pair " + DuplicateRegistration.String() + " was never exercised: no run of the cases built for it got that far (the store would not hold a thing ("
	for _, g := range rep.Gaps {
		if strings.HasPrefix(g, want) {
			return
		}
	}
	t.Fatalf("gaps %q: want one starting %q (repro: %s)", rep.Gaps, want, reproOf(t))
}
