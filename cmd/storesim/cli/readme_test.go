package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeLine is one command line of the README's "Using it" section.
type readmeLine struct {
	n       int    // line number in README.md
	cmd     string // the command, without its comment
	comment string
	exit    int // what the comment says it exits with (default 0)
}

var exitComment = regexp.MustCompile(`\bexit (\d)\b`)

// readmeCommands extracts the command lines of the ```sh blocks of the
// README section titled heading, in order.
func readmeCommands(readme, heading string) ([]readmeLine, error) {
	lines := strings.Split(readme, "\n")
	var out []readmeLine
	in, block := false, false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## "+heading
			continue
		case !in:
			continue
		case strings.HasPrefix(l, "```"):
			block = !block && strings.TrimPrefix(l, "```") == "sh"
			continue
		case !block || strings.TrimSpace(l) == "":
			continue
		}
		cmd, comment, _ := strings.Cut(l, " #")
		rl := readmeLine{n: i + 1, cmd: strings.TrimSpace(cmd), comment: strings.TrimSpace(comment)}
		if m := exitComment.FindStringSubmatch(rl.comment); m != nil {
			rl.exit, _ = strconv.Atoi(m[1])
		}
		out = append(out, rl)
	}
	if len(out) == 0 {
		return nil, os.ErrNotExist
	}
	return out, nil
}

// TestReadmeRunsInOrder: the command lines of the README's "Using it"
// section run in order, as printed, in a fresh directory: the install line
// builds the binary (once, into a temporary GOBIN), every storesim line
// runs with it on PATH and gives the exit code its comment states (0
// unless it says "exit N"), so a command that needs an earlier one's output
// (replay out/seed-17) fails here when that earlier command is missing.
// The line that needs a real Redis runs against STORESIM_REDIS_ADDR, and
// is skipped, saying so, when that is unset. The README also names the Go
// version of go.mod.
func TestReadmeRunsInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README example (about 20 s): not with -short")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVer == nil || !strings.Contains(string(text), "Go "+string(goVer[1])) {
		t.Fatalf("README.md does not name the Go version of go.mod (%s) %s", goVer, repro(t))
	}
	lines, err := readmeCommands(string(text), "Using it")
	if err != nil {
		t.Fatalf("README.md has no ```sh block under \"## Using it\" %s", repro(t))
	}
	if lines[0].cmd != "go install ./cmd/storesim" {
		t.Fatalf("README.md line %d: the first command of \"Using it\" is %q, want the install line go install ./cmd/storesim %s", lines[0].n, lines[0].cmd, repro(t))
	}
	tmp := t.TempDir()
	bin, work := filepath.Join(tmp, "bin"), filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	// Files the examples name relative to the repository root.
	if err := os.Symlink(filepath.Join(root, "scenarios"), filepath.Join(work, "scenarios")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	redis := os.Getenv("STORESIM_REDIS_ADDR")
	ran, skipped := 0, 0
	for _, l := range lines {
		cmd := l.cmd
		dir := work
		switch {
		case strings.HasPrefix(cmd, "go "):
			dir = root // the install line builds the binary from the repository, once
		case !strings.HasPrefix(cmd, "storesim "):
			t.Fatalf("README.md line %d: %q is neither go nor storesim %s", l.n, cmd, repro(t))
		}
		if strings.Contains(l.comment, "needs Redis") {
			if redis == "" {
				t.Logf("README.md line %d skipped: %q needs a real Redis; set STORESIM_REDIS_ADDR (make test does) to run it", l.n, cmd)
				skipped++
				continue
			}
			cmd = regexp.MustCompile(`redis://\S+`).ReplaceAllString(cmd, "redis://"+redis)
		}
		if strings.Contains(l.comment, "needs memcached") {
			mc := os.Getenv("STORESIM_MEMCACHED_ADDR")
			if mc == "" {
				t.Logf("README.md line %d skipped: %q needs a real memcached; set STORESIM_MEMCACHED_ADDR (make test does) to run it", l.n, cmd)
				skipped++
				continue
			}
			cmd = regexp.MustCompile(`memcached://\S+`).ReplaceAllString(cmd, "memcached://"+mc)
		}
		// A bound on a hung command, not a timing assertion.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Dir, c.Env = dir, env
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("README.md line %d: %s: %v %s", l.n, cmd, err, repro(t))
		}
		if code != l.exit {
			t.Fatalf("README.md line %d: %s exited %d, the README says %d; its output:\n%s%s", l.n, cmd, code, l.exit, clip(out.String(), 4000), repro(t))
		}
		ran++
	}
	if ran+skipped != len(lines) {
		t.Fatalf("only %d of %d README commands ran %s", ran, len(lines), repro(t))
	}
	// What the examples promise to leave behind.
	for _, f := range []string{"out/seed-17/oplog.txt", "out/seed-17/timeline.html", "out/timeline.html", "out/min.txt"} {
		if st, err := os.Stat(filepath.Join(work, f)); err != nil || st.Size() == 0 {
			t.Fatalf("after the README's commands, %s is missing: %v %s", f, err, repro(t))
		}
	}
}

// TestReadmeCommandsParsed: the extraction sees every line of an sh block
// of the section, their exit comments, and nothing outside the section or
// in blocks of other languages — so a README example cannot hide from
// TestReadmeRunsInOrder.
func TestReadmeCommandsParsed(t *testing.T) {
	md := "## Other\n```sh\nstoresim nope\n```\n## Using it\ntext\n```sh\ngo install ./cmd/storesim\nstoresim run   # fine\n\nstoresim replay x  # exit 1: fails\n```\n```go\nfunc x() {}\n```\n## Next\n```sh\nstoresim later\n```\n"
	got, err := readmeCommands(md, "Using it")
	if err != nil || len(got) != 3 || got[0].cmd != "go install ./cmd/storesim" || got[1].cmd != "storesim run" || got[1].exit != 0 ||
		got[2].cmd != "storesim replay x" || got[2].exit != 1 || got[2].n != 11 {
		t.Fatalf("readmeCommands: %+v, %v %s", got, err, repro(t))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "\n…\n" + s[len(s)-n/2:]
}

// TestLicenseAndChangelog: the repository carries the full Apache-2.0 text
// (all nine sections, the end of the terms and the appendix) and a
// changelog with the first version and the unreleased changes, and the
// README links both.
func TestLicenseAndChangelog(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatalf("%s: %v %s", name, err, repro(t))
		}
		return string(b)
	}
	lic := read("LICENSE")
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"1. Definitions.", "2. Grant of Copyright License.", "3. Grant of Patent License.", "4. Redistribution.", "5. Submission of Contributions.",
		"6. Trademarks.", "7. Disclaimer of Warranty.", "8. Limitation of Liability.", "9. Accepting Warranty or Additional Liability.",
		"END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(lic, want) {
			t.Fatalf("LICENSE lacks %q: not the full Apache-2.0 text %s", want, repro(t))
		}
	}
	if n := strings.Count(lic, "\n"); n < 190 {
		t.Fatalf("LICENSE has %d lines; the full Apache-2.0 text has about 200 %s", n, repro(t))
	}
	cl := read("CHANGELOG.md")
	for _, want := range []string{"## [Unreleased]", "## [0.1.0]", "end marker", "timeline", "--version", "LICENSE"} {
		if !strings.Contains(cl, want) {
			t.Fatalf("CHANGELOG.md lacks %q %s", want, repro(t))
		}
	}
	if readme := read("README.md"); !strings.Contains(readme, "(LICENSE)") || !strings.Contains(readme, "(CHANGELOG.md)") {
		t.Fatalf("README.md does not link LICENSE and CHANGELOG.md %s", repro(t))
	}
}
