package backend

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
)

func rowsOf(keys string) []drivers.Row {
	var rows []drivers.Row
	for i, k := range strings.Fields(keys) {
		rows = append(rows, drivers.Row{Key: k, Slot: i, Position: i})
	}
	return rows
}

func shape(cuts [][]drivers.Row) string {
	var parts []string
	for _, c := range cuts {
		var ks []string
		for _, r := range c {
			ks = append(ks, fmt.Sprintf("%s@%d", r.Key, r.Position))
		}
		parts = append(parts, strings.Join(ks, " "))
	}
	return strings.Join(parts, " | ")
}

// TestCut is B-CUT on the pure cutter.
func TestCut(t *testing.T) {
	cases := []struct {
		name, keys string
		max        int
		want       string
	}{
		{"5-rows-max-2", "a b c d e", 2, "a@0 b@1 | c@2 d@3 | e@4"},
		{"repeated-key", "a b a c", 4, "a@0 b@1 | a@2 c@3"},
		{"repeated-adjacent", "a a a", 3, "a@0 | a@1 | a@2"},
		{"repeat-after-cut-is-fine", "a b a", 2, "a@0 b@1 | a@2"},
		{"max-1", "a b", 1, "a@0 | b@1"},
		{"max-0-is-1", "a b", 0, "a@0 | b@1"},
		{"empty", "", 3, ""},
		{"one", "a", 3, "a@0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := rowsOf(c.keys)
			cuts := Cut(rows, c.max)
			if got := shape(cuts); got != c.want {
				t.Fatalf("Cut(%q, %d) = %q, want %q (repro: go test ./backend -run 'TestCut/%s')", c.keys, c.max, got, c.want, c.name)
			}
			var flat []drivers.Row
			for _, cut := range cuts {
				flat = append(flat, cut...)
			}
			if !slices.Equal(flat, rows) {
				t.Fatalf("cuts do not preserve row order (repro: go test ./backend -run 'TestCut/%s')", c.name)
			}
		})
	}
}

// TestCutAppendSafe: a batch is a capped slice, so appending to one never
// overwrites the next.
func TestCutAppendSafe(t *testing.T) {
	cuts := Cut(rowsOf("a b c d"), 2)
	_ = append(cuts[0], drivers.Row{Key: "x"})
	if cuts[1][0].Key != "c" {
		t.Fatalf("append to batch 0 overwrote batch 1: %q (repro: go test ./backend -run TestCutAppendSafe)", shape(cuts))
	}
}
