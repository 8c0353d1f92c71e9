package scenarios

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// porcupine checks partitions on goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of every scenario file (read the diff afterwards)")

// TestScenarios runs every file under testdata; each must print exactly
// what it expects.
func TestScenarios(t *testing.T) {
	files, err := Files("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files under testdata (repro: go test ./scenarios -run TestScenarios)")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), Ext)
		t.Run(name, func(t *testing.T) {
			res, err := RunFile(f, Options{Rewrite: *rewrite, Log: os.Stderr})
			if err != nil {
				t.Fatalf("%v (repro: go test ./scenarios -run 'TestScenarios/^%s$')", err, name)
			}
			for _, m := range res.Failures {
				if !*rewrite {
					t.Errorf("%s:%v(repro: go test ./scenarios -run 'TestScenarios/^%s$'; regenerate with -rewrite and read the diff)", f, m, name)
				}
			}
		})
	}
}
