package rules

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestViolationString: the rule first, then only what the violation is
// about, the time and the seed, then the detail.
func TestViolationString(t *testing.T) {
	for _, tc := range []struct {
		v    Violation
		want string
	}{
		{Violation{Rule: DAccessEnd, Class: Contract, Endpoint: "A", Call: 3, Row: 1, Key: "k", At: 1500 * time.Microsecond, Seed: 42, Detail: "late write"},
			`A: D-ACCESS-END [contract] call 3 row 1 key "k" at 1.5ms seed 42: late write`},
		{Violation{Rule: SLin, Class: Safety, Row: -1, Key: "k", Seed: 7, Detail: "d"}, `S-LIN [safety] key "k" at 0s seed 7: d`},
		{Violation{Rule: SRelease, Class: Safety, Row: -1, Loan: 2, Region: "r0", At: 5, Detail: "d"}, `S-RELEASE [safety] region "r0" loan 2 at 5ns seed 0: d`},
		{Violation{Rule: LiveHang, Class: Liveness, Row: -1, Detail: "hang"}, `liveness [liveness] at 0s seed 0: hang`},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %q, want %q (repro: go test ./drivers/rules -run TestViolationString)", got, tc.want)
		}
	}
}

// TestSortOrder: contract and safety together by time, then liveness, then
// harness; rule names break ties.
func TestSortOrder(t *testing.T) {
	v := func(r ID, c Class, at time.Duration) Violation { return Violation{Rule: r, Class: c, Row: -1, At: at} }
	vs := []Violation{v(LiveHang, Liveness, 1), v(SLin, Safety, 9), v(DCB2, Contract, 9), v(DAccessEnd, Contract, 3), v(HarnessErr, Harness, 99)}
	Sort(vs)
	var got []ID
	for _, x := range vs {
		got = append(got, x.Rule)
	}
	if want := []ID{DAccessEnd, DCB2, SLin, LiveHang, HarnessErr}; !slices.Equal(got, want) {
		t.Fatalf("sorted %v, want %v (repro: go test ./drivers/rules -run TestSortOrder)", got, want)
	}
}

// TestSortOrderWithinInstant: at one instant the order found (Seq) comes
// before the rule name, and a finding without a number comes after every
// numbered one.
func TestSortOrderWithinInstant(t *testing.T) {
	v := func(r ID, seq uint64) Violation { return Violation{Rule: r, Class: Safety, Row: -1, At: 5, Seq: seq} }
	vs := []Violation{v(SLin, 0), v(BPublish, 2), v(BSubmit, 1), v(BCut, 0), v(DStatus, 3)}
	Sort(vs)
	var got []ID
	for _, x := range vs {
		got = append(got, x.Rule)
	}
	if want := []ID{BSubmit, BPublish, DStatus, BCut, SLin}; !slices.Equal(got, want) {
		t.Fatalf("sorted %v, want %v (repro: go test ./drivers/rules -run TestSortOrderWithinInstant)", got, want)
	}
}

// TestIDText: names round-trip through JSON; the zero ID is "" both ways; a
// misspelt name is an error.
func TestIDText(t *testing.T) {
	for _, id := range []ID{0, DAccessEnd, DCaps, LiveHang, HarnessErr} {
		b, err := json.Marshal(id)
		var back ID
		if err == nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil || back != id || string(b) != `"`+id.String()+`"` {
			t.Errorf("%d → %s → %d (%v) (repro: go test ./drivers/rules -run TestIDText)", id, b, back, err)
		}
	}
	if _, err := Parse("D-ACCES-END"); err == nil {
		t.Errorf("Parse accepted a misspelt rule (repro: go test ./drivers/rules -run TestIDText)")
	}
}
