package procdriver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/procdriver"
)

// TestProtocolVersionStated: the contract for implementers
// (docs/PROTOCOL.md) and the Python client state the version this package
// speaks, so a version change cannot leave either behind.
func TestProtocolVersionStated(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{filepath.Join("..", "..", "docs", "PROTOCOL.md"), fmt.Sprintf("# The driver process protocol, version %d\n", procdriver.Protocol)},
		{filepath.Join("..", "..", "python", "storesim_driver", "adapter.py"), fmt.Sprintf("\nPROTOCOL = %d\n", procdriver.Protocol)},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatalf("%v (repro: go test ./drivers/procdriver -run TestProtocolVersionStated)", err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%s does not state protocol %d (want the line %q) (repro: go test ./drivers/procdriver -run TestProtocolVersionStated)", c.file, procdriver.Protocol, strings.TrimSpace(c.want))
		}
	}
}
