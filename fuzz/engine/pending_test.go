package engine

import "testing"

func TestPendingNames(t *testing.T) {
	for _, name := range []string{"A", "", "long-endpoint"} {
		d, b, s := pendingNames(name)
		if d != name+"/driver" || b != name+"/backend" || s != name+"/shutdown" {
			t.Fatalf("pendingNames(%q) = %q, %q, %q (repro: go test ./fuzz/engine -run TestPendingNames)", name, d, b, s)
		}
	}
}
