package procdriver_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/procdriver"
	"github.com/storesim/storesim/drivers/procdriver/proctest"
)

// incidentRules are the rule groups the incident certifications run: a
// few, with calls in flight, so that the incident lands mid-case.
var incidentRules = []string{"D-STATUS", "D-ACCESS-END", "D-CAN-2", "D-SHUT-1"}

// checkIncidentReport: the certification went on to the end (every
// selected group has a verdict), exactly one incident of kind was reported
// (once, as it happened, and once in the report's gaps), its process is
// gone, and the report is not certified.
func checkIncidentReport(t *testing.T, rig *proctest.Rig, rep drivertest.Report, reported []procdriver.Incident, kind procdriver.IncidentKind, want ...string) {
	t.Helper()
	t.Logf("\n%s", rep.Table())
	if len(reported) != 1 || len(rig.Incidents()) != 1 {
		t.Fatalf("%d incidents reported as they happened, %d kept, want exactly 1: %v %s", len(reported), len(rig.Incidents()), reported, repro(t))
	}
	in := reported[0]
	line := in.String()
	t.Logf("incident: %s", line)
	if in.Kind != kind {
		t.Errorf("incident kind %s, want %s: %s %s", in.Kind, kind, line, repro(t))
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("the incident does not say %q: %s %s", w, line, repro(t))
		}
	}
	if err := syscall.Kill(in.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists (kill 0: %v) %s", in.PID, err, repro(t))
	}
	for _, g := range incidentRules {
		if rr, ok := rep.Rule(g); !ok || rr.Verdict == "" || rr.Cases == 0 {
			t.Errorf("rule group %s did not run to a verdict after the incident (%+v): the certification must go on %s", g, rr, repro(t))
		}
	}
	if rep.Certified || !strings.Contains(strings.Join(rep.Gaps, "\n"), line) {
		t.Errorf("a certification with an incident must not be certified and must name it in its gaps: certified=%v gaps=%v %s", rep.Certified, rep.Gaps, repro(t))
	}
	if rig.Started() < 3 {
		t.Errorf("only %d processes were started: the certification did not go on after the incident %s", rig.Started(), repro(t))
	}
	if left := children(); len(left) > 0 {
		t.Errorf("processes left behind: %v %s", left, repro(t))
	}
}

// TestCertifyKilledChild kills the reference driver's process from
// outside (SIGKILL by pid) in the middle of a case — right after the 12th
// key the suite made absent through it — and certifies on: the death is
// reported once, the calls it had in flight end, and every later case runs
// on a fresh process.
func TestCertifyKilledChild(t *testing.T) {
	var got incidents
	rig := proctest.New(procdriver.Config{Command: refCmd(t)})
	rig.OnIncident = got.add
	h := rig.Harness("exec:python3 python/reference_driver.py")
	makeAbsent, n, killed := h.MakeAbsent, 0, 0
	h.MakeAbsent = func(key string) error {
		err := makeAbsent(key)
		if n++; n == 12 {
			killed = rig.Current().PID()
			syscall.Kill(killed, syscall.SIGKILL)
		}
		return err
	}
	rep := drivertest.Certify(h, drivertest.Options{Short: true, Rules: incidentRules})
	rig.Report(&rep)
	if killed == 0 {
		t.Fatalf("the certification made only %d keys absent: nothing was killed %s", n, repro(t))
	}
	checkIncidentReport(t, rig, rep, got.list(), procdriver.Died, "died", "signal: killed", "(pid ")
	if got.list()[0].PID != killed {
		t.Errorf("the incident names pid %d, the test killed %d %s", got.list()[0].PID, killed, repro(t))
	}
}

// TestCertifyHangingChild: one process of the certification (the first
// to reach its 8th request) stops answering; it is reported Hung once,
// killed, and the certification goes on.
func TestCertifyHangingChild(t *testing.T) {
	var got incidents
	once := filepath.Join(t.TempDir(), "once")
	rig := proctest.New(procdriver.Config{Command: brokenCmd(t, "Hang", "--after", "8", "--once", once), ReplyTimeout: 500 * time.Millisecond})
	rig.OnIncident = got.add
	rep := rig.Certify("exec:python3 python/broken_driver.py Hang", drivertest.Options{Short: true, Rules: incidentRules})
	checkIncidentReport(t, rig, rep, got.list(), procdriver.Hung, "hung during", "no answer within 500ms", "killed by its pid", "stops answering at request 8")
}

// TestCertifyGarbageChild: one process of the certification writes a line
// that is not a protocol message; it is reported once, killed, and the
// certification goes on.
func TestCertifyGarbageChild(t *testing.T) {
	var got incidents
	once := filepath.Join(t.TempDir(), "once")
	rig := proctest.New(procdriver.Config{Command: brokenCmd(t, "Garbage", "--after", "8", "--once", once)})
	rig.OnIncident = got.add
	rep := rig.Certify("exec:python3 python/broken_driver.py Garbage", drivertest.Options{Short: true, Rules: incidentRules})
	checkIncidentReport(t, rig, rep, got.list(), procdriver.Garbage, "garbage during line", "not a protocol message", `"this is not JSON"`, "killed by its pid")
}
