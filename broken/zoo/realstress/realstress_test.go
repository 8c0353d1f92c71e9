package realstress

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/broken/zoo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNoFalseAlarm: on the correct backend the naive stress test finds
// nothing, naive or arena, while doing real work. Run it with -race.
func TestNoFalseAlarm(t *testing.T) {
	const repro = "(repro: go test -race ./broken/zoo/realstress -run TestNoFalseAlarm)"
	if zoo.Planted() != "" {
		t.Skipf("build carries planted bug %s", zoo.Planted())
	}
	rep := Run(Options{Duration: 2 * time.Second, Seed: 1})
	t.Logf("%d ops in %d rounds, %v", rep.Ops, rep.Rounds, rep.Elapsed)
	switch {
	case rep.Naive != nil:
		t.Fatalf("naive finding on the correct backend: %v %s", rep.Naive, repro)
	case rep.Arena != nil:
		t.Fatalf("arena finding on the correct backend: %v %s", rep.Arena, repro)
	case rep.Ops < 100 || rep.Rounds < 2:
		t.Fatalf("too little work to mean anything: %d ops, %d rounds %s", rep.Ops, rep.Rounds, repro)
	}
}

// TestFindsPlanted: with a planted bug the naive test usually finds it; it
// only logs, because finding it is what docs/ZOO.md measures, not a
// property of this package.
func TestFindsPlanted(t *testing.T) {
	if zoo.Planted() == "" {
		t.Skip(`needs a bug planted: go test -race -overlay "$(go run ./broken/zoo/realhunt overlay <name>)" ./broken/zoo/realstress -run TestFindsPlanted -v`)
	}
	rep := Run(Options{Duration: 5 * time.Second, Seed: 1})
	t.Logf("%s: naive %v, arena %v, %d ops, %d rounds", zoo.Planted(), rep.Naive, rep.Arena, rep.Ops, rep.Rounds)
}
