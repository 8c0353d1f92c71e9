package machine_test

import (
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/machine"
)

// silent drops every change callback: lost wake-ups (D-CB-2).
type silent struct{ drivers.Driver }

func (s silent) Submit(b drivers.RowBatch, _ func()) (drivers.Call, error) {
	return s.Driver.Submit(b, func() {})
}

// endsEarly claims access ENDED as soon as every row has a result, while the
// transfers (a late RDMA write, an abandoned transfer) may still touch the
// slots: LiesAboutAccess of SPEC §7, cut from a wrapper.
type endsEarly struct{ drivers.Driver }

func (e endsEarly) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	c, err := e.Driver.Submit(b, onChange)
	if err != nil {
		return c, err
	}
	return &lyingCall{Call: c}, nil
}

type lyingCall struct {
	drivers.Call
	mu   sync.Mutex
	lied bool
}

func (c *lyingCall) Access() drivers.Access {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lied {
		return drivers.AccessEnded
	}
	a := c.Call.Access()
	if a != drivers.AccessPending {
		return a
	}
	for _, s := range c.Call.Results() {
		if s == drivers.Pending {
			return a
		}
	}
	c.lied = true
	return drivers.AccessEnded
}

// TestMachineCatchesPlantedBugs tests the tester: the state machine, run by
// rapid.Check exactly as TestBackendStateMachine runs it, fails on a driver
// with one planted bug and names the rule.
func TestMachineCatchesPlantedBugs(t *testing.T) {
	// rapid must not write fail files for failures this test expects, and
	// need not spend long shrinking them; the late-access plant needs a
	// late write or an abandoned transfer drawn, which takes a few hundred
	// checks.
	for name, v := range map[string]string{"rapid.nofailfile": "true", "rapid.shrinktime": "2s", "rapid.checks": "3000"} {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
		defer flag.Set(name, old)
	}
	cases := []struct {
		name  string
		wrap  func(drivers.Driver) drivers.Driver
		rules []string
	}{
		{"silent", func(d drivers.Driver) drivers.Driver { return silent{d} }, []string{"D-CB-2"}},
		{"ends-early", func(d drivers.Driver) drivers.Driver { return endsEarly{d} }, []string{"D-ACCESS-END", "S-NO-LATE-ACCESS"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordTB{name: "planted-" + c.name}
			rapid.Check(rec, property(machine.Options{Wrap: c.wrap}))
			out := rec.String()
			if !rec.failed {
				t.Fatalf("the state machine passed a driver with a planted %s bug (repro: go test ./fuzz/machine -run 'TestMachineCatchesPlantedBugs/%s')", c.name, c.name)
			}
			for _, rule := range c.rules {
				if strings.Contains(out, rule) {
					return
				}
			}
			t.Fatalf("the state machine failed on the planted %s bug but named none of %v:\n%s\n(repro: go test ./fuzz/machine -run 'TestMachineCatchesPlantedBugs/%s')", c.name, c.rules, out, c.name)
		})
	}
}

// recordTB is a rapid.TB that records a failure instead of failing the test.
type recordTB struct {
	name   string
	failed bool
	b      strings.Builder
}

func (r *recordTB) Helper()                      {}
func (r *recordTB) Name() string                 { return r.name }
func (r *recordTB) Logf(format string, a ...any) { fmt.Fprintf(&r.b, format+"\n", a...) }
func (r *recordTB) Log(a ...any)                 { fmt.Fprintln(&r.b, a...) }
func (r *recordTB) Skipf(format string, a ...any) {
	panic("recordTB: skip " + fmt.Sprintf(format, a...))
}
func (r *recordTB) Skip(a ...any) { panic("recordTB: skip " + fmt.Sprint(a...)) }
func (r *recordTB) SkipNow()      { panic("recordTB: skip") }
func (r *recordTB) Errorf(format string, a ...any) {
	r.failed = true
	r.Logf(format, a...)
}
func (r *recordTB) Error(a ...any) { r.failed = true; r.Log(a...) }
func (r *recordTB) Fatalf(format string, a ...any) {
	r.Errorf(format, a...)
}
func (r *recordTB) Fatal(a ...any) { r.Error(a...) }
func (r *recordTB) FailNow()       { r.failed = true }
func (r *recordTB) Fail()          { r.failed = true }
func (r *recordTB) Failed() bool   { return r.failed }
func (r *recordTB) String() string { return r.b.String() }
