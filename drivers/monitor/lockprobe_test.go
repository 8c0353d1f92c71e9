package monitor

import (
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// TestLockProbeVerdicts: what Options.LockProbe answers decides the
// judgement of every callback's read: returned is read and checked as
// usual, blocked is D-CB-4 with what the probe observed, undecided is no
// violation but is listed by Undecided.
func TestLockProbeVerdicts(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor -run TestLockProbeVerdicts)"
	for _, tc := range []struct {
		name      string
		answer    ProbeResult
		violation bool
		undecided bool
	}{
		{"returned", ProbeResult{}, false, false},
		{"returned-late", ProbeResult{Observed: "returned after 300ms, past the bound: late, not blocked"}, false, false},
		{"blocked", ProbeResult{Verdict: ReadBlocked, Observed: "parked in sync.Mutex.Lock"}, true, false},
		{"undecided", ProbeResult{Verdict: ReadUndecided, Observed: "neither returned nor parked"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1, bugs{}, envOpt{plain: true})
			probes := 0
			e.m.opts.LockProbe = func(read func()) ProbeResult {
				probes++
				if tc.answer.Verdict == ReadReturned {
					read()
				}
				return tc.answer
			}
			h := e.register(e.region("r", 4))
			e.submit(drivers.Fetch, h, 0, "a", "b")
			e.run()
			e.shutdown()
			vs := e.m.Finish()
			under := slices.ContainsFunc(vs, func(v rules.Violation) bool {
				return v.Rule == rules.DCB4 && strings.Contains(v.Detail, tc.answer.Observed)
			})
			if probes == 0 || under != tc.violation || (len(e.m.Undecided()) > 0) != tc.undecided {
				t.Fatalf("%d probes; violations %v, undecided %v; want D-CB-4 naming %q: %v, undecided: %v %s",
					probes, vs, e.m.Undecided(), tc.answer.Observed, tc.violation, tc.undecided, repro)
			}
			if tc.undecided && !strings.Contains(e.m.Undecided()[0], tc.answer.Observed) {
				t.Fatalf("undecided %q does not say what was observed %s", e.m.Undecided()[0], repro)
			}
			if !tc.violation && len(vs) > 0 {
				t.Fatalf("violations %v, want none %s", vs, repro)
			}
		})
	}
}
