package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// TestRecorderBounds: a driver that touches its rows thousands of times
// costs the recorder a handful of kept touches, and the memory oracle
// finds exactly what it finds over the full touch log (the arena's):
// D-ACCESS-END by the call that kept reading after ENDED, D-STATUS by the
// FETCH that wrote a row it reported MISS, D-SUB-6 by the write outside
// its slot. Notes stop at MaxNotes, and the last says how many were
// dropped.
func TestRecorderBounds(t *testing.T) {
	const repro = "(repro: go test ./model -run TestRecorderBounds)"
	r := newRig(t, RecorderOptions{Seed: 7})
	r.submit(1, batch(drivers.Publish, row("k1", 0)))
	r.submit(2, batch(drivers.Fetch, row("k2", 1)))
	for range 2000 {
		r.read(1, 0, 0) // before ENDED: legal, and all alike
	}
	r.final(1, 0, drivers.OK)
	r.access(1, drivers.AccessEnded)
	for range 2000 {
		r.read(1, 0, 0) // after ENDED: D-ACCESS-END, told by the first
	}
	r.final(2, 0, drivers.Miss)
	for range 2000 {
		r.write(2, 0, 16, []byte("x")) // a MISS row written: D-STATUS
		r.write(2, 0, 40, []byte("y")) // outside its slot: D-SUB-6
	}
	r.access(2, drivers.AccessEnded)
	_, kept, _, _ := r.rec.Kept()
	if kept > 8 {
		t.Errorf("the recorder kept %d of 8000 touches; repeats of a touch must count once %s", kept, repro)
	}
	key := func(vs []rules.Violation) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		slices.Sort(out)
		return out
	}
	got := key(r.rec.MemoryViolations())
	want := key(CheckMemory(r.a.Touches(), r.rec.Calls(), 7))
	// CheckMemory orders by virtual time, the recorder by event sequence:
	// on this rig every event has its own instant, so they agree.
	if !slices.Equal(got, want) {
		t.Errorf("the oracle over the kept touches found\n  %s\nover the full log\n  %s %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), repro)
	}
	for _, rule := range []string{"D-ACCESS-END", "D-STATUS", "D-SUB-6"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, rule+" ") }) {
			t.Errorf("no %s finding among\n  %s %s", rule, strings.Join(got, "\n  "), repro)
		}
	}
	for range MaxNotes + 10 {
		r.rec.Callback(r.clk.now, 1)
	}
	notes := r.rec.Notes()
	if n, _, dropped, _ := r.rec.Kept(); n != MaxNotes || dropped == 0 || len(notes) != MaxNotes+1 || !strings.Contains(notes[len(notes)-1].Text, "more notes, dropped") {
		t.Errorf("%d notes kept, %d dropped, %d returned (last %q): want %d kept and one saying how many were dropped %s", n, dropped, len(notes), notes[len(notes)-1].Text, MaxNotes, repro)
	}
}
