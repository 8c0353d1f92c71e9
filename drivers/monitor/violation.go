package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/storesim/storesim/drivers"
)

// Rule ids the monitor reports: SPEC ids, plus "capabilities" for a driver
// that does not honour its own declaration (SPEC §7, MaxRowsOffByOne).
const (
	RuleBatchValid    = "D-BATCH-VALID"
	RuleBatchKeys     = "D-BATCH-KEYS"
	RuleCapabilities  = "capabilities"
	RuleStatus        = "D-STATUS"
	RuleAccess        = "D-ACCESS"
	RuleSubmitRefused = "D-SUB-2"
	RuleSubmitOwns    = "D-SUB-3"
	RuleEarlySignal   = "D-CB-1"
	RuleLostWakeup    = "D-CB-2"
	RuleMonotonic     = "D-CB-3"
	RuleUnderLock     = "D-CB-4"
	RuleAfterShutdown = "D-CB-5"
	RuleCancel        = "D-CAN-1"
	RuleCancelEnds    = "D-CAN-2"
	RuleDrain         = "D-DRAIN-1"
	RuleDrainCallback = "D-DRAIN-2"
	RuleShutdown      = "D-SHUT-1"
	RuleShutdownAgain = "D-SHUT-2"
	RuleGeometry      = "D-GEOM"
	RuleOverlap       = "D-REG-1"
	RuleRefusedLeaves = "D-REG-2"
	RuleStaleClose    = "D-REG-3"
	RuleFailedClose   = "D-REG-4"
	RuleRegAfterShut  = "D-REG-5"
	RuleBusyClose     = "D-REG-6"
	RuleTogether      = "D-TOG-1"
	RuleTogetherClose = "D-TOG-3"
	RuleTogetherBusy  = "D-TOG-4"
	RuleQuarantine    = "D-QUAR"
	RuleLookupShape   = "D-LOOK-1"
	RuleLookupHonest  = "D-LOOK-2"
	RuleMissHonest    = "D-MISS-HONEST"
)

// Rules lists every rule id the monitor can report, sorted.
func Rules() []string {
	r := []string{
		RuleBatchValid, RuleBatchKeys, RuleCapabilities, RuleStatus, RuleAccess,
		RuleSubmitRefused, RuleSubmitOwns, RuleEarlySignal, RuleLostWakeup,
		RuleMonotonic, RuleUnderLock, RuleAfterShutdown, RuleCancel, RuleCancelEnds,
		RuleDrain, RuleDrainCallback, RuleShutdown, RuleShutdownAgain, RuleGeometry,
		RuleOverlap, RuleRefusedLeaves, RuleStaleClose, RuleFailedClose,
		RuleRegAfterShut, RuleBusyClose, RuleTogether, RuleTogetherClose,
		RuleTogetherBusy, RuleQuarantine, RuleLookupShape, RuleLookupHonest,
		RuleMissHonest,
	}
	slices.Sort(r)
	return r
}

// Violation is one broken rule seen at the driver boundary.
type Violation struct {
	Rule   string         // SPEC id, e.g. "D-CB-1", or "capabilities"
	Call   drivers.CallID // 0 when no call is involved
	Row    int            // row index in the call's batch; -1 when not about one row
	Key    string         // the row's or lookup's key, when about one
	Region string         // the region label, when about one
	At     time.Duration  // virtual (or runtime) time the monitor saw it
	Seed   uint64         // the run's seed (Options.Seed)
	Detail string         // what happened, in words
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s at %v seed=%d", v.Rule, v.At, v.Seed)
	if v.Call != 0 {
		s += fmt.Sprintf(" call %d", v.Call)
	}
	if v.Row >= 0 {
		s += fmt.Sprintf(" row %d", v.Row)
	}
	if v.Key != "" {
		s += fmt.Sprintf(" key %q", v.Key)
	}
	if v.Region != "" {
		s += fmt.Sprintf(" region %q", v.Region)
	}
	return s + ": " + v.Detail
}

// vkey deduplicates violations: one per rule, call, row, key and region.
type vkey struct {
	rule   string
	call   drivers.CallID
	row    int
	key    string
	region string
}

func sortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(
			cmp.Compare(a.At, b.At),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Call, b.Call),
			cmp.Compare(a.Row, b.Row),
			cmp.Compare(a.Region, b.Region),
			cmp.Compare(a.Key, b.Key),
			cmp.Compare(a.Detail, b.Detail),
		)
	})
}
