package procdriver_test

import (
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/procdriver"
	"github.com/storesim/storesim/drivers/procdriver/proctest"
)

func tally(rep drivertest.Report) (passed, skipped int) {
	for _, rr := range rep.Rules {
		switch rr.Verdict {
		case drivertest.Pass:
			passed++
		case drivertest.Skip:
			skipped++
		}
	}
	return passed, skipped
}

// TestCertifyReference certifies the Python reference driver
// (python/reference_driver.py) across the process boundary, in real time,
// with the same monitor, oracles and model as any driver: it must be
// certified (no rule failed, no gap, no incident).
func TestCertifyReference(t *testing.T) {
	rig := proctest.New(procdriver.Config{Command: refCmd(t)})
	start := time.Now()
	rep := rig.Certify("exec:python3 python/reference_driver.py", drivertest.Options{Short: true})
	passed, skipped := tally(rep)
	t.Logf("\n%s", rep.Table())
	t.Logf("certified=%v in %v: %d rule groups passed, %d skipped, %d failed; %d processes, %d keys made absent",
		rep.Certified, time.Since(start).Round(time.Millisecond), passed, skipped, len(rep.Failed()), rig.Started(), rig.Deleted())
	if !rep.Certified || rig.Deleted() == 0 {
		t.Fatalf("the Python reference driver is not certified: failed %v, gaps %v:\n%s%s", rep.Failed(), rep.Gaps, rep.Table(), repro(t))
	}
}

// brokenDrivers are python/storesim_driver/broken.py's BROKEN: each must
// fail certification on its rule.
var brokenDrivers = []struct {
	name, rule string
	also       []string // more groups to run, whose cases provoke it
}{
	{"LateWriteAfterEnded", "D-ACCESS-END", nil},
	{"TouchesOnMiss", "D-STATUS", nil},
	// A touch of an unregistered region is S-NO-LATE-ACCESS, which the
	// suite counts against D-ACCESS-END; D-REG-6's cases unregister regions
	// after a call on them.
	{"WritesAfterUnregister", "D-ACCESS-END", []string{"D-REG-6"}},
	{"MissAsFault", "D-MISS-HONEST", nil},
	{"AcceptsRepeatedKey", "D-BATCH-KEYS", nil},
	{"LostNotification", "D-CB-2", nil},
	{"UnregistersBusy", "D-REG-6", nil},
	{"DrainLies", "D-DRAIN-1", nil},
	{"RegressingResult", "D-CB-3", nil},
}

// TestBrokenCertify shows that certification fails each broken Python
// driver on its rule, across the process boundary.
func TestBrokenCertify(t *testing.T) {
	for _, b := range brokenDrivers {
		t.Run(b.name, func(t *testing.T) {
			rig := proctest.New(procdriver.Config{Command: brokenCmd(t, b.name)})
			rep := rig.Certify("exec:python3 python/broken_driver.py "+b.name, drivertest.Options{Short: true, Rules: append([]string{b.rule}, b.also...)})
			rr, _ := rep.Rule(b.rule)
			first := ""
			if len(rr.Violations) > 0 {
				first = rr.Violations[0]
			}
			t.Logf("%s: %s %s, %d violation(s); first: %s", b.name, b.rule, rr.Verdict, rr.Found, first)
			if !slices.Contains(rep.Failed(), b.rule) {
				t.Fatalf("broken Python driver %s: want %s failed, got failed %v:\n%s(repro: go test ./drivers/procdriver -run '^TestBrokenCertify$/^%s$' -v)", b.name, b.rule, rep.Failed(), rep.Table(), b.name)
			}
			if len(rig.Incidents()) > 0 {
				t.Fatalf("broken Python driver %s: unexpected incidents %v (repro: go test ./drivers/procdriver -run '^TestBrokenCertify$/^%s$' -v)", b.name, rig.Incidents(), b.name)
			}
		})
	}
}
