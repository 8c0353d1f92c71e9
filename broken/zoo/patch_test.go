package zoo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApply: a hunk applies where its context matches, also some lines off
// its stated line; a hunk whose context does not match, a file creation and
// a truncated hunk are refused.
func TestApply(t *testing.T) {
	const repro = "(repro: go test ./broken/zoo -run TestApply)"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("a\nb\nc\nd\ne\nf\ng\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := "diff --git a/f.go b/f.go\nindex 1..2 100644\n--- a/f.go\n+++ b/f.go\n"
	for _, tc := range []struct {
		name, patch, want, err string
	}{
		{"at its line", head + "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n", "a\nb\nC\nd\ne\nf\ng\n", ""},
		{"two lines off", head + "@@ -4,3 +4,4 @@\n b\n c\n+x\n d\n", "a\nb\nc\nx\nd\ne\nf\ng\n", ""},
		{"two hunks", head + "@@ -1,2 +1,1 @@\n-a\n b\n@@ -6,2 +5,2 @@\n f\n-g\n+G\n", "b\nc\nd\ne\nf\nG\n", ""},
		{"context differs", head + "@@ -2,3 +2,3 @@\n b\n-c\n+C\n D\n", "", "does not match"},
		{"new file", "diff --git a/n.go b/n.go\nnew file mode 100644\n--- /dev/null\n+++ b/n.go\n@@ -0,0 +1 @@\n+x\n", "", "unsupported"},
		{"cut short", head + "@@ -2,3 +2,3 @@\n b\n-c\n", "", "cut short"},
	} {
		files, err := Apply(dir, []byte(tc.patch))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q %s", tc.name, err, tc.err, repro)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v %s", tc.name, err, repro)
		case tc.err == "" && string(files["f.go"]) != tc.want:
			t.Errorf("%s: got %q, want %q %s", tc.name, files["f.go"], tc.want, repro)
		}
	}
}
