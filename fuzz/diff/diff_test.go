package diff_test

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/diff"
	"github.com/storesim/storesim/fuzz/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func repro(t *testing.T) string {
	return fmt.Sprintf("(repro: go test ./fuzz/diff -run '^%s$')", strings.Split(t.Name(), "/")[0])
}

// play is one seed's diff of a against b on a generated log of profile p.
func play(seed uint64, p engine.Profile, a, b string) *diff.Result {
	log := engine.Plan(seed, engine.Config{Driver: "memory", Profile: p})
	cmd := fmt.Sprintf("storesim diff --driver %s --driver %s --seeds %d:1 --profile %s --ops 100", a, b, seed, p)
	return diff.Run(log, diff.Side{Name: a}, diff.Side{Name: b}, diff.Config{Repro: cmd})
}

// TestConformingPairsAgree tests the diff the other way round: two
// conforming drivers, under every profile (faults, an evicting store),
// never diverge — every difference is a freedom of the contract — and the
// same seed twice gives the same report (no flakes).
func TestConformingPairsAgree(t *testing.T) {
	seeds := uint64(60)
	if testing.Short() {
		seeds = 15
	}
	for _, pair := range [][2]string{{"memory", "memory"}, {"memory", "together"}, {"together", "memory"}} {
		for _, p := range []engine.Profile{engine.Calm, engine.Default, engine.Evicting} {
			t.Run(pair[0]+"-"+pair[1]+"/"+string(p), func(t *testing.T) {
				rows, differ := 0, 0
				for seed := range seeds {
					res := play(seed, p, pair[0], pair[1])
					if v := res.Verdict(); v != engine.Pass {
						t.Fatalf("seed %d: %s, want a pass:\n%s%s", seed, v, res.Report(), repro(t))
					}
					if seed%10 == 0 {
						if again := play(seed, p, pair[0], pair[1]); again.Summary() != res.Summary() {
							t.Fatalf("seed %d played twice:\n%s\n%s\n(repro: %s)", seed, res.Summary(), again.Summary(), res.Repro)
						}
					}
					rows, differ = rows+res.Rows, differ+res.Differ
				}
				if rows < 100*int(seeds) {
					t.Fatalf("only %d rows compared over %d seeds: the diff plays almost nothing %s", rows, seeds, repro(t))
				}
				t.Logf("%d rows compared, %d differ within the freedoms", rows, differ)
			})
		}
	}
}

// TestLastWriterDiverges: the planted divergence (broken:ServesLastWriter,
// which serves the last PUBLISH's object instead of the first) is found on
// every seed, as D-SUB-4, naming the op, the row, the key and both answers,
// on the broken side whichever side it is given as.
func TestLastWriterDiverges(t *testing.T) {
	const bad = "broken:ServesLastWriter"
	for _, order := range [][2]string{{"memory", bad}, {bad, "memory"}} {
		for seed := range uint64(10) {
			res := play(seed, engine.Calm, order[0], order[1])
			d := res.First()
			if d == nil || res.Verdict() != engine.Safety {
				t.Fatalf("%s vs %s seed %d: no divergence (verdict %s):\n%s%s", order[0], order[1], seed, res.Verdict(), res.Report(), repro(t))
			}
			if res.Sides[d.Side].Name != bad || d.Rule != rules.DSub4 || d.What != "fetch" && d.What != "final fetch" {
				t.Fatalf("seed %d: first divergence %+v, want a FETCH of %s on D-SUB-4 %s", seed, d, bad, repro(t))
			}
			rep := res.Report()
			for _, want := range []string{fmt.Sprintf("at op %d", d.Op), "key " + d.Key, "(the first publish of " + d.Key + ")", "(a later publish of " + d.Key + ")", "\nrepro: " + res.Repro + "\n"} {
				if !strings.Contains(rep, want) {
					t.Fatalf("seed %d: the report lacks %q:\n%s%s", seed, want, rep, repro(t))
				}
			}
			if !strings.HasSuffix(rep, "repro: "+res.Repro+"\n") {
				t.Fatalf("seed %d: the report does not end with the repro command:\n%s%s", seed, rep, repro(t))
			}
		}
	}
}

// TestOtherBrokenDriversDiverge: the broken drivers whose bug changes an
// answer a sequential play sees are found by the diff as well, each on a
// rule the diff can name.
func TestOtherBrokenDriversDiverge(t *testing.T) {
	for _, tc := range []struct {
		driver string
		rules  []rules.ID
	}{
		{"broken:OverwritesOnPublish", []rules.ID{rules.DSub4}},
		{"broken:EmptyGetOK", []rules.ID{rules.DStatus}},
		{"broken:CachesAbsence", []rules.ID{rules.DLook2}},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			for seed := range uint64(20) {
				res := play(seed, engine.Calm, "memory", tc.driver)
				if d := res.First(); d != nil {
					for _, r := range tc.rules {
						if d.Rule == r {
							return
						}
					}
					t.Fatalf("seed %d: first divergence on %s, want one of %v:\n%s%s", seed, d.Rule, tc.rules, res.Report(), repro(t))
				}
			}
			t.Fatalf("no divergence of %s in 20 seeds %s", tc.driver, repro(t))
		})
	}
}
