package targets

import "testing"

// FuzzMachine is Machine as a native Go fuzz test.
func FuzzMachine(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) { Machine(data) })
}
