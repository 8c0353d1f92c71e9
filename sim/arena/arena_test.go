package arena

import (
	"bytes"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

func TestTouchRules(t *testing.T) {
	by := drivers.Toucher{Call: 9, Row: 1}
	cases := []struct {
		name  string
		setup func(a *Arena)
		touch func(a *Arena) error
		rule  rules.ID // 0 = no violation
	}{
		{"lent slot write", func(a *Arena) { a.Lend(1, 5) }, func(a *Arena) error { return a.Write(by, 8, make([]byte, 8)) }, 0},
		{"retained slot read", func(a *Arena) { a.Lend(1, 5); a.Retain(1) }, func(a *Arena) error { return a.Read(by, 8, make([]byte, 8)) }, 0},
		{"released slot write", func(a *Arena) { a.Lend(1, 5); a.Release(1) }, func(a *Arena) error { return a.Write(by, 8, make([]byte, 8)) }, rules.SNoLateAccess},
		{"never lent read", func(a *Arena) {}, func(a *Arena) error { return a.Read(by, 0, make([]byte, 8)) }, rules.SNoLateAccess},
		{"unregistered region", func(a *Arena) { a.Lend(1, 5); a.SetRegistered(false) }, func(a *Arena) error { return a.Write(by, 8, make([]byte, 8)) }, rules.SNoLateAccess},
		{"crosses slot boundary", func(a *Arena) { a.Lend(0, 5); a.Lend(1, 5) }, func(a *Arena) error { return a.Write(by, 4, make([]byte, 8)) }, rules.DSub6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Options{Seed: 1})
			s.RunUntil(77)
			a := New("r0", 4, 8, Options{Clock: s, Log: true})
			a.SetRegistered(true)
			tc.setup(a)
			if err := tc.touch(a); err != nil {
				t.Fatal(err)
			}
			vs := a.Violations()
			switch {
			case tc.rule == 0 && len(vs) > 0:
				t.Fatalf("unexpected %v (repro: go test ./sim/arena -run 'TestTouchRules/%s')", vs, tc.name)
			case tc.rule != 0 && (len(vs) != 1 || vs[0].Rule != tc.rule):
				t.Fatalf("got %v, want one %s (repro: go test ./sim/arena -run 'TestTouchRules/%s')", vs, tc.rule, tc.name)
			case tc.rule != 0 && (vs[0].Touch.By != by || vs[0].Touch.At != 77):
				t.Fatalf("violation %v does not name call 9 row 1 at 77ns (repro: go test ./sim/arena -run 'TestTouchRules/%s')", vs[0], tc.name)
			}
			if len(a.Touches()) != 1 {
				t.Fatalf("touch log has %d entries, want 1 (repro: go test ./sim/arena -run 'TestTouchRules/%s')", len(a.Touches()), tc.name)
			}
		})
	}
}

func TestReleasePoisons(t *testing.T) {
	a := New("r0", 2, 4, Options{})
	a.SetRegistered(true)
	a.Lend(0, 1)
	if err := a.Write(drivers.Toucher{Call: 1}, 0, []byte("abcd")); err != nil {
		t.Fatal(err)
	}
	a.Release(0)
	if got := a.Peek(0); !bytes.Equal(got, bytes.Repeat([]byte{Poison}, 4)) {
		t.Fatalf("released slot holds %q, want poison (repro: go test ./sim/arena -run TestReleasePoisons)", got)
	}
	if err := a.Read(drivers.Toucher{}, 6, make([]byte, 4)); err == nil {
		t.Fatalf("read past the end succeeded (repro: go test ./sim/arena -run TestReleasePoisons)")
	}
}

func TestGeometryOverlap(t *testing.T) {
	a, b := New("a", 2, 4, Options{}), New("b", 2, 4, Options{})
	if err := drivers.CheckGeometry(a.Region(), b.Region()); err != nil {
		t.Fatalf("distinct arenas: %v (repro: go test ./sim/arena -run TestGeometryOverlap)", err)
	}
	twin := a.Region()
	twin.Label = "twin"
	if err := drivers.CheckGeometry(a.Region(), twin); err == nil {
		t.Fatalf("same arena twice accepted (repro: go test ./sim/arena -run TestGeometryOverlap)")
	}
}

func TestEachIsPerSlot(t *testing.T) {
	a := New("r0", 4, 4, Options{})
	a.LendEach(7, 1, 3)
	for s, want := range []SlotState{AtLender, Lent, AtLender, Lent} {
		if a.State(s) != want || (want == Lent) != (a.Owner(s) == 7) {
			t.Fatalf("slot %d: %v owned by %d after LendEach(7, 1, 3) (repro: go test ./sim/arena -run TestEachIsPerSlot)", s, a.State(s), a.Owner(s))
		}
	}
	a.Fill(1, []byte("abcd"))
	a.ReleaseEach(1, 3)
	for s := range 4 {
		if a.State(s) != AtLender || a.Owner(s) != 0 || (s%2 == 1) != bytes.Equal(a.Peek(s), bytes.Repeat([]byte{Poison}, 4)) {
			t.Fatalf("slot %d: %v owned by %d holding %q after ReleaseEach(1, 3) (repro: go test ./sim/arena -run TestEachIsPerSlot)", s, a.State(s), a.Owner(s), a.Peek(s))
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatalf("LendEach of a lent slot did not panic (repro: go test ./sim/arena -run TestEachIsPerSlot)")
		}
	}()
	a.LendEach(8, 0, 0)
}

func TestFirstFree(t *testing.T) {
	a := New("r0", 5, 4, Options{})
	step := func(what string, do func(), want int) {
		t.Helper()
		do()
		if got := a.FirstFree(); got != want {
			t.Fatalf("after %s: FirstFree %d, want %d (repro: go test ./sim/arena -run TestFirstFree)", what, got, want)
		}
		for s := range want {
			if a.State(s) == AtLender {
				t.Fatalf("after %s: slot %d below FirstFree %d is at the lender (repro: go test ./sim/arena -run TestFirstFree)", what, s, want)
			}
		}
	}
	step("lend 1, 3", func() { a.LendEach(1, 1, 3) }, 0)
	step("lend 0", func() { a.Lend(0, 2) }, 2)
	step("lend 2", func() { a.Lend(2, 3) }, 4)
	step("retain 2", func() { a.Retain(2) }, 4)
	step("release 3", func() { a.Release(3) }, 3)
	step("release 1, 0", func() { a.ReleaseEach(1, 0) }, 0)
	step("lend 0, 1, 3, 4", func() { a.LendEach(4, 0, 1, 3, 4) }, 5)
}
