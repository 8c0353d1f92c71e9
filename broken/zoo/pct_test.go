package zoo

import (
	"strings"
	"testing"
)

// TestDepthBugs: the zoo has caught ordering bugs of depth 1, 2 and 3, for
// docs/PCT.md.
func TestDepthBugs(t *testing.T) {
	seen := map[int]bool{}
	for _, b := range Bugs {
		if b.Depth == 0 {
			continue
		}
		if !b.Caught() || b.Depth < 0 || b.Depth > 3 {
			t.Errorf("%s: depth %d, caught %v: an ordering bug must be caught, of depth 1 to 3 (repro: go test ./broken/zoo -run TestDepthBugs)", b.Name, b.Depth, b.Caught())
		}
		seen[b.Depth] = true
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Fatalf("depths %v in the zoo, want 1, 2 and 3 (repro: go test ./broken/zoo -run TestDepthBugs)", seen)
	}
}

// TestRenderPCT: the records render into both tables, policies in order
// (random, then PCT by depth), a hunt that found nothing said as such.
func TestRenderPCT(t *testing.T) {
	const in = `{"kind":"pct","bug":"ack_split_drops","depth":2,"limit":50,"policies":[` +
		`{"policy":"pct","depth":2,"hunts":[{"start":0,"tried":7,"found":true,"wall_ms":3},{"start":9,"tried":50,"found":false,"wall_ms":9}]},` +
		`{"policy":"random","hunts":[{"start":0,"tried":50,"found":false,"wall_ms":9}]}]}
{"kind":"schedshrink","bug":"outcome_is_end","seed":3,"found":true,"rule":"B-ACCESS","ops_before":100,"ops_after":2,"original":230,"before":4,"after":0,"replays":true,"scenario":"reproduces B-ACCESS","runs":27,"done":true,"wall_ms":26}
{"kind":"meta","date":"today","commit":"abc","nproc":2,"cpu":"x","go_version":"go","commands":["scripts/pct.sh"],"total_s":1}
`
	res, err := ReadPCT(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RenderPCT(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| bug | depth | random: seeds (median) | random: time | PCT d=2: seeds (median) |",
		"| ack_split_drops | 2 | not found in 1×50 seeds | — | > limit (1/2 found) |",
		"| outcome_is_end | 3 | B-ACCESS | 100 → 2 | 230 | 4 | 0 | yes | reproduces B-ACCESS | 27 |",
		"**1 of 1 bugs** end with fewer non-default decisions",
		"do not edit numbers by hand",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("docs/PCT.md lacks %q:\n%s (repro: go test ./broken/zoo -run TestRenderPCT)", want, out)
		}
	}
	if _, err := ReadPCT(strings.NewReader(`{"kind":"other"}`)); err == nil {
		t.Errorf("an unknown record kind was read (repro: go test ./broken/zoo -run TestRenderPCT)")
	}
}
