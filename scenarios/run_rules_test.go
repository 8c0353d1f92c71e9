package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
)

// TestMismatchNamesRule: a mismatch names the rules its actual output cites
// that the expected output does not, in order, once each.
func TestMismatchNamesRule(t *testing.T) {
	for _, c := range []struct {
		name, want, got string
		fired           []rules.ID
	}{
		{"a check fired", "attempt 1 DELIVERED", "!! B-CUT [safety] call 2: a batch names \"k\" twice\n!! B-CUT again; S-MARKS too", []rules.ID{rules.BCut, rules.SMarks}},
		{"same rule expected", "!! D-ACCESS-END call 1", "!! D-ACCESS-END call 2", nil},
		{"no rule, just output", "attempt 1 DELIVERED", "attempt 1 FAILED", nil},
		{"not a rule", "x", "D-NOPE and B-", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Mismatch{Line: 3, Command: "check", Want: c.want, Got: c.got}
			if got := m.Fired(); !slices.Equal(got, c.fired) {
				t.Fatalf("Fired() = %v, want %v (repro: go test ./scenarios -run 'TestMismatchNamesRule')", got, c.fired)
			}
			if len(c.fired) > 0 && !strings.Contains(m.String(), "rule fired: "+c.fired[0].String()) {
				t.Fatalf("String() does not name the rule:\n%s (repro: go test ./scenarios -run 'TestMismatchNamesRule')", m)
			}
		})
	}
}
