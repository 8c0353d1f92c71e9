package fuzz

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/fuzz/workload"
)

// TestCorpusFilesReplay: every file of the committed fuzz corpus
// (testdata/fuzz/<target>/, generated or added by hand) is an input its
// target runs: FuzzOpLog's decode to a runnable log, FuzzParseOpLog's are
// readable corpus files (any text is an input there). A file that no longer
// replays fails the test, never passes skipped. (The state machines' corpus
// lives, and is checked the same way, in fuzz/machine.)
func TestCorpusFilesReplay(t *testing.T) {
	files, err := corpusfile.Files()
	if err != nil {
		t.Fatalf("%v (repro: go test ./fuzz -run TestCorpusFilesReplay)", err)
	}
	for _, cf := range files {
		f, v := cf.Path, cf.Value
		switch cf.Target {
		case "FuzzOpLog":
			b, _ := v.([]byte)
			if _, ok := Decode(b); !ok {
				t.Fatalf("%s decodes to nothing runnable: FuzzOpLog would skip it (repro: go test ./fuzz -run TestCorpusFilesReplay)", f)
			}
		case "FuzzParseOpLog":
			if s, ok := v.(string); !ok {
				t.Fatalf("%s holds %T, want a string (repro: go test ./fuzz -run TestCorpusFilesReplay)", f, v)
			} else if strings.HasPrefix(filepath.Base(f), "seed-") && s != "" {
				if _, err := workload.Parse(s); err != nil {
					t.Fatalf("%s, a generated seed, no longer parses: %v (repro: go test ./fuzz -run TestCorpusFilesReplay)", f, err)
				}
			}
		default:
			t.Fatalf("testdata/fuzz/%s: no fuzz target of that name (repro: go test ./fuzz -run TestCorpusFilesReplay)", cf.Target)
		}
	}
}
