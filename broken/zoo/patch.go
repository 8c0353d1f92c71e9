package zoo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PatchPath is where bug name's patch lives, relative to the repository
// root.
func PatchPath(name string) string {
	return filepath.Join("broken", "zoo", "patches", name+".patch")
}

// plantedFile is the file an overlay adds to this package so that a build
// with the overlay knows which bug it carries ([Planted]). No such file
// exists on disk.
const plantedFile = "planted_overlay.go"

// Overlay plants bug name in a throw-away copy of the backend: it applies the
// bug's patch to copies of the files it touches in the repository at root,
// writes them under dir with the overlay file overlay.json, and returns that
// file's path, for `go build|test|run -overlay <path>`. The overlay also
// adds a file to this package that sets [Planted] to name, so a binary built
// with it can tell that the patch took.
func Overlay(root, dir, name string) (string, error) {
	if _, ok := Lookup(name); !ok {
		return "", fmt.Errorf("unknown bug %q (see: go run ./broken/zoo/realhunt list)", name)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	patch, err := os.ReadFile(filepath.Join(root, PatchPath(name)))
	if err != nil {
		return "", err
	}
	files, err := Apply(root, patch)
	if err != nil {
		return "", fmt.Errorf("%s: %w", PatchPath(name), err)
	}
	files[filepath.Join("broken", "zoo", plantedFile)] = fmt.Appendf(nil, "package zoo\n\nfunc init() { planted = %q }\n", name)
	replace := map[string]string{}
	for path, text := range files {
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, text, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, path)] = dst
	}
	js, err := json.MarshalIndent(struct{ Replace map[string]string }{replace}, "", "\t")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "overlay.json")
	return out, os.WriteFile(out, append(js, '\n'), 0o644)
}

// Apply applies a patch in `git diff` format to the files under root and
// returns the new text of every file it touches, by path relative to root.
// It only modifies files (no creation, deletion or rename), and every hunk
// must match its file exactly; a hunk may sit some lines off the line its
// header names (the file was edited above it), as with git apply. Text
// before the first "diff --git" line is ignored.
func Apply(root string, patch []byte) (map[string][]byte, error) {
	fps, err := parsePatch(string(patch))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, fp := range fps {
		if _, dup := out[fp.path]; dup {
			return nil, fmt.Errorf("%s: patched twice", fp.path)
		}
		src, err := os.ReadFile(filepath.Join(root, fp.path))
		if err != nil {
			return nil, err
		}
		text, err := applyHunks(string(src), fp.hunks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fp.path, err)
		}
		out[fp.path] = []byte(text)
	}
	return out, nil
}

type hunk struct {
	line     int      // first line of old in the original file, 1-based (for an empty old: the line it follows)
	old, new []string // lines with their "\n"
}

type filePatch struct {
	path  string
	hunks []hunk
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

func parsePatch(patch string) ([]filePatch, error) {
	lines := strings.SplitAfter(patch, "\n")
	var fps []filePatch
	var cur *filePatch
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			fps = append(fps, filePatch{})
			cur = &fps[len(fps)-1]
		case cur == nil || l == "" || strings.HasPrefix(l, "index "):
		case strings.HasPrefix(l, "--- "):
			if !strings.HasPrefix(l, "--- a/") {
				return nil, fmt.Errorf("line %d: %q: only changes to existing files are supported", i+1, strings.TrimSpace(l))
			}
		case strings.HasPrefix(l, "+++ "):
			p := strings.TrimSpace(l[4:])
			if !strings.HasPrefix(p, "b/") || strings.TrimSpace(lines[i-1]) != "--- a/"+p[2:] {
				return nil, fmt.Errorf("line %d: %q does not follow --- a/ of the same file", i+1, strings.TrimSpace(l))
			}
			cur.path = filepath.FromSlash(p[2:])
		case strings.HasPrefix(l, "@@ "):
			m := hunkHeader.FindStringSubmatch(l)
			if m == nil || cur.path == "" {
				return nil, fmt.Errorf("line %d: bad hunk header %q", i+1, strings.TrimSpace(l))
			}
			h := hunk{line: atoi(m[1], 0)}
			nOld, nNew := atoi(m[2], 1), atoi(m[4], 1)
			for i+1 < len(lines) && (len(h.old) < nOld || len(h.new) < nNew) {
				i++
				body := lines[i]
				if !strings.HasSuffix(body, "\n") || body == "\n" {
					return nil, fmt.Errorf("line %d: hunk cut short", i+1)
				}
				switch body[0] {
				case ' ':
					h.old, h.new = append(h.old, body[1:]), append(h.new, body[1:])
				case '-':
					h.old = append(h.old, body[1:])
				case '+':
					h.new = append(h.new, body[1:])
				default:
					return nil, fmt.Errorf("line %d: %q in a hunk (no newline at end of file is not supported)", i+1, strings.TrimSpace(body))
				}
			}
			if len(h.old) != nOld || len(h.new) != nNew {
				return nil, fmt.Errorf("line %d: hunk has %d/%d lines, its header says %d/%d", i+1, len(h.old), len(h.new), nOld, nNew)
			}
			cur.hunks = append(cur.hunks, h)
		default:
			return nil, fmt.Errorf("line %d: unsupported patch line %q", i+1, strings.TrimSpace(l))
		}
	}
	for _, fp := range fps {
		if len(fp.hunks) == 0 {
			return nil, fmt.Errorf("%s: no hunks", fp.path)
		}
	}
	if len(fps) == 0 {
		return nil, fmt.Errorf("no diff --git section")
	}
	return fps, nil
}

func atoi(s string, empty int) int {
	if s == "" {
		return empty
	}
	n, _ := strconv.Atoi(s)
	return n
}

// applyHunks applies hs in order; each must match exactly, at the nearest
// position to its stated line after the previous hunk.
func applyHunks(src string, hs []hunk) (string, error) {
	lines := strings.SplitAfter(src, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []string
	next := 0 // first line not yet copied
	for k, h := range hs {
		want := h.line - 1
		if len(h.old) == 0 {
			want = h.line
		}
		at := -1
		for d := 0; at < 0 && (want-d >= next || want+d+len(h.old) <= len(lines)); d++ {
			for _, p := range []int{want + d, want - d} {
				if p >= next && p+len(h.old) <= len(lines) && slices.Equal(lines[p:p+len(h.old)], h.old) {
					at = p
					break
				}
			}
		}
		if at < 0 {
			return "", fmt.Errorf("hunk %d (line %d) does not match", k+1, h.line)
		}
		out = append(append(out, lines[next:at]...), h.new...)
		next = at + len(h.old)
	}
	return strings.Join(append(out, lines[next:]...), ""), nil
}
