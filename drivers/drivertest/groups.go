package drivertest

import (
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
)

// Fault mixes the cases ask for (Env.Faults). The simulator's drivers
// inject them; real drivers ignore them, and cases that need a fault to
// happen skip with the reason when it never does.
var (
	calm        = memdriver.FaultMix{}
	delays      = memdriver.FaultMix{Delay: 0.4}
	accessMix   = memdriver.FaultMix{ErrorAfter: 0.25, Timeout: 0.15, UnprovableLater: 0.25, WrongLength: 0.05, LateWrite: 0.3, Delay: 0.2}
	errorAfter  = memdriver.FaultMix{ErrorAfter: 1, Delay: 0.2}
	lateWrites  = memdriver.FaultMix{LateWrite: 0.5, Delay: 0.2, UnprovableLater: 0.1}
	callbackMix = memdriver.FaultMix{Delay: 0.3, LateWrite: 0.2, ErrorAfter: 0.1, Timeout: 0.1, UnprovableLater: 0.2, ErrorBefore: 0.05}
	rowFaults   = memdriver.FaultMix{RowFault: 0.5, ErrorBefore: 0.15, ErrorAfter: 0.15}
	rejects     = memdriver.FaultMix{SubmitReject: 0.4}
	swarmish    = memdriver.FaultMix{RowFault: 0.05, SubmitReject: 0.05, ErrorBefore: 0.05, ErrorAfter: 0.05, Delay: 0.2, LateWrite: 0.2, Timeout: 0.05, UnprovableLater: 0.1}
	neverEnds   = memdriver.FaultMix{NeverEnds: 1}
	regRefused  = memdriver.FaultMix{RegisterRefused: 0.5}
	closeFails  = memdriver.FaultMix{UnregisterFail: 0.5}
	stuck       = memdriver.FaultMix{UnregisterStuck: 1}
	togFail     = memdriver.FaultMix{TogetherFail: 1}
	inDoubt     = memdriver.FaultMix{TogetherFail: 1, RollbackFail: 1}
	lookupFails = memdriver.FaultMix{LookupError: 1}
	shutMix     = memdriver.FaultMix{UnregisterFail: 0.5, NeverEnds: 0.4, Delay: 0.3}
)

// atLeastRows asks for MaxRowsPerOp >= n (a simulated driver honours it).
func atLeastRows(n int) func(drivers.Capabilities) drivers.Capabilities {
	return func(c drivers.Capabilities) drivers.Capabilities {
		c.MaxRowsPerOp = max(c.MaxRowsPerOp, n)
		return c
	}
}

func absentIsMiss(c drivers.Capabilities) drivers.Capabilities {
	c.AbsentIsMiss = true
	return c
}

// allGroups is the suite: one group per rule, in report order, each with
// its directed cases. Every case also runs Options.Seeds randomized
// variants unless marked once.
func allGroups() []*group {
	return []*group{
		{rule: rules.DGeom, needs: always, cases: []caseDef{
			{name: "bad-geometry-refused", run: caseBadGeometry},
			{name: "together-bad-geometry", needs: needTogether, run: caseTogetherGeometry},
		}},
		{rule: rules.DBatchKeys, needs: always, cases: []caseDef{
			{name: "repeated-key-refused", caps: atLeastRows(4), run: caseRepeatedKey},
			{name: "repeated-key-across-calls", faults: delays, chases: []Pair{RepeatedKeyInFlight}, run: caseRepeatedKeyAcrossCalls},
		}},
		{rule: rules.DBatchValid, needs: always, cases: []caseDef{
			{name: "malformed-batches-refused", run: caseInvalidBatches},
			{name: "closed-handle-refused", run: caseStaleHandleSubmit},
		}},
		{rule: rules.DStatus, needs: needObjects, cases: []caseDef{
			{name: "fetch-present-ok", run: caseFetchPresent},
			{name: "fetch-absent-untouched", run: caseFetchAbsent},
			{name: "mixed-batch-in-order", caps: atLeastRows(4), run: caseMixedBatch},
			{name: "size-mismatch-not-ok", run: caseSizeMismatch},
			{name: "publish-ok-is-stored", needs: needPublish, run: casePublishOK},
			{name: "not-attempted-publish-never-stored", needs: needCancelPublish, run: caseNotAttemptedNeverStored},
		}},
		{rule: rules.DMissHonest, needs: needAbsent, cases: []caseDef{
			{name: "absent-is-miss", caps: absentIsMiss, run: caseAbsentIsMiss},
			{name: "fault-is-not-miss", faults: rowFaults, run: caseFaultIsNotMiss},
		}},
		{rule: rules.DAccess, needs: always, cases: []caseDef{
			{name: "transitions-under-faults", faults: accessMix, run: caseAccessTransitions},
			{name: "stopped-waiting-is-unprovable", faults: errorAfter, run: caseStoppedWaiting},
		}},
		{rule: rules.DAccessEnd, needs: always, cases: []caseDef{
			{name: "no-touch-after-ended", faults: lateWrites, run: caseNoTouchAfterEnded},
		}},
		{rule: rules.DReg1, needs: always, cases: []caseDef{
			{name: "overlap-refused", chases: []Pair{DuplicateRegistration}, run: caseOverlapRefused},
		}},
		{rule: rules.DReg2, needs: always, cases: []caseDef{
			{name: "store-refusal-leaves-nothing", faults: regRefused, run: caseRefusedLeavesNothing},
			{name: "geometry-refusal-leaves-nothing", once: true, run: caseGeometryRefusalLeavesNothing},
		}},
		{rule: rules.DReg3, needs: always, cases: []caseDef{
			{name: "stale-close-harmless", chases: []Pair{StaleHandleClose}, run: caseStaleClose},
		}},
		{rule: rules.DReg4, needs: always, cases: []caseDef{
			{name: "close-honest", faults: closeFails, run: caseCloseHonest},
		}},
		{rule: rules.DReg5, needs: always, cases: []caseDef{
			{name: "register-after-shutdown", run: caseRegisterAfterShutdown},
		}},
		{rule: rules.DReg6, needs: always, cases: []caseDef{
			{name: "busy-close-refused", faults: delays, chases: []Pair{UnregisterVsInFlight}, run: caseBusyClose},
			{name: "busy-until-shutdown", faults: neverEnds, run: caseBusyForever},
		}},
		{rule: rules.DTog1, needs: needTogether, cases: []caseDef{
			{name: "handles-in-order", run: caseTogetherSuccess},
			{name: "failure-leaves-nothing", faults: togFail, run: caseTogetherFailureLeavesNothing},
		}},
		{rule: rules.DTog2, needs: needTogether, cases: []caseDef{
			{name: "rollback-failure-in-doubt", faults: inDoubt, run: caseRollbackInDoubt},
		}},
		{rule: rules.DTog3, needs: needTogether, cases: []caseDef{
			{name: "partial-unregister-named", faults: closeFails, run: caseUnregisterTogetherPartial},
		}},
		{rule: rules.DTog4, needs: needTogether, cases: []caseDef{
			{name: "busy-region-stays", faults: delays, chases: []Pair{UnregisterVsInFlight}, run: caseTogetherBusy},
		}},
		{rule: rules.DQuar, needs: needTogether, cases: []caseDef{
			{name: "in-doubt-quarantines", faults: inDoubt, run: caseQuarantine},
		}},
		{rule: rules.DLook1, needs: always, cases: []caseDef{
			{name: "one-bool-per-key", run: caseLookupShape},
			{name: "full-size-with-absent", needs: needLookupTruth, run: caseFullLookupWithAbsent},
		}},
		{rule: rules.DLook2, needs: needAll(needPublish, needAbsent), cases: []caseDef{
			{name: "outage-is-error", faults: lookupFails, run: caseLookupOutage},
			{name: "full-size-outage-is-error", faults: someLookupFails, run: caseFullLookupOutage},
		}},
		{rule: rules.DSub1, needs: always, cases: []caseDef{
			{name: "validate-before-access", caps: atLeastRows(3), run: caseValidateFirst},
		}},
		{rule: rules.DSub2, needs: needPublish, cases: []caseDef{
			{name: "refusal-means-nothing-escaped", faults: rejects, run: caseRefusedNothingEscaped},
		}},
		{rule: rules.DSub3, needs: always, cases: []caseDef{
			{name: "every-call-completes", faults: swarmish, run: caseEveryCallCompletes},
		}},
		{rule: rules.DSub4, needs: needPublish, cases: []caseDef{
			{name: "first-writer-wins", run: caseFirstWriterWins},
			{name: "concurrent-publishes", faults: delays, run: caseConcurrentPublishes},
		}},
		{rule: rules.DSub5, needs: needPublish, cases: []caseDef{
			{name: "atomic-visibility", faults: delays, run: caseAtomicVisibility},
		}},
		{rule: rules.DSub6, needs: always, cases: []caseDef{
			{name: "touches-inside-slot", run: caseInsideSlot},
		}},
		{rule: rules.DCB1, needs: always, cases: []caseDef{
			{name: "state-before-signal", faults: callbackMix, run: caseSignalAfterState},
		}},
		{rule: rules.DCB2, needs: always, cases: []caseDef{
			{name: "no-lost-wakeup", faults: callbackMix, run: caseNoLostWakeup},
		}},
		{rule: rules.DCB3, needs: always, cases: []caseDef{
			{name: "facts-monotonic", faults: accessMix, run: caseMonotonic},
		}},
		{rule: rules.DCB4, needs: always, cases: []caseDef{
			{name: "callback-without-lock", faults: callbackMix, run: caseCallbackUnlocked},
		}},
		{rule: rules.DCB5, needs: always, cases: []caseDef{
			{name: "no-callback-after-shutdown", faults: delays, run: caseNoCallbackAfterShutdown},
		}},
		{rule: rules.DCan1, needs: always, cases: []caseDef{
			{name: "cancel-answers", faults: delays, chases: []Pair{CancelVsCompletion}, run: caseCancelAnswers},
		}},
		{rule: rules.DCan2, needs: always, cases: []caseDef{
			{name: "cancel-mid-call", faults: delays, chases: []Pair{CancelVsCompletion}, run: caseCancelMidCall},
			{name: "cancel-at-once", run: caseCancelAtOnce},
		}},
		{rule: rules.DDrain1, needs: always, cases: []caseDef{
			{name: "drain-stops-admission", faults: delays, chases: []Pair{DrainVsLateCallback}, run: caseDrainStopsAdmission},
			{name: "hung-call-stays-pending", faults: neverEnds, run: caseDrainWithHungCall},
			{name: "unprovable-call-drains", faults: unprovableMix, run: caseUnprovableDrains},
		}},
		{rule: rules.DDrain2, needs: always, cases: []caseDef{
			{name: "done-after-last-callback", faults: callbackMix, chases: []Pair{DrainVsLateCallback}, run: caseDrainAfterLastCallback},
		}},
		{rule: rules.DShut1, needs: always, cases: []caseDef{
			{name: "clean-shutdown", run: caseShutdownClean},
			{name: "in-flight-labelled", faults: shutMix, chases: []Pair{ShutdownVsInFlight}, run: caseShutdownInFlight},
			{name: "stuck-region-labelled", faults: stuck, run: caseShutdownStuckRegion},
		}},
		{rule: rules.DShut2, needs: always, cases: []caseDef{
			{name: "shutdown-idempotent", faults: shutMix, run: caseShutdownTwice},
		}},
		{rule: rules.DCaps, needs: always, cases: []caseDef{
			{name: "full-size-batches", run: caseFullSizeBatches},
			{name: "cancel-declaration", run: caseCancelDeclaration},
		}},
	}
}

// Rules lists the rule groups the suite certifies, in report order.
func Rules() []string {
	var out []string
	for _, g := range allGroups() {
		out = append(out, g.rule.String())
	}
	return out
}
