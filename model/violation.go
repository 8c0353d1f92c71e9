package model

import (
	"fmt"
	"sort"
	"time"

	"github.com/storesim/storesim/drivers"
)

// Class keeps the two kinds of failure apart (STYLE: outcome classes): a
// safety failure means something wrong happened (linearizability, memory,
// contract); a liveness failure means something that should have happened
// did not (a hang).
type Class uint8

const (
	// Safety: S-LIN, memory (S-NO-LATE-ACCESS, D-ACCESS-END, D-SUB-6,
	// D-STATUS) and contract (D-…) violations.
	Safety Class = iota + 1
	// Liveness: work still pending at quiescence.
	Liveness
)

func (c Class) String() string {
	switch c {
	case Safety:
		return "safety"
	case Liveness:
		return "liveness"
	}
	return "class?"
}

// Violation is one broken rule, with everything a failure report needs to
// name it: the rule id of SPEC.md, the call, row and key it concerns (zero,
// -1 and "" when it concerns none), the virtual time and the run's seed.
type Violation struct {
	Rule   string
	Class  Class
	Call   drivers.CallID
	Row    int
	Key    string
	At     time.Duration
	Seed   uint64
	Detail string
}

// String puts the rule first: "D-ACCESS-END [safety] call 3 row 1 key "k"
// at 1.5ms seed 42: detail".
func (v Violation) String() string {
	s := fmt.Sprintf("%s [%s]", v.Rule, v.Class)
	if v.Call != 0 {
		s += fmt.Sprintf(" call %d", v.Call)
	}
	if v.Row >= 0 {
		s += fmt.Sprintf(" row %d", v.Row)
	}
	if v.Key != "" {
		s += fmt.Sprintf(" key %q", v.Key)
	}
	return s + fmt.Sprintf(" at %v seed %d: %s", v.At, v.Seed, v.Detail)
}

// SortViolations orders violations by class, time, call, row and rule so a
// report is the same on every replay.
func SortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		switch {
		case a.Class != b.Class:
			return a.Class < b.Class
		case a.At != b.At:
			return a.At < b.At
		case a.Call != b.Call:
			return a.Call < b.Call
		case a.Row != b.Row:
			return a.Row < b.Row
		}
		return a.Rule < b.Rule
	})
}
