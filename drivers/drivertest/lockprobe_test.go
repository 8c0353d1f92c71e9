package drivertest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// hideProbes wraps a harness's drivers so that only the drivers.Driver
// methods show: no monitor.LockProber (nor Live, Bound, Faults, …), as a
// third-party driver that implements none of the optional probes.
func hideProbes(h Harness) Harness {
	inner := h.New
	h.Name += "(no probes)"
	h.New = func(env Env) (drivers.Driver, error) {
		d, err := inner(env)
		if err != nil {
			return nil, err
		}
		return struct{ drivers.Driver }{d}, nil
	}
	return h
}

// TestLockProbeWithoutProber: a simulated driver that offers no LockProber
// is judged for D-CB-4 by simprobe, which decides by what the read does,
// not by how long it takes. A driver that really calls back under its lock
// (broken:SignalUnderLock, its Locked hidden) fails D-CB-4 with a message
// naming what was observed, and the certification ends (the swarm, whose
// monitor would deadlock on such a driver, is not run); the reference
// driver passes; and each verdict is the same, byte for byte, every time
// (loaded machine or not).
func TestLockProbeWithoutProber(t *testing.T) {
	opts := Options{Short: true}
	var first []byte
	for run := range 3 {
		rep := Certify(hideProbes(Registered("broken:SignalUnderLock")), opts)
		rr, _ := rep.Rule("D-CB-4")
		if rr.Verdict != Fail || !slices.ContainsFunc(rr.Violations, func(v string) bool { return strings.Contains(v, "parked in sync.Mutex.Lock") }) {
			t.Fatalf("run %d: SignalUnderLock without LockProber: D-CB-4 %s %v, want fail naming the parked read:\n%s(repro: %s)", run, rr.Verdict, rr.Violations, rep.Table(), reproOf(t))
		}
		if rep.Swarm.Runs != 0 || !strings.Contains(rep.Swarm.Note, "D-CB-4 failed") {
			t.Fatalf("run %d: swarm %+v, want not run because D-CB-4 failed (repro: %s)", run, rep.Swarm, reproOf(t))
		}
		b, _ := json.Marshal(rep)
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("run %d: the certificate differs from run 0:\n%s\n%s\n(repro: %s)", run, b, first, reproOf(t))
		}
		good := Certify(hideProbes(Registered("memory")), opts)
		if rr, _ := good.Rule("D-CB-4"); rr.Verdict != Pass || len(good.Gaps) > 0 || good.Swarm.Runs == 0 {
			t.Fatalf("run %d: memory without LockProber: D-CB-4 %s, gaps %v, want pass:\n%s(repro: %s)", run, rr.Verdict, good.Gaps, good.Table(), reproOf(t))
		}
	}
}
