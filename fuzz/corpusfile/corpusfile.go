// Package corpusfile reads and writes go test's fuzz corpus files of one
// []byte or string value — the format go test -fuzz writes under
// testdata/fuzz/<Target>/ ("go test fuzz v1", then []byte("…") or
// string("…")). The seed-corpus tests of fuzz and fuzz/machine and the
// corpus zips of fuzz/fuzztool share it, so there is one reader of the
// format.
package corpusfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrFormat is the error of a file that is not a one-value corpus file.
var ErrFormat = errors.New(`not a one-value corpus file (go test fuzz v1, then []byte("…") or string("…"))`)

// ErrStale is Sync's error when the file is missing or holds other bytes.
var ErrStale = errors.New("corpus file missing or stale")

// Entry is one committed seed corpus file: testdata/fuzz/<Target>/<Name>.
type Entry struct {
	Target, Name string
	Value        any // []byte or string
}

// Path is the entry's file, relative to its package's directory.
func (e Entry) Path() string { return filepath.Join("testdata", "fuzz", e.Target, e.Name) }

// Body is the entry's file in go's corpus format.
func (e Entry) Body() string { return Encode(e.Value) }

// Sync writes the entry's file when write is set (its directory too), then
// checks that the file holds Body: ErrStale (wrapped, naming the path) when
// it is missing or different.
func (e Entry) Sync(write bool) error {
	if write {
		if err := os.MkdirAll(filepath.Dir(e.Path()), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(e.Path(), []byte(e.Body()), 0o644); err != nil {
			return err
		}
	}
	got, err := os.ReadFile(e.Path())
	if err != nil || string(got) != e.Body() {
		return fmt.Errorf("%w: %s (%v)", ErrStale, e.Path(), err)
	}
	return nil
}

// Encode is v ([]byte or string) as a corpus file; another type panics (a
// caller's bug: the fuzz targets here take one []byte or string).
func Encode(v any) string {
	switch v := v.(type) {
	case []byte:
		return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", v)
	case string:
		return fmt.Sprintf("go test fuzz v1\nstring(%q)\n", v)
	}
	panic(fmt.Sprintf("corpusfile: a value of type %T", v))
}

// Parse reads the one value of a corpus file's text: a []byte or a string.
func Parse(text string) (any, error) {
	lines := strings.SplitN(strings.TrimRight(text, "\n"), "\n", 2)
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, ErrFormat
	}
	body := strings.TrimSpace(lines[1])
	for _, kind := range []string{"[]byte", "string"} {
		if inner, ok := strings.CutPrefix(body, kind+"("); ok && strings.HasSuffix(inner, ")") {
			s, err := strconv.Unquote(strings.TrimSuffix(inner, ")"))
			if err != nil {
				return nil, fmt.Errorf("%w: value %.40s…: %v", ErrFormat, inner, err)
			}
			if kind == "string" {
				return s, nil
			}
			return []byte(s), nil
		}
	}
	return nil, ErrFormat
}

// Read is Parse of the file at path.
func Read(path string) (any, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(text))
}

// Bytes is the value's bytes ([]byte as it is, a string's bytes).
func Bytes(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, _ := v.([]byte)
	return b
}

// File is one file of a committed corpus and its value.
type File struct {
	Target, Path string
	Value        any // []byte or string
}

// Files reads every file of testdata/fuzz/<Target>/ (targets and files in
// name order). A target directory without a file, or a file that is not a
// one-value corpus file, is an error naming it: a corpus that no longer
// replays must fail, never pass empty.
func Files() ([]File, error) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "fuzz"))
	if err != nil {
		return nil, err
	}
	var out []File
	for _, d := range dirs {
		paths, _ := filepath.Glob(filepath.Join("testdata", "fuzz", d.Name(), "*"))
		if len(paths) == 0 {
			return nil, fmt.Errorf("testdata/fuzz/%s is empty", d.Name())
		}
		for _, p := range paths {
			v, err := Read(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, File{Target: d.Name(), Path: p, Value: v})
		}
	}
	return out, nil
}
