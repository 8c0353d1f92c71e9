package sim

import "testing"

// TestIDSet: membership, counts and deletion across word boundaries, against
// a map.
func TestIDSet(t *testing.T) {
	const repro = "go test ./sim -run TestIDSet"
	var s idSet
	want := map[uint64]bool{}
	r := NewRand(3)
	for i := range 5000 {
		id := uint64(1 + r.Intn(700))
		switch r.Intn(3) {
		case 0, 1:
			s.add(id)
			want[id] = true
		default:
			if got := s.del(id); got != want[id] {
				t.Fatalf("step %d: del(%d) = %v, want %v (repro: %s)", i, id, got, want[id], repro)
			}
			delete(want, id)
		}
		if s.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d (repro: %s)", i, s.len(), len(want), repro)
		}
	}
	for id := range uint64(800) {
		if s.has(id) != want[id] {
			t.Fatalf("has(%d) = %v, want %v (repro: %s)", id, s.has(id), want[id], repro)
		}
	}
}
