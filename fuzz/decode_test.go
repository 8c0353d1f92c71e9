package fuzz

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestDecodeRoom: Decode sizes a log's ops and rows by room's walk, so any
// input, including one whose groups Decode drops (rows over MaxPerKey) past
// the MaxOps-th group, must decode without overrunning that room: no panic,
// at most MaxOps ops before the shutdowns, and the ops slice never regrown.
func TestDecodeRoom(t *testing.T) {
	inputs := map[string][]byte{
		"empty":       nil,
		"header":      make([]byte, HeaderBytes),
		"lone byte":   append(make([]byte, HeaderBytes), 0x10),
		"cut short":   append(make([]byte, HeaderBytes), 0x10, 7, 1, 2),
		"dropped":     append(make([]byte, HeaderBytes), bytes.Repeat([]byte{0, 7, 0, 0, 0, 0, 0, 0, 0, 0}, 400)...), // one key, no time passing
		"many ops":    append(make([]byte, HeaderBytes), bytes.Repeat([]byte{0x10, 0, 1}, 500)...),
		"cancels":     append(make([]byte, HeaderBytes), bytes.Repeat([]byte{0x16, 0, 3, 0x1c, 0}, 300)...),
		"all kinds":   append(make([]byte, HeaderBytes), bytes.Repeat([]byte{0x13, 15, 1, 2, 3, 4, 5, 6, 7, 8, 0x2c, 1, 0x3f, 1}, 50)...),
		"no runnable": append(make([]byte, HeaderBytes), 0x1f, 0, 0x1f, 1),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		in := make([]byte, rng.IntN(3000))
		for j := range in {
			in[j] = byte(rng.Uint32())
		}
		inputs["random/"+string(rune('a'+i%26))+string(rune('a'+i/26))] = in
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			ops, _ := room(in[min(len(in), HeaderBytes):])
			l, _ := Decode(in) // a panic fails the test
			if len(l.Ops) > MaxOps+len(l.Endpoints) {
				t.Fatalf("%d ops, more than MaxOps %d and %d shutdowns (repro: go test ./fuzz -run 'TestDecodeRoom/%s')", len(l.Ops), MaxOps, len(l.Endpoints), name)
			}
			if cap(l.Ops) != ops+len(l.Endpoints) {
				t.Fatalf("the ops slice was regrown: cap %d, room's bound %d + %d endpoints (repro: go test ./fuzz -run 'TestDecodeRoom/%s')", cap(l.Ops), ops, len(l.Endpoints), name)
			}
		})
	}
}
