package procdriver_test

import (
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
