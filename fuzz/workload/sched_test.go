package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/sim"
)

const schedBase = "storesim-oplog v2\nseed 5\nendpoint A regions=r0:4x16\nop at=0us fetch A keys=k1 mask=1\n"

// TestSchedRoundTrip: a policy line and a script print and parse back
// unchanged; a log without sched lines is the seed's random policy.
func TestSchedRoundTrip(t *testing.T) {
	for _, s := range []Sched{
		{Policy: sim.PCT, Depth: 3, Steps: 700},
		{Script: &sim.Schedule{}},
		{Script: &sim.Schedule{Picks: []sim.Pick{{Step: 3, Rank: 1}, {Step: 9, Rank: 4}}, Delays: []sim.Delay{{Wake: 2, By: 1234}}, Coalesce: []uint64{7, 8}}},
	} {
		l, err := Parse(schedBase + "end\n")
		if err != nil {
			t.Fatal(err)
		}
		l.Sched = s
		back, err := Parse(l.String())
		if err != nil || back.String() != l.String() {
			t.Fatalf("round trip of %+v: %v\n%s\nvs\n%s (repro: go test ./fuzz/workload -run TestSchedRoundTrip)", s, err, l.String(), back)
		}
		if s.Script != nil && back.Sched.Script.Decisions() != s.Script.Decisions() {
			t.Fatalf("script lost decisions: %+v (repro: go test ./fuzz/workload -run TestSchedRoundTrip)", back.Sched.Script)
		}
	}
	l, err := Parse(schedBase + "end\n")
	if err != nil || l.Sched.Policy != sim.Random || l.Sched.Script != nil || strings.Contains(l.String(), "sched") {
		t.Fatalf("a log without sched lines: %+v, %v (repro: go test ./fuzz/workload -run TestSchedRoundTrip)", l.Sched, err)
	}
	l, err = Parse(schedBase + "sched random\nsched delay 1 1ms\nend\n")
	if err == nil {
		t.Fatalf("a delay without a script parsed: %+v (repro: go test ./fuzz/workload -run TestSchedRoundTrip)", l.Sched)
	}
	if l, err := Parse(schedBase + "sched script\nsched delay 1 1ms\nend\n"); err != nil || l.Sched.Script.Delays[0].By != time.Millisecond {
		t.Fatalf("sched delay 1 1ms: %v (repro: go test ./fuzz/workload -run TestSchedRoundTrip)", err)
	}
}

// TestSchedErrors: every malformed sched line is one error naming its line.
func TestSchedErrors(t *testing.T) {
	for _, c := range []struct{ lines, want string }{
		{"sched\n", "sched takes"},
		{"sched fair\n", `unknown sched line "fair"`},
		{"sched pct depth=0\n", "depth=\"0\""},
		{"sched pct depth=65\n", "from 1 to 64"},
		{"sched pct width=3\n", `unknown setting "width=3"`},
		{"sched random extra\n", "takes no settings"},
		{"sched pct\nsched script\n", "not with a sched policy line"},
		{"sched script\nsched pct\n", "already has a sched policy or script"},
		{"sched script\nsched script\n", "once"},
		{"sched pick 3 1\n", "before the sched script line"},
		{"sched script\nsched pick 3 0\n", "rank from 1"},
		{"sched script\nsched pick 3 1\nsched pick 3 2\n", "after the previous pick's"},
		{"sched script\nsched delay 2 0s\n", "from 1ns to 1h"},
		{"sched script\nsched delay 2 2h\n", "from 1ns to 1h"},
		{"sched script\nsched delay x 2ns\n", "want a trigger"},
		{"sched script\nsched coalesce 4\nsched coalesce 4\n", "after the previous coalesce's"},
		{"sched script\nsched pick 1\n", "want pick STEP RANK"},
	} {
		_, err := Parse(schedBase + c.lines + "end\n")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line ") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%q: got %v, want one line with %q and the line number (repro: go test ./fuzz/workload -run TestSchedErrors)", c.lines, err, c.want)
		}
	}
}
