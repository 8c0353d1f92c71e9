package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
)

// probeLog is a small log: one endpoint on driver, a publish and a fetch
// of the backend's own, the probe, the shutdown (and an after-shutdown
// probe after it).
func probeLog(t *testing.T, driver string, kind workload.ProbeKind, store, faults string, seed uint64) *workload.Log {
	t.Helper()
	probe := fmt.Sprintf("op at=30us probe A %s\nop at=400us shutdown A\n", kind)
	if kind == workload.ProbeAfterShutdown {
		probe = fmt.Sprintf("op at=400us shutdown A\nop at=401us probe A %s\n", kind)
	}
	text := fmt.Sprintf(`storesim-oplog v1
seed %d
store %s
endpoint A driver=%s rows=4 absent-is-miss=true regions=A0:16x32
%sop at=0us publish A keys=k1,k2 mask=11
op at=20us fetch A keys=k1 mask=1
%s`, seed, store, driver, faults, probe)
	l, err := workload.Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return l
}

// probeCases: each probe, the broken drivers of SPEC §7 whose situation it
// creates, and the rule they must then fail.
var probeCases = []struct {
	kind   workload.ProbeKind
	driver string
	rule   rules.ID // or alt
	alt    rules.ID
	store  string
}{
	{workload.ProbeOverlap, "broken:AcceptsOverlap", rules.DReg1, 0, "durable"},
	{workload.ProbeRepeatedKey, "broken:AcceptsRepeatedKey", rules.DBatchKeys, 0, "durable"},
	{workload.ProbeStaleClose, "broken:CloseByAddress", rules.DReg3, 0, "durable"},
	{workload.ProbeAfterShutdown, "broken:RegistersAfterShutdown", rules.DReg5, 0, "durable"},
	{workload.ProbeSizeMismatch, "broken:ShortReadOK", rules.DStatus, 0, "durable"},
	{workload.ProbeBusyClose, "broken:UnregistersBusy", rules.DReg6, 0, "durable"},
	{workload.ProbeAbsentFetch, "broken:MissAsFault", rules.DMissHonest, 0, "durable"},
	{workload.ProbeConcurrentPut, "broken:TornPublish", rules.DSub5, rules.DSub4, "durable"},
	{workload.ProbeConcurrentPut, "broken:OverwritesOnPublish", rules.DSub4, 0, "durable"},
	{workload.ProbeEvictDuringFetch, "", 0, 0, "evicting"},
}

// TestProbes: every probe makes its broken driver fail its rule on every
// seed tried, and the reference drivers pass the very same log, calm and
// under a fault mix that hits every call the backend makes.
func TestProbes(t *testing.T) {
	faults := "fault A fault row-fault rate=0.3\nfault A fault error-after rate=0.5\nfault A fault submit-reject rate=0.3\nfault A fault never-ends rate=0.2\nfault A fault unregister-fail rate=0.5\nfault A fault evict rate=0.2\n"
	for _, c := range probeCases {
		name := string(c.kind) + "/" + strings.TrimPrefix(c.driver, "broken:")
		t.Run(name, func(t *testing.T) {
			repro := fmt.Sprintf("(repro: go test ./fuzz/engine -run 'TestProbes/%s')", name)
			for seed := range uint64(16) {
				if c.driver != "" {
					res := Run(probeLog(t, c.driver, c.kind, c.store, "", seed), Config{})
					if !slices.ContainsFunc(res.Failures, func(v rules.Violation) bool { return v.Rule == c.rule || v.Rule == c.alt && c.alt != 0 }) {
						var b strings.Builder
						res.WriteReport(&b)
						t.Fatalf("seed %d: the %s probe did not catch %s on %s:\n%s\n%s", seed, c.kind, c.driver, c.rule, b.String(), repro)
					}
				}
				for _, drv := range []string{"memory", "together"} {
					for _, f := range []string{"", faults} {
						res := Run(probeLog(t, drv, c.kind, c.store, f, seed), Config{})
						if res.Verdict != Pass {
							var b strings.Builder
							res.WriteReport(&b)
							t.Fatalf("seed %d: %s fails the %s probe (faults %q):\n%s\n%s", seed, drv, c.kind, f, b.String(), repro)
						}
					}
				}
			}
		})
	}
}

// TestProbesNeedTheSimulator: a probe the driver cannot take says why, in
// the skipped count, instead of failing.
func TestProbeSkips(t *testing.T) {
	l := probeLog(t, "memory", workload.ProbeEvictDuringFetch, "durable", "", 1)
	res := Run(l, Config{})
	if res.Verdict != Pass || res.Skipped == 0 {
		t.Fatalf("an evict-during-fetch probe on a durable store: %s, %d skipped; want a pass with the probe skipped (repro: go test ./fuzz/engine -run TestProbeSkips)", res.Summary(), res.Skipped)
	}
}
