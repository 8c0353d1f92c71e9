package shrink

import (
	"fmt"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
)

// TestShrinkSchedule: after the op log is minimal the schedule pass writes
// the run's decisions as the log's sched script and shrinks them: fewer
// non-default decisions than the seed's run, and the written file, parsed
// back, fails the same rule with its script instead of the seed's draws.
// KeepSchedule skips the pass.
func TestShrinkSchedule(t *testing.T) {
	const repro = "(repro: go test ./fuzz/shrink -run TestShrinkSchedule)"
	cfg := planted("k1")
	log, _ := failingSeed(t, engine.Default, cfg)
	res, err := Shrink(log, Options{Config: cfg, MaxRuns: 3000})
	if err != nil {
		t.Fatalf("%v %s", err, repro)
	}
	sc := res.Schedule
	t.Logf("seed %d: decisions %d (seed's run) -> %d (minimal log) -> %d", log.Seed, sc.Original, sc.Before, sc.After)
	if !sc.Shrunk || res.Log.Sched.Script == nil || sc.After != res.Log.Sched.Script.Decisions() {
		t.Fatalf("no schedule pass: %+v, script %v %s", sc, res.Log.Sched.Script, repro)
	}
	if sc.Original <= 0 || sc.After >= sc.Original || sc.After > sc.Before {
		t.Fatalf("decisions %d -> %d -> %d: want fewer after the shrink than in the seed's run %s", sc.Original, sc.Before, sc.After, repro)
	}
	text := res.Text("min.oplog", "")
	if !strings.Contains(text, "\nsched script\n") || !strings.Contains(text, fmt.Sprintf("# schedule: %d non-default decisions", sc.After)) {
		t.Fatalf("the file lacks its sched script or the schedule line:\n%s %s", text, repro)
	}
	again, err := workload.Parse(text)
	if err != nil {
		t.Fatalf("%v %s", err, repro)
	}
	if r := engine.Run(again, cfg); r.Rule() != res.Rule || r.TraceHash != res.Run.TraceHash {
		t.Fatalf("the file replays to %s %016x, the shrink saw %s %016x %s", r.Rule(), r.TraceHash, res.Rule, res.Run.TraceHash, repro)
	}
	kept, err := Shrink(log, Options{Config: cfg, MaxRuns: 3000, KeepSchedule: true})
	if err != nil || kept.Log.Sched.Script != nil || kept.Schedule.Shrunk {
		t.Fatalf("KeepSchedule: %v, script %v %s", err, kept.Log.Sched.Script, repro)
	}
}
