package fuzz

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/workload"
)

// TestCorpusFilesReplay: every file of the committed fuzz corpus
// (testdata/fuzz/<target>/, generated or added by hand) is an input its
// target runs: FuzzOpLog's decode to a runnable log, FuzzParseOpLog's are
// readable corpus files (any text is an input there). A file that no longer
// replays fails the test, never passes skipped. (The state machines' corpus
// lives, and is checked the same way, in fuzz/machine.)
func TestCorpusFilesReplay(t *testing.T) {
	targets, err := os.ReadDir(filepath.Join("testdata", "fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", tg.Name(), "*"))
		if len(files) == 0 {
			t.Fatalf("testdata/fuzz/%s is empty (repro: go test ./fuzz -run TestCorpusFilesReplay)", tg.Name())
		}
		for _, f := range files {
			v, err := readCorpusFile(f)
			if err != nil {
				t.Fatalf("%s: %v (repro: go test ./fuzz -run TestCorpusFilesReplay)", f, err)
			}
			switch tg.Name() {
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
				t.Fatalf("testdata/fuzz/%s: no fuzz target of that name (repro: go test ./fuzz -run TestCorpusFilesReplay)", tg.Name())
			}
		}
	}
}

// readCorpusFile reads one value of go's corpus format ("go test fuzz v1",
// then []byte("…") or string("…")).
func readCorpusFile(path string) (any, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitN(strings.TrimRight(string(text), "\n"), "\n", 2)
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, errBadCorpus
	}
	body := strings.TrimSpace(lines[1])
	for _, kind := range []string{"[]byte", "string"} {
		if inner, ok := strings.CutPrefix(body, kind+"("); ok && strings.HasSuffix(inner, ")") {
			s, err := strconv.Unquote(strings.TrimSuffix(inner, ")"))
			if err != nil {
				return nil, err
			}
			if kind == "string" {
				return s, nil
			}
			return []byte(s), nil
		}
	}
	return nil, errBadCorpus
}

var errBadCorpus = errorString("not a one-value corpus file (go test fuzz v1, then []byte(\"…\") or string(\"…\"))")

type errorString string

func (e errorString) Error() string { return string(e) }
