package scenarios

import (
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// TestFromOpLogSchedule: a log whose sched script has no decision left is
// stated exactly (order=fifo); one with decisions lists them in the header
// as what the language cannot state; a PCT log says the scenario runs the
// random policy. Each converted file passes as written.
func TestFromOpLogSchedule(t *testing.T) {
	const repro = "(repro: go test ./scenarios -run TestFromOpLogSchedule)"
	base := engine.Plan(3, engine.Config{Ops: 20})
	for _, c := range []struct {
		sched workload.Sched
		want  []string
	}{
		{workload.Sched{Script: &sim.Schedule{}}, []string{"order=fifo states it", "store durable seed=3 order=fifo"}},
		{workload.Sched{Script: &sim.Schedule{Picks: []sim.Pick{{Step: 4, Rank: 1}}, Delays: []sim.Delay{{Wake: 2, By: 7}}}},
			[]string{"2 non-default decisions, which the scenario", "language cannot state", "#   sched pick 4 1", "#   sched delay 2 7ns", "order=fifo"}},
		{workload.Sched{Policy: sim.PCT, Depth: 2}, []string{"ran under PCT (sched pct depth=2)", "wake-delay="}},
	} {
		log := *base
		log.Store, log.Sched = "durable", c.sched
		text, _ := convertAndRun(t, &log, repro)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%+v: the scenario lacks %q:\n%s %s", c.sched, w, text, repro)
			}
		}
	}
}

// TestStoreOrderFIFO: order=fifo is printed on the store line, and a
// callback delay or coalescing, which it excludes, or another order is one
// error.
func TestStoreOrderFIFO(t *testing.T) {
	const repro = "(repro: go test ./scenarios -run TestStoreOrderFIFO)"
	file := func(seed string) string {
		return "store durable seed=" + seed + " order=fifo\n----\n\nendpoint A\n----\n\npublish A keys=a,b,c as=p\n----\n\nstabilize\n----\n\ncheck\n----\n"
	}
	a, err := Run("a", file("1"), Options{Rewrite: true})
	if err != nil {
		t.Fatalf("%v %s", err, repro)
	}
	if !strings.Contains(a.Output, "order=fifo") {
		t.Fatalf("the store line does not say order=fifo:\n%s %s", a.Output, repro)
	}
	for _, c := range []struct{ line, want string }{
		{"store durable order=fifo wake-delay=5us", "order=fifo is the default schedule"},
		{"store durable order=lifo", "seed or fifo"},
	} {
		r, err := Run("bad", c.line+"\n----\n\n", Options{Rewrite: true})
		if !strings.Contains(r.Output+errText(err), c.want) {
			t.Errorf("%q: %v\n%s\nwant %q %s", c.line, err, r.Output, c.want, repro)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
