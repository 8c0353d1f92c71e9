package backend

import (
	"go/build/constraint"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// zooNames lists the planted bugs: one zoo_<name>.go file each.
func zooNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("zoo_*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		n := strings.TrimSuffix(strings.TrimPrefix(f, "zoo_"), ".go")
		if n == "off" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestZooTags: every bug file is built only under its own tag and sets zoo
// to its name, and zoo_off.go is built exactly when no zoo tag is set, so a
// normal build carries no planted bug and every tagged build exactly one.
func TestZooTags(t *testing.T) {
	const repro = "(repro: go test ./backend -run TestZooTags)"
	names := zooNames(t)
	if len(names) < 15 {
		t.Fatalf("%d planted bugs, want at least 15 %s", len(names), repro)
	}
	for _, n := range names {
		src, err := os.ReadFile("zoo_" + n + ".go")
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		if !strings.HasPrefix(text, "//go:build zoo_"+n+"\n") || !strings.Contains(text, `const zoo = "`+n+`"`) {
			t.Errorf("zoo_%s.go must start with //go:build zoo_%s and set const zoo = %q %s", n, n, n, repro)
		}
	}
	src, err := os.ReadFile("zoo_off.go")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(src), "\n")
	expr, err := constraint.Parse(line)
	if err != nil {
		t.Fatalf("zoo_off.go: %v %s", err, repro)
	}
	want := make([]string, len(names))
	for i, n := range names {
		want[i] = "!zoo_" + n
	}
	wantLine := "//go:build " + strings.Join(want, " && ")
	off := func(tags ...string) bool {
		return expr.Eval(func(tag string) bool { return slices.Contains(tags, tag) })
	}
	if !off() {
		t.Errorf("zoo_off.go is not built without tags; want first line:\n%s\n%s", wantLine, repro)
	}
	for _, n := range names {
		if off("zoo_" + n) {
			t.Errorf("zoo_off.go is built with tag zoo_%s too (duplicate const zoo); want first line:\n%s\n%s", n, wantLine, repro)
		}
	}
	if zoo != "" || ZooBug() != "" {
		t.Errorf("untagged build carries planted bug %q %s", zoo, repro)
	}
}
