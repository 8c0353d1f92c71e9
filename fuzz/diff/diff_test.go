package diff_test

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/fuzz/diff"
	"github.com/storesim/storesim/fuzz/engine"
)

func TestScratch(t *testing.T) {
	for _, prof := range []engine.Profile{engine.Calm, engine.Default, engine.Evicting} {
		for seed := range uint64(30) {
			log := engine.Plan(seed, engine.Config{Driver: "memory", Profile: prof})
			res := diff.Run(log, diff.Side{Name: "memory"}, diff.Side{Name: "together"}, diff.Config{Repro: fmt.Sprintf("seed %d %s", seed, prof)})
			if res.Verdict() != engine.Pass {
				t.Errorf("%s", res.Report())
			}
			if seed == 0 {
				t.Logf("%s: %s", prof, res.Summary())
			}
		}
	}
}
