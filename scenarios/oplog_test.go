package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/shrink"
	"github.com/storesim/storesim/fuzz/workload"
)

const oplogRepro = "(repro: go test ./scenarios -run 'TestFromOpLog')"

// shrunkLiesAboutAccess is what `storesim shrink --seed 0 --driver
// broken:LiesAboutAccess` writes: a fetch whose driver claims ENDED access
// before its late write.
const shrunkLiesAboutAccess = `storesim-oplog v1
seed 0
store durable
endpoint A driver=broken:LiesAboutAccess rows=3 absent-is-miss=false inflight=2 queued=29 unprovable=3 regions=A0:1x16
op at=919us publish A keys=k27 mask=1
op at=968us fetch A keys=k27 mask=1
op at=1037us shutdown A
`

func mustParse(t *testing.T, text string) *workload.Log {
	t.Helper()
	l, err := workload.Parse(text)
	if err != nil {
		t.Fatalf("%v %s", err, oplogRepro)
	}
	return l
}

// convertAndRun converts log, checks that the scenario passes as written,
// and returns it with the rules its run reported.
func convertAndRun(t *testing.T, log *workload.Log, repro string) (string, []rules.ID) {
	t.Helper()
	text, err := FromOpLog(log)
	if err != nil {
		t.Fatalf("FromOpLog: %v %s", err, repro)
	}
	res, err := Run("converted", text, Options{})
	if err != nil {
		t.Fatalf("the converted scenario does not run: %v\n%s\n%s", err, text, repro)
	}
	for _, m := range res.Failures {
		t.Errorf("the converted scenario does not pass as written: %v %s", m, repro)
	}
	if res.Output != text {
		t.Errorf("running the converted scenario again rewrites it %s", repro)
	}
	return text, res.Rules
}

// TestFromOpLog converts hand-written logs: every op becomes its command at
// its virtual time, and the file passes as written.
func TestFromOpLog(t *testing.T) {
	cases := []struct {
		name, log string
		want      []string   // lines the scenario must hold
		rules     []rules.ID // rules its run must report (nil: none)
	}{
		{
			name: "lies-about-access", log: shrunkLiesAboutAccess,
			want: []string{
				"store durable seed=0 wake-delay=2us coalesce=0",
				"endpoint A driver=broken:LiesAboutAccess rows=3 absent-is-miss=false inflight=2 queued=29 unprovable=3 regions=A0:1x16",
				"tick 919us", "publish A keys=k27 mask=1 as=op0", "tick 49us", "fetch A keys=k27 mask=1 as=op1",
				"tick 69us", "shutdown A", "stabilize", "check",
				"# Rules this run reports: D-ACCESS-END S-NO-LATE-ACCESS",
			},
			rules: []rules.ID{rules.DAccessEnd, rules.SNoLateAccess},
		},
		{
			name: "faults-evicting-two-endpoints",
			log: `storesim-oplog v1
seed 7
store evicting
endpoint A rows=2 regions=a0:4x16,a1:4x16
fault A fault row-fault rate=0.5
fault A fault late-write rate=0.25
endpoint B driver=memory absent-is-miss=false regions=b0:8x16
op at=0us publish A keys=x,y,x mask=101
op at=0us fetch B keys=x mask=1
op at=5us cancel 1
op at=5us fetch A keys=y,z mask=01
op at=40us shutdown B
op at=41us cancel 4
op at=41us shutdown B
op at=45us probe A concurrent-put
op at=50us shutdown A
op at=60us probe B after-shutdown
`,
			want: []string{
				"store evicting seed=7 wake-delay=", "evict-chance=0.05",
				"endpoint A driver=memory rows=2 absent-is-miss=true inflight=4 queued=16 unprovable=8 regions=a0:4x16,a1:4x16 faults=row-fault:0.5,late-write:0.25",
				"endpoint B driver=memory rows=4 absent-is-miss=false",
				"publish A keys=x,y,x mask=101 as=op0", "fetch B keys=x mask=1 as=op1", "tick 5us", "cancel op1",
				"fetch A keys=y,z mask=01 as=op3", "tick 35us", "shutdown B",
				"# op 5 cancels op 4, a shutdown: nothing to cancel",
				"# op 6 shuts B down again: the harness ignores it",
				"# op 7 is a driver probe (concurrent-put on A): not in the scenario language",
				"tick 5us", "shutdown A",
				"# op 9 is a driver probe (after-shutdown on B): not in the scenario language",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repro := "(repro: go test ./scenarios -run 'TestFromOpLog/" + c.name + "')"
			log := mustParse(t, c.log)
			text, rules := convertAndRun(t, log, repro)
			lines := strings.Split(text, "\n")
			for _, w := range c.want {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) || strings.Contains(l, " "+w) }) {
					t.Errorf("no line %q in the scenario:\n%s\n%s", w, text, repro)
				}
			}
			if !slices.Equal(rules, c.rules) {
				t.Errorf("rules reported %v, want %v\n%s\n%s", rules, c.rules, text, repro)
			}
			// The same file on the reference driver reports nothing: the rule
			// is the broken driver's, not the conversion's.
			res, err := Run("converted", text, Options{Driver: "memory"})
			if err != nil || len(res.Rules) > 0 {
				t.Errorf("on the memory driver: err %v, rules %v, want none %s", err, res.Rules, repro)
			}
		})
	}
}

// TestFromOpLogShrunk runs the pipeline of `storesim shrink --scenario`:
// a failing seed of a broken driver, shrunk, converted; the scenario passes
// as written, its check names the rule the harness found, and on the
// memory driver it reports nothing.
func TestFromOpLogShrunk(t *testing.T) {
	cases := []struct {
		driver string
		seed   uint64
		rule   rules.ID
	}{
		{"broken:LiesAboutAccess", 0, rules.DAccessEnd},
		{"broken:CancelClaimsEnded", 0, rules.DCan2},
		{"broken:OutsideSlot", 0, rules.DSub6},
		{"broken:TornPublish", 0, rules.SLin},
		{"broken:SilentShutdown", 0, rules.DShut1},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.driver, "broken:"), func(t *testing.T) {
			repro := "(repro: go test ./scenarios -run 'TestFromOpLogShrunk/" + strings.TrimPrefix(c.driver, "broken:") + "')"
			cfg := engine.Config{Driver: c.driver}
			res, err := shrink.Shrink(engine.Plan(c.seed, cfg), shrink.Options{Config: cfg, MaxRuns: 500})
			if err != nil {
				t.Fatalf("shrink seed %d: %v %s", c.seed, err, repro)
			}
			if res.Rule != c.rule {
				t.Fatalf("harness rule %s, want %s %s", res.Rule, c.rule, repro)
			}
			text, got := convertAndRun(t, res.Log, repro)
			if !slices.Contains(got, c.rule) {
				t.Errorf("the scenario reports %v, not %s:\n%s\n%s", got, c.rule, text, repro)
			}
			_, check, _ := strings.Cut(text, "\ncheck\n----\n")
			named := slices.ContainsFunc(strings.Split(check, "\n"), func(l string) bool {
				f := strings.Fields(l) // "EP RULE …" or, for S-LIN, "RULE …"
				return len(f) > 1 && (f[0] == c.rule.String() || f[1] == c.rule.String())
			})
			if !named {
				t.Errorf("check output does not name %s:\n%s\n%s", c.rule, check, repro)
			}
			mem, err := Run("converted", text, Options{Driver: "memory"})
			if err != nil || len(mem.Rules) > 0 {
				t.Errorf("on the memory driver: err %v, rules %v, want none %s", err, mem.Rules, repro)
			}
		})
	}
}

// TestFromOpLogGenerated converts whole generated workloads (faults on,
// durable and evicting) on the memory driver: each runs clean and passes
// as written.
func TestFromOpLogGenerated(t *testing.T) {
	for _, p := range []engine.Profile{engine.Default, engine.Evicting} {
		for seed := range uint64(6) {
			t.Run(string(p)+"/"+time.Duration(seed).String(), func(t *testing.T) {
				repro := "(repro: go test ./scenarios -run 'TestFromOpLogGenerated/" + string(p) + "')"
				log := engine.Plan(seed, engine.Config{Profile: p, Ops: 40})
				text, rules := convertAndRun(t, log, repro)
				if len(rules) > 0 {
					t.Errorf("seed %d on the memory driver reports %v:\n%s\n%s", seed, rules, text, repro)
				}
			})
		}
	}
}

// TestFromOpLogErrors: a log the language cannot state is an error wrapping
// ErrUnconvertible, never a panic or a broken file.
func TestFromOpLogErrors(t *testing.T) {
	ep := workload.Endpoint{Name: "A", Driver: "memory", MaxRows: 4, AbsentIsMiss: true, InFlight: 4, Queued: 16, Unprovable: 8,
		Regions: []workload.RegionSpec{{Label: "r0", Slots: 4, SlotBytes: 16}}}
	with := func(f func(l *workload.Log)) *workload.Log {
		l := &workload.Log{Store: "durable", Endpoints: []workload.Endpoint{ep},
			Ops: []workload.Op{{Kind: workload.Publish, Endpoint: "A", Keys: []string{"k"}, Mask: []bool{true}}}}
		f(l)
		return l
	}
	cases := []struct {
		name string
		log  *workload.Log
		want string
	}{
		{"nil", nil, "nil log"},
		{"endpoint-name", with(func(l *workload.Log) { l.Endpoints[0].Name = "A/B"; l.Ops = nil }), `endpoint name "A/B"`},
		{"fault-line", with(func(l *workload.Log) { l.Endpoints[0].Faults = []string{"row-fault:0.5"} }), `fault line "row-fault:0.5"`},
		{"no-regions", with(func(l *workload.Log) { l.Endpoints[0].Regions = nil }), "no regions"},
		{"store", with(func(l *workload.Log) { l.Store = "flaky" }), `store "flaky"`},
		{"key-comma", with(func(l *workload.Log) { l.Ops[0].Keys = []string{"a,b"} }), `key "a,b"`},
		{"mask", with(func(l *workload.Log) { l.Ops[0].Mask = nil }), "0 mask bits"},
		{"undeclared", with(func(l *workload.Log) { l.Ops[0].Endpoint = "Z" }), `undeclared endpoint "Z"`},
		{"cancel-forward", with(func(l *workload.Log) { l.Ops = append(l.Ops, workload.Op{Kind: workload.Cancel, Target: 1}) }), "not an earlier op"},
		{"time-backwards", with(func(l *workload.Log) {
			l.Ops[0].At = time.Millisecond
			l.Ops = append(l.Ops, workload.Op{Kind: workload.Shutdown, Endpoint: "A"})
		}), "goes back"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromOpLog(c.log)
			if !errors.Is(err, ErrUnconvertible) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrUnconvertible naming %q (repro: go test ./scenarios -run 'TestFromOpLogErrors/%s')", err, c.want, c.name)
			}
		})
	}
}
