package keys

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

const repro = "(repro: go test ./backend/keys -run "

func TestNewScheme(t *testing.T) {
	cases := []struct {
		name, prefix string
		version, w   int
		want         error
	}{
		{"ok", "kv", 1, 16, nil},
		{"ok-64", strings.Repeat("p", 64), 3, 1, nil},
		{"empty", "", 1, 16, ErrBadScheme},
		{"too-long", strings.Repeat("p", 65), 1, 16, ErrBadScheme},
		{"slash", "a/b", 1, 16, ErrBadScheme},
		{"space", "a b", 1, 16, ErrBadScheme},
		{"tab", "a\tb", 1, 16, ErrBadScheme},
		{"non-ascii", "ké", 1, 16, ErrBadScheme},
		{"del", "a\x7f", 1, 16, ErrBadScheme},
		{"version-0", "kv", 0, 16, ErrBadScheme},
		{"width-0", "kv", 1, 0, ErrBadScheme},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewScheme(c.prefix, c.version, c.w)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("NewScheme(%q, %d, %d) = %v, want %v %sTestNewScheme/%s)", c.prefix, c.version, c.w, err, c.want, repro, c.name)
			}
		})
	}
}

func mustScheme(t *testing.T, prefix string, version, w int) Scheme {
	t.Helper()
	s, err := NewScheme(prefix, version, w)
	if err != nil {
		t.Fatalf("NewScheme: %v %s'TestKey|TestParse')", err, repro)
	}
	return s
}

func TestKey(t *testing.T) {
	s := mustScheme(t, "llm-kv", 2, 3)
	k, err := s.Key([]byte{0x00, 0xab, 0xff})
	if err != nil || k != "llm-kv/v2/00abff" {
		t.Fatalf("Key = %q, %v; want llm-kv/v2/00abff %sTestKey)", k, err, repro)
	}
	if _, err := s.Key([]byte{1, 2}); !errors.Is(err, ErrBadName) {
		t.Fatalf("Key of a 2-byte name = %v, want ErrBadName %sTestKey)", err, repro)
	}
	if _, err := (Scheme{}).Key([]byte{1}); !errors.Is(err, ErrBadScheme) {
		t.Fatalf("zero Scheme Key = %v, want ErrBadScheme %sTestKey)", err, repro)
	}
}

func TestParse(t *testing.T) {
	s := mustScheme(t, "kv", 1, 2)
	cases := []struct {
		name, key string
		want      []byte
	}{
		{"ok", "kv/v1/0aff", []byte{0x0a, 0xff}},
		{"other-prefix", "kw/v1/0aff", nil},
		{"prefix-extended", "kvx/v1/0aff", nil},
		{"other-version", "kv/v2/0aff", nil},
		{"version-10", "kv/v10/0aff", nil},
		{"short", "kv/v1/0a", nil},
		{"long", "kv/v1/0aff00", nil},
		{"uppercase", "kv/v1/0AFF", nil},
		{"not-hex", "kv/v1/0agg", nil},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Parse(c.key)
			if c.want == nil {
				if !errors.Is(err, ErrForeignKey) {
					t.Fatalf("Parse(%q) = %x, %v; want ErrForeignKey %sTestParse/%s)", c.key, got, err, repro, c.name)
				}
				return
			}
			if err != nil || !bytes.Equal(got, c.want) {
				t.Fatalf("Parse(%q) = %x, %v; want %x %sTestParse/%s)", c.key, got, err, c.want, repro, c.name)
			}
		})
	}
}

// TestRoundTrip: Parse(Key(n)) == n for every scheme and name; a key of one
// scheme never parses under a scheme with another prefix or version.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringMatching(`[!-.0-~]{1,63}`).Draw(t, "prefix")
		version := rapid.IntRange(1, 1000).Draw(t, "version")
		w := rapid.IntRange(1, 32).Draw(t, "width")
		name := rapid.SliceOfN(rapid.Byte(), w, w).Draw(t, "name")
		s, err := NewScheme(prefix, version, w)
		if err != nil {
			t.Fatalf("NewScheme(%q, %d, %d): %v %sTestRoundTrip)", prefix, version, w, err, repro)
		}
		k, err := s.Key(name)
		if err != nil {
			t.Fatalf("Key: %v %sTestRoundTrip)", err, repro)
		}
		got, err := s.Parse(k)
		if err != nil || !bytes.Equal(got, name) {
			t.Fatalf("Parse(Key(%x)) = %x, %v %sTestRoundTrip)", name, got, err, repro)
		}
		other, _ := NewScheme(prefix, version+1, w)
		if _, err := other.Parse(k); !errors.Is(err, ErrForeignKey) {
			t.Fatalf("version %d parsed a v%d key %q: %v %sTestRoundTrip)", version+1, version, k, err, repro)
		}
		other, _ = NewScheme(prefix+"x", version, w)
		if _, err := other.Parse(k); !errors.Is(err, ErrForeignKey) {
			t.Fatalf("prefix %q parsed key %q: %v %sTestRoundTrip)", prefix+"x", k, err, repro)
		}
	})
}
