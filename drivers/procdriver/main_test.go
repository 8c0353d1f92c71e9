package procdriver_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after every test, that no goroutine is left (goleak)
// and that no driver process is left: no child of this process, running or
// a zombie.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := children(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "driver processes left behind: %v (repro: go test ./drivers/procdriver)\n", left)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v (repro: go test ./drivers/procdriver)\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
