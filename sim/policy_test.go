package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestRecordedReplays: a run's recorded decisions, replayed as a script,
// give the same log and trace hash, under either policy — and the script
// draws nothing from the scheduler's seed.
func TestRecordedReplays(t *testing.T) {
	for _, pol := range []Options{
		{Policy: Random},
		{Policy: PCT, Depth: 1},
		{Policy: PCT, Depth: 3, Steps: 60},
	} {
		nonDefault := 0
		for seed := range uint64(300) {
			o := pol
			o.Seed, o.MaxWakeDelay, o.CoalesceChance, o.Record = seed, 50*time.Microsecond, 0.3, true
			h1, l1, s := workloadOn(o)
			sc := s.Recorded()
			if err := sc.Check(); err != nil {
				t.Fatalf("%v seed %d: recorded schedule: %v (repro: go test ./sim -run TestRecordedReplays)", pol.Policy, seed, err)
			}
			nonDefault += sc.Decisions()
			h2, l2, _ := workloadOn(Options{Seed: seed, Script: sc, Policy: PCT, MaxWakeDelay: time.Hour, CoalesceChance: 1})
			if h1 != h2 || l1 != l2 {
				t.Fatalf("%v seed %d: replay of %d decisions: trace %#x vs %#x\n%s\nvs\n%s (repro: go test ./sim -run TestRecordedReplays)",
					pol.Policy, seed, sc.Decisions(), h1, h2, l1, l2)
			}
		}
		if nonDefault == 0 {
			t.Fatalf("%v: 300 seeds recorded no decision at all: the check proves nothing (repro: go test ./sim -run TestRecordedReplays)", pol.Policy)
		}
	}
}

// TestScriptDefaults: an empty script is the default schedule: events due
// together run in creation order, callbacks run when triggered, repeats
// are never merged.
func TestScriptDefaults(t *testing.T) {
	s := New(Options{Seed: 7, Script: &Schedule{}, MaxWakeDelay: time.Second, CoalesceChance: 1})
	var got []string
	w := s.Wake("w", func() { got = append(got, fmt.Sprintf("w@%v", s.Now())) })
	for i := range 4 {
		s.Post("p", func() { got = append(got, fmt.Sprint("p", i)) })
	}
	w()
	w()
	s.After(5, "t", func() { got = append(got, fmt.Sprintf("t@%v", s.Now())) })
	if err := s.RunUntilIdle(0); err != nil {
		t.Fatal(err)
	}
	want := "p0 p1 p2 p3 w@0s w@0s t@5ns"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("empty script ran %q, want %q (repro: go test ./sim -run TestScriptDefaults)", g, want)
	}
	// One pick, one delay, one coalescing: each changes exactly its decision.
	s = New(Options{Seed: 7, Script: &Schedule{Picks: []Pick{{Step: 1, Rank: 2}}, Delays: []Delay{{Wake: 1, By: 3}}, Coalesce: []uint64{2}}})
	got = nil
	w = s.Wake("w", func() { got = append(got, fmt.Sprintf("w@%v", s.Now())) })
	for i := range 3 {
		s.Post("p", func() { got = append(got, fmt.Sprint("p", i)) })
	}
	w()
	w()
	if err := s.RunUntilIdle(0); err != nil {
		t.Fatal(err)
	}
	want = "p2 p0 p1 w@3ns"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("script ran %q, want %q (repro: go test ./sim -run TestScriptDefaults)", g, want)
	}
	bad := &Schedule{Picks: []Pick{{Step: 3, Rank: 1}, {Step: 3, Rank: 1}}}
	if bad.Check() == nil || (&Schedule{Delays: []Delay{{Wake: 1}}}).Check() == nil || (&Schedule{Coalesce: []uint64{0}}).Check() == nil {
		t.Fatalf("Check accepts a repeated step, a zero delay or trigger 0 (repro: go test ./sim -run TestScriptDefaults)")
	}
}

// TestPCTWindow: under PCT a callback runs no earlier than its trigger and
// no later than MaxWakeDelay after it, a timer exactly when due, and time
// never runs backwards; the same seed gives the same run.
func TestPCTWindow(t *testing.T) {
	const window = 20 * time.Microsecond
	late := false
	for seed := range uint64(200) {
		run := func() string {
			s := New(Options{Seed: seed, Policy: PCT, Depth: 2, Steps: 200, MaxWakeDelay: window})
			r := s.Rand("test")
			var log strings.Builder
			last := time.Duration(0)
			check := func(what string, lo, hi time.Duration) {
				now := s.Now()
				if now < last || now < lo || now > hi {
					t.Fatalf("seed %d: %s ran at %v, want %v..%v and not before %v (repro: go test ./sim -run TestPCTWindow)", seed, what, now, lo, hi, last)
				}
				if now > lo {
					late = true
				}
				last = now
				fmt.Fprintf(&log, "%s@%v ", what, now)
			}
			for i := range 4 {
				name := fmt.Sprint("cb", i)
				var trig time.Duration
				var w func()
				w = s.Wake(name, func() { check(name, trig, trig+window) })
				for j := range 5 {
					at := time.Duration(r.Intn(int(100 * time.Microsecond)))
					s.After(at, "timer", func() {
						check(fmt.Sprint("timer", i, j), at, at)
						trig = s.Now()
						w()
					})
				}
			}
			if err := s.RunUntilIdle(0); err != nil {
				t.Fatal(err)
			}
			return log.String()
		}
		if a, b := run(), run(); a != b {
			t.Fatalf("seed %d: PCT is not deterministic:\n%s\nvs\n%s (repro: go test ./sim -run TestPCTWindow)", seed, a, b)
		}
	}
	if !late {
		t.Fatalf("PCT never held a callback back: the window check proves nothing (repro: go test ./sim -run TestPCTWindow)")
	}
}

// chains runs two chains of m posts, A and B, all due at time zero, and
// returns the order their steps ran in ("A0 B0 A1 …").
func chains(o Options, m int) []string {
	s := New(o)
	var got []string
	var step func(name string, i int)
	step = func(name string, i int) {
		got = append(got, fmt.Sprint(name, i))
		if i+1 < m {
			s.Post(name, func() { step(name, i+1) })
		}
	}
	s.Post("A", func() { step("A", 0) })
	s.Post("B", func() { step("B", 0) })
	if err := s.RunUntilIdle(0); err != nil {
		panic(err)
	}
	return got
}

// TestPCTDepthGuarantee: on two chains of m steps (n = 2 sources,
// k = 2m steps), a depth-1 bug (all of B before A's second step) and a
// depth-2 bug (A's first step, then all of B, then the rest of A) are hit
// at least as often as 1/(n·k^(d−1)) promises. The random policy's count
// is logged beside it: its tie-break is a fresh random priority per event,
// which is no weak baseline here. Counts of seeds, not time.
func TestPCTDepthGuarantee(t *testing.T) {
	const m, seeds = 8, 800
	depth1 := func(o []string) bool {
		return strings.Join(o[:m+1], " ") == chainText("A", 0, 1)+" "+chainText("B", 0, m) || strings.HasPrefix(strings.Join(o, " "), chainText("B", 0, m))
	}
	depth2 := func(o []string) bool {
		return strings.Join(o, " ") == chainText("A", 0, 1)+" "+chainText("B", 0, m)+" "+chainText("A", 1, m)
	}
	for _, c := range []struct {
		depth int
		bug   func([]string) bool
	}{{1, depth1}, {2, depth2}} {
		hits, random := 0, 0
		for seed := range uint64(seeds) {
			if c.bug(chains(Options{Seed: seed, Policy: PCT, Depth: c.depth, Steps: 2 * m}, m)) {
				hits++
			}
			if c.bug(chains(Options{Seed: seed}, m)) {
				random++
			}
		}
		// The bound is a probability: allow three standard deviations of a
		// binomial count below it (the seeds are fixed, so this never flakes).
		bound := 1.0 / (2 * pow(2*m, c.depth-1))
		if low := bound*seeds - 3*math.Sqrt(seeds*bound*(1-bound)); float64(hits) < low {
			t.Fatalf("depth %d: PCT hit the bug in %d of %d seeds, fewer than the bound 1/(n·k^(d−1)) = %.4f allows (at least %.0f) (repro: go test ./sim -run TestPCTDepthGuarantee)", c.depth, hits, seeds, bound, low)
		}
		t.Logf("depth %d: PCT %d/%d (bound %.1f), random %d/%d", c.depth, hits, seeds, bound*seeds, random, seeds)
	}
}

func chainText(name string, from, to int) string {
	var parts []string
	for i := from; i < to; i++ {
		parts = append(parts, fmt.Sprint(name, i))
	}
	return strings.Join(parts, " ")
}

func pow(b, e int) float64 {
	r := 1.0
	for range e {
		r *= float64(b)
	}
	return r
}

// TestParsePolicy: the two names, and one clear error otherwise.
func TestParsePolicy(t *testing.T) {
	for _, p := range []Policy{Random, PCT} {
		if q, err := ParsePolicy(p.String()); err != nil || q != p {
			t.Fatalf("ParsePolicy(%q) = %v, %v (repro: go test ./sim -run TestParsePolicy)", p, q, err)
		}
	}
	if _, err := ParsePolicy("fair"); err == nil || !strings.Contains(err.Error(), "want random or pct") {
		t.Fatalf("ParsePolicy(fair): %v (repro: go test ./sim -run TestParsePolicy)", err)
	}
}

// TestRandomPolicyPinned: the random policy — the default — schedules
// exactly as it did before other policies existed: the trace hashes of 200
// seeds of the scheduler workload fold to the value the scheduler gave
// then. A change here changes every seed's interleaving (and every trace
// hash of `storesim run`); do not update the value to make it pass.
func TestRandomPolicyPinned(t *testing.T) {
	h := uint64(14695981039346656037)
	for seed := range uint64(200) {
		th, _ := workload(seed)
		h ^= th
		h *= 1099511628211
	}
	const want = 0xf4d0acd0bf35a3a6
	if h != want {
		t.Fatalf("the random policy's traces fold to %016x, want %016x: the default scheduler changed (repro: go test ./sim -run TestRandomPolicyPinned)", h, uint64(want))
	}
}
