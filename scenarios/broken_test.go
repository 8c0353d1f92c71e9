package scenarios

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/storesim/storesim/fuzz/registry"
)

// brokenCases maps a scenario that exercises a rule to the broken driver
// of SPEC §7 that breaks it and the rule id the run must then report. The
// rule is what the checks name (the memory oracle reports a late touch as
// D-ACCESS-END, the store model a wrong object as S-LIN).
var brokenCases = []struct {
	file, driver, rule string
}{
	{"late_write", "broken:LiesAboutAccess", "D-ACCESS-END"},
	{"unprovable_shutdown", "broken:ForgetsUnprovable", "D-ACCESS-END"},
	{"cancel_racing_completion", "broken:CancelClaimsEnded", "D-CAN-2"},
	{"end_to_end", "broken:MissAsFault", "D-MISS-HONEST"},
	{"size_mismatch", "broken:FaultAsMiss", "D-MISS-HONEST"},
	{"lookup_outage", "broken:LookupOutageAsAbsent", "D-LOOK-2"},
	{"end_to_end", "broken:TouchesOnMiss", "D-STATUS"},
	{"size_mismatch", "broken:ShortReadOK", "S-LIN"},
	{"end_to_end", "broken:ShortAnswer", "D-STATUS"},
	{"end_to_end", "broken:ReorderedAnswer", "D-STATUS"},
	{"two_backends", "broken:OverwritesOnPublish", "S-LIN"},
	{"publish_visible_whole", "broken:TornPublish", "S-LIN"},
	{"repeated_key", "broken:AcceptsRepeatedKey", "D-BATCH-KEYS"},
	{"cut_max_rows", "broken:MaxRowsOffByOne", "capabilities"},
	{"end_to_end", "broken:OutsideSlot", "D-SUB-6"},
	{"register_overlap", "broken:AcceptsOverlap", "D-REG-1"},
	{"register_fail_at_k", "broken:LeakyRegisterFailure", "D-TOG-1"},
	{"stale_handle_close", "broken:CloseByAddress", "D-REG-3"},
	{"unregister_retry", "broken:UnregisterLies", "D-REG-4"},
	{"register_refused", "broken:RegistersAfterShutdown", "D-REG-5"},
	{"stale_handle_close", "broken:UnregistersBusy", "D-REG-6"},
	{"end_to_end", "broken:LostWakeup", "D-CB-2"},
	{"end_to_end", "broken:EarlySignal", "D-CB-1"},
	{"end_to_end", "broken:SignalUnderLock", "D-CB-4"},
	{"shutdown_in_flight", "broken:SignalAfterShutdown", "D-CB-5"},
	{"two_backends", "broken:RegressingResult", "D-CB-3"},
	{"cancel_racing_completion", "broken:BlockingCancel", "D-CAN-1"},
	{"drain_last_callback", "broken:DrainLies", "D-DRAIN-1"},
	{"unprovable_shutdown", "broken:SilentShutdown", "D-SHUT-1"},
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
			ran++
		})
	}
	if ran < 10 {
		t.Errorf("only %d broken-driver scenarios ran, want at least 10 (repro: go test ./scenarios -run TestBrokenDriversFail)", ran)
	}
}
