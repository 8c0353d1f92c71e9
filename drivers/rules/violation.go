package rules

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Violation is one broken rule, as every oracle reports it — the contract
// monitor, the lender, the memory oracle, liveness, the store model, the
// engine's backend checks, the conformance suite's own cases — and as every
// report, exit code and certificate reads it. Zero and "" mean "none"; Row is
// -1 when the violation is about no row.
type Violation struct {
	Rule  ID
	Class Class // what it means for the verdict (not always Rule's class: a hang of a call is D-SUB-3 and Liveness)
	// Endpoint names the endpoint it was seen on ("" for the whole run).
	Endpoint string
	Call     uint64 // the driver call (drivers.CallID)
	Row      int    // row index in the call's batch
	Key      string
	Region   string // region label
	Loan     uint64 // the lender's loan
	At       time.Duration
	// Seq is the run-wide order it was found in (sim.Stamp): it orders the
	// findings of one instant. 0 when not known (found after the run, or
	// on a clock that numbers nothing): after every numbered one.
	Seq    uint64 `json:"-"`
	Seed   uint64
	Detail string
}

// String puts the rule first: `A: D-ACCESS-END [contract] call 3 row 1
// key "k" at 1.5ms seed 42: detail` (the endpoint prefix only when set).
func (v Violation) String() string {
	s := ""
	if v.Endpoint != "" {
		s = v.Endpoint + ": "
	}
	s += fmt.Sprintf("%s [%s]", v.Rule, v.Class)
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
	if v.Loan != 0 {
		s += fmt.Sprintf(" loan %d", v.Loan)
	}
	return s + fmt.Sprintf(" at %v seed %d: %s", v.At, v.Seed, v.Detail)
}

// Rank orders classes for a verdict, as the exit codes do (1, 3, 4):
// contract and safety together (both say something wrong happened), then
// liveness, then a harness failure — which code under test can cause too
// (a backend that sends a key-less row makes a history no model can check),
// so it never hides a finding on that code.
func (c Class) Rank() int {
	switch c {
	case Contract, Safety:
		return 0
	case Liveness:
		return 1
	case Harness:
		return 2
	}
	return 3
}

// Compare is the one order of violations: class rank, time, the order they
// were found in within that instant (Seq: a cause before its consequences,
// where the oracles share a numbering clock), rule name, then
// where (endpoint, call, row, key, region, loan) and detail, so a report is
// the same on every replay and its first violation decides the verdict.
func Compare(a, b Violation) int {
	return cmp.Or(
		cmp.Compare(a.Class.Rank(), b.Class.Rank()),
		cmp.Compare(a.At, b.At),
		cmp.Compare(a.seq(), b.seq()),
		cmp.Compare(a.Rule.String(), b.Rule.String()),
		cmp.Compare(a.Endpoint, b.Endpoint),
		cmp.Compare(a.Call, b.Call),
		cmp.Compare(a.Row, b.Row),
		cmp.Compare(a.Key, b.Key),
		cmp.Compare(a.Region, b.Region),
		cmp.Compare(a.Loan, b.Loan),
		cmp.Compare(a.Detail, b.Detail),
	)
}

// seq is Seq with 0 (not known) after every known one.
func (v Violation) seq() uint64 {
	if v.Seq == 0 {
		return math.MaxUint64
	}
	return v.Seq
}

// Sort orders vs by [Compare] (stable: equal violations keep their order).
func Sort(vs []Violation) { slices.SortStableFunc(vs, Compare) }
