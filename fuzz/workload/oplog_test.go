package workload

import (
	"errors"
	"strings"
	"testing"
)

// TestRoundTrip: thousands of generated logs print and parse back to the
// same text.
func TestRoundTrip(t *testing.T) {
	n := uint64(3000)
	if testing.Short() {
		n = 300
	}
	faults := func(seed uint64, e string) []string {
		if seed%3 == 0 {
			return []string{"row-fault rate=0.05"}
		}
		return nil
	}
	for seed := range n {
		l := Generate(seed, GenConfig{Ops: 1 + int(seed%150), Faults: faults, Evicting: seed%2 == 1})
		text := l.String()
		back, err := Parse(text)
		if err != nil {
			t.Fatalf("seed %d: %v (repro: go test ./fuzz/workload -run TestRoundTrip)", seed, err)
		}
		if again := back.String(); again != text {
			t.Fatalf("seed %d: round trip changed the log:\n%s\nvs\n%s (repro: go test ./fuzz/workload -run TestRoundTrip)", seed, text, again)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(7, GenConfig{}).String(), Generate(7, GenConfig{}).String()
	if a != b || a == Generate(8, GenConfig{}).String() {
		t.Fatalf("Generate is not a function of the seed (repro: go test ./fuzz/workload -run TestGenerateDeterministic)")
	}
	if !strings.Contains(a, " shutdown ") {
		t.Fatalf("no shutdown op in:\n%s (repro: go test ./fuzz/workload -run TestGenerateDeterministic)", a)
	}
}

func TestParseErrors(t *testing.T) {
	good := Header + "\nendpoint A regions=r0:4x16\n"
	cases := []struct{ name, text, want string }{
		{"empty", "", "empty input"},
		{"no header", "seed 1\n", "line 1"},
		{"bad seed", Header + "\nseed x\n", "line 2: bad seed"},
		{"no endpoint", Header + "\nseed 1\n", "no endpoint"},
		{"bad region", Header + "\nendpoint A regions=r0:4\n", "line 2"},
		{"unknown kind", good + "op at=0us frob A\n", "line 3: unknown op kind"},
		{"undeclared endpoint", good + "op at=0us fetch B keys=k mask=1\n", "undeclared endpoint"},
		{"mask length", good + "op at=0us fetch A keys=k,j mask=1\n", "1 bits for 2 keys"},
		{"cancel forward", good + "op at=0us cancel 3\n", "not an earlier op"},
		{"time backwards", good + "op at=5us fetch A keys=k mask=1\nop at=4us fetch A keys=k mask=1\n", "goes back"},
		{"time overflows", good + "op at=9223372036854775807us fetch A keys=k mask=1\n", "bad op time"},
		{"truncated op", good + "op at=", "line 3"},
		{"unknown bad view", good + "op at=0us fetch A keys=k mask=1 bad=odd\n", `unknown bad= "odd"`},
		{"quiesce forward", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce A 0,4\n", "not an earlier op"},
		{"quiesce no targets", good + "op at=0us quiesce A\n", "quiesce takes"},
		{"quiesce undeclared", good + "op at=0us fetch A keys=k mask=1\nop at=0us quiesce B 0\n", "undeclared endpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an op log error containing %q (repro: go test ./fuzz/workload -run 'TestParseErrors/%s')", err, tc.want, tc.name)
			}
		})
	}
}
