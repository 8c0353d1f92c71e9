package scenarios

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/registry"
)

// brokenCases maps a scenario that exercises a rule to the broken driver
// of SPEC §7 that breaks it and the rule id the run must then report. The
// rule is what the checks name (the memory oracle reports a late touch as
// D-ACCESS-END, the store model a wrong object as S-LIN).
var brokenCases = []struct {
	file, driver string
	rule         rules.ID
}{
	{"late_write", "broken:LiesAboutAccess", rules.DAccessEnd},
	{"unprovable_shutdown", "broken:ForgetsUnprovable", rules.DAccessEnd},
	{"cancel_racing_completion", "broken:CancelClaimsEnded", rules.DCan2},
	{"end_to_end", "broken:MissAsFault", rules.DMissHonest},
	{"size_mismatch", "broken:FaultAsMiss", rules.DMissHonest},
	{"lookup_outage", "broken:LookupOutageAsAbsent", rules.DLook2},
	{"end_to_end", "broken:TouchesOnMiss", rules.DStatus},
	{"size_mismatch", "broken:ShortReadOK", rules.SLin},
	{"end_to_end", "broken:ShortAnswer", rules.DStatus},
	{"end_to_end", "broken:ReorderedAnswer", rules.DStatus},
	{"two_backends", "broken:OverwritesOnPublish", rules.SLin},
	{"publish_visible_whole", "broken:TornPublish", rules.SLin},
	{"repeated_key", "broken:AcceptsRepeatedKey", rules.DBatchKeys},
	{"cut_max_rows", "broken:MaxRowsOffByOne", rules.DCaps},
	{"end_to_end", "broken:OutsideSlot", rules.DSub6},
	{"register_overlap", "broken:AcceptsOverlap", rules.DReg1},
	{"register_fail_at_k", "broken:LeakyRegisterFailure", rules.DTog1},
	{"stale_handle_close", "broken:CloseByAddress", rules.DReg3},
	{"unregister_retry", "broken:UnregisterLies", rules.DReg4},
	{"register_refused", "broken:RegistersAfterShutdown", rules.DReg5},
	{"stale_handle_close", "broken:UnregistersBusy", rules.DReg6},
	{"end_to_end", "broken:LostWakeup", rules.DCB2},
	{"end_to_end", "broken:EarlySignal", rules.DCB1},
	{"end_to_end", "broken:SignalUnderLock", rules.DCB4},
	{"shutdown_in_flight", "broken:SignalAfterShutdown", rules.DCB5},
	{"two_backends", "broken:RegressingResult", rules.DCB3},
	{"cancel_racing_completion", "broken:BlockingCancel", rules.DCan1},
	{"drain_last_callback", "broken:DrainLies", rules.DDrain1},
	{"unprovable_shutdown", "broken:SilentShutdown", rules.DShut1},
	{"repeated_key", "broken:BatchKeyedByKey", rules.DBatchKeys},
	{"repeated_key", "broken:ConcurrentPutTruncates", rules.SLin},
	{"end_to_end", "broken:NotFoundAsError", rules.DMissHonest},
	{"evict_mid_fetch", "broken:LeaseExpiredRead", rules.SLin},
	{"end_to_end", "broken:EmptyGetOK", rules.SLin},
	{"register_fail_at_k", "broken:NoTogetherRollback", rules.DTog1},
	{"register_overlap", "broken:DoubleRegistration", rules.DReg1},
}

// TestBrokenDriversFail: every scenario in brokenCases passes with the
// reference drivers without a single violation, and with the broken
// driver for its rule it differs from its expected output and reports
// that rule.
func TestBrokenDriversFail(t *testing.T) {
	known := registry.Names()
	ran := 0
	for _, tc := range brokenCases {
		t.Run(tc.file+"/"+tc.driver, func(t *testing.T) {
			repro := "(repro: go test ./scenarios -run 'TestBrokenDriversFail/" + tc.file + "/" + tc.driver + "')"
			if !slices.Contains(known, tc.driver) {
				t.Skipf("driver %s is not in the registry yet", tc.driver)
			}
			path := filepath.Join("testdata", tc.file+Ext)
			ref, err := RunFile(path, Options{})
			if err != nil || !ref.Passed() || len(ref.Rules) > 0 {
				t.Fatalf("reference run: err %v, %d mismatches, rules %v; want a clean pass %s", err, len(ref.Failures), ref.Rules, repro)
			}
			res, err := RunFile(path, Options{Driver: tc.driver})
			var se *Error
			if errors.As(err, &se) {
				t.Fatalf("with %s the file no longer runs: %v %s", tc.driver, err, repro)
			}
			if res.Passed() {
				t.Errorf("with %s the scenario still prints its expected output %s", tc.driver, repro)
			}
			if !slices.Contains(res.Rules, tc.rule) {
				t.Errorf("with %s the run reported %v, want %s among them %s", tc.driver, res.Rules, tc.rule, repro)
			}
			var fired []rules.ID
			for _, m := range res.Failures {
				fired = append(fired, m.Fired()...)
			}
			if !slices.Contains(fired, tc.rule) {
				t.Errorf("with %s no mismatch names %s as the rule that fired (named: %v) %s", tc.driver, tc.rule, fired, repro)
			}
			ran++
		})
	}
	if ran < 10 {
		t.Errorf("only %d broken-driver scenarios ran, want at least 10 (repro: go test ./scenarios -run TestBrokenDriversFail)", ran)
	}
}
