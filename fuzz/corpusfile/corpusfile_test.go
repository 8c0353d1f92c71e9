package corpusfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, v := range []any{[]byte{}, []byte("a\x00\xff\"b"), "", "line\nnext \"q\""} {
		got, err := Parse(Encode(v))
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("Parse(Encode(%#v)) = %#v, %v (repro: go test ./fuzz/corpusfile -run TestRoundTrip)", v, got, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, text := range []string{"", "go test fuzz v1\n", "go test fuzz v2\n[]byte(\"a\")\n", "go test fuzz v1\nint(3)\n",
		"go test fuzz v1\n[]byte(\"a)\n", "go test fuzz v1\nstring(a)\n"} {
		if v, err := Parse(text); !errors.Is(err, ErrFormat) {
			t.Fatalf("Parse(%q) = %#v, %v; want ErrFormat (repro: go test ./fuzz/corpusfile -run TestParseRefuses)", text, v, err)
		}
	}
}

func TestSyncFindsStale(t *testing.T) {
	t.Chdir(t.TempDir())
	e := Entry{Target: "FuzzX", Name: "seed-00", Value: []byte("v")}
	if err := e.Sync(false); !errors.Is(err, ErrStale) {
		t.Fatalf("missing file: Sync = %v, want ErrStale (repro: go test ./fuzz/corpusfile -run TestSyncFindsStale)", err)
	}
	if err := e.Sync(true); err != nil {
		t.Fatalf("Sync(write) = %v (repro: go test ./fuzz/corpusfile -run TestSyncFindsStale)", err)
	}
	e.Value = []byte("w")
	if err := e.Sync(false); !errors.Is(err, ErrStale) {
		t.Fatalf("changed value: Sync = %v, want ErrStale (repro: go test ./fuzz/corpusfile -run TestSyncFindsStale)", err)
	}
}

func TestFilesRefusesEmptyAndBad(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := (Entry{Target: "FuzzX", Name: "seed-00", Value: "v"}).Sync(true); err != nil {
		t.Fatal(err)
	}
	if fs, err := Files(); err != nil || len(fs) != 1 || fs[0].Value != "v" {
		t.Fatalf("Files = %+v, %v; want the one file (repro: go test ./fuzz/corpusfile -run TestFilesRefusesEmptyAndBad)", fs, err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "fuzz", "FuzzX", "bad"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Files(); !errors.Is(err, ErrFormat) {
		t.Fatalf("a bad file: Files err = %v, want ErrFormat (repro: go test ./fuzz/corpusfile -run TestFilesRefusesEmptyAndBad)", err)
	}
	if err := os.MkdirAll(filepath.Join("testdata", "fuzz", "FuzzEmpty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Files(); err == nil {
		t.Fatal("an empty target directory: Files gave no error (repro: go test ./fuzz/corpusfile -run TestFilesRefusesEmptyAndBad)")
	}
}
