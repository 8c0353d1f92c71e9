package corpusfile

import (
	"errors"
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
