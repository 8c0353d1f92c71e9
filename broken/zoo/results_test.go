package zoo

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRender: records round-trip through JSON Lines, medians count a hunt
// that found nothing as +Inf, and the ratio of a naive run that found
// nothing is a lower bound ("> …").
func TestRender(t *testing.T) {
	const repro = "(repro: go test ./broken/zoo -run TestRender)"
	hunts := []HuntRecord{
		{Start: 0, Tried: 3, Found: true, Rule: "S-MARKS", WallMS: 10},
		{Start: 1, Tried: 1, Found: true, Rule: "S-MARKS", WallMS: 2},
		{Start: 2, Tried: 9, Found: false, WallMS: 90},
	}
	recs := []any{
		SwarmRecord{Kind: "swarm", Bug: "late_success", Limit: 9, Hunts: hunts, Shrink: &ShrinkRecord{Seed: 0, Rule: "S-MARKS", OpsBefore: 100, OpsAfter: 4}},
		NaiveRecord{Kind: "naive", Bug: "late_success", BudgetMS: 1000, Runs: []NaiveRun{{Check: "outcome", AtMS: 100}, {Check: "data", AtMS: 300, ArenaCheck: "S-NO-LATE-ACCESS", ArenaMS: 50}, {}}},
		SwarmRecord{Kind: "swarm", Bug: "marks_shift", Limit: 9, Hunts: hunts[:1]},
		NaiveRecord{Kind: "naive", Bug: "marks_shift", BudgetMS: 1000, Runs: []NaiveRun{{}}},
		SwarmRecord{Kind: "swarm", Bug: "indoubt_ignored", Limit: 9, Hunts: hunts[2:]},
		NaiveRecord{Kind: "naive", Bug: "indoubt_ignored", BudgetMS: 1000, Runs: []NaiveRun{{}}},
		MetaRecord{Kind: "meta", NProc: 2, GoVersion: "go1.x", Commands: []string{"scripts/zoo.sh"}},
	}
	var in strings.Builder
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	res, err := ReadResults(strings.NewReader(in.String()))
	if err != nil {
		t.Fatalf("ReadResults: %v %s", err, repro)
	}
	if seeds, wall, found := res.Swarm["late_success"].SwarmMedians(); seeds != 3 || wall != 10 || found != 2 {
		t.Fatalf("medians %v seeds, %v ms, %d found; want 3, 10, 2 %s", seeds, wall, found, repro)
	}
	var out strings.Builder
	if err := Render(&out, res); err != nil {
		t.Fatal(err)
	}
	doc := out.String()
	for _, want := range []string{
		"| late_success | B-OUTCOME | S-MARKS (2/3 found) | 3 | 10 ms | 100 → 4 (S-MARKS) | outcome, data (2/3) | 300 ms | 100 ms | 30× |",
		"| marks_shift | S-MARKS | S-MARKS (1/1 found) | 3 | 10 ms | n/a | nothing in 1×1000 ms | — | — | > 100× |",
		"| indoubt_ignored | S-HOLD |",
		"No escapes",
		"| ended_at_results | B-ACCESS | not measured |",
		"scripts/zoo.sh",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("rendered doc lacks %q %s", want, repro)
		}
	}
	if _, err := ReadResults(strings.NewReader(`{"kind":"bogus"}`)); err == nil {
		t.Errorf("an unknown record kind was accepted %s", repro)
	}
	if t.Failed() {
		t.Logf("rendered:\n%s", doc)
	}
}
