package scenarios

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
)

// Ext is the extension of scenario files; RunDir runs every file with it.
const Ext = ".txt"

// Options configures a run of scenario files.
type Options struct {
	// Rewrite replaces each block's expected output with what the run
	// printed and writes the file back (the -rewrite flag). Read the diff
	// before committing: a rewrite accepts whatever the code does now.
	Rewrite bool
	// Driver, when set, replaces the driver of every endpoint (e.g.
	// "broken:LiesAboutAccess"): a scenario that exercises a rule must then
	// fail.
	Driver string
	// Factory, when set, builds every endpoint's driver instead of the
	// registry, given its name (a CLI with drivers of its own).
	Factory engine.Factory
	// Log, when set, receives the rewrite warning.
	Log io.Writer
	_   struct{}
}

// FileResult is what running one file found.
type FileResult struct {
	Path      string
	Blocks    int        // command blocks run
	Failures  []Mismatch // blocks whose output differed from the file
	Rewritten bool       // Options.Rewrite changed the file
	// Output is the whole file as the run would write it (the file itself
	// with every expected output replaced by the actual one).
	Output string
	// Rules lists, sorted, the rule id of every violation the run printed
	// (inline "!!" lines and `check` output); empty for a clean run.
	Rules []rules.ID
}

// Passed reports whether every block printed what the file expects.
func (r FileResult) Passed() bool { return len(r.Failures) == 0 }

// Mismatch is one block whose output differed from the expected output.
type Mismatch struct {
	Line      int // the command's line
	Command   string
	Want, Got string
}

// Fired lists, in order of appearance, the rules the actual output names
// that the expected output does not: the checks that fired where the file
// expected none (or other ones). A mismatch without a rule is a change of
// behaviour no check judged.
func (m Mismatch) Fired() []rules.ID {
	want := map[rules.ID]bool{}
	for _, id := range citedRules(m.Want) {
		want[id] = true
	}
	var out []rules.ID
	for _, id := range citedRules(m.Got) {
		if !want[id] {
			want[id] = true
			out = append(out, id)
		}
	}
	return out
}

// citedRules are the contract ids a text names: D-…, B-…, S-… anywhere, and
// the word ids (capabilities, liveness, harness) on violation lines ("!!").
func citedRules(text string) []rules.ID {
	var out []rules.ID
	for _, line := range strings.Split(text, "\n") {
		violation := strings.Contains(line, "!!")
		for _, f := range strings.FieldsFunc(line, func(r rune) bool {
			return !(r == '-' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			coded := len(f) >= 3 && f[1] == '-' && strings.ContainsRune("DBS", rune(f[0]))
			if !coded && !violation {
				continue
			}
			if id, err := rules.Parse(f); err == nil {
				out = append(out, id)
			}
		}
	}
	return out
}

// Diff shows the mismatch as a line diff: "-" expected, "+" actual.
func (m Mismatch) Diff() string { return lineDiff(m.Want, m.Got) }

func (m Mismatch) String() string {
	head := fmt.Sprintf("line %d: %s", m.Line, m.Command)
	if fired := m.Fired(); len(fired) > 0 {
		names := make([]string, len(fired))
		for i, id := range fired {
			names[i] = id.String()
		}
		head += "\nrule fired: " + strings.Join(names, ", ")
	}
	return head + "\n" + m.Diff()
}

// RunFile runs one scenario file. A malformed file (truncated block, unknown
// command, bad argument, undefined name) is an *Error naming the file and
// line, and nothing is rewritten; a block whose output differs is a
// Mismatch in the result (or, with Options.Rewrite, is rewritten).
func RunFile(path string, opts Options) (FileResult, error) {
	if st, err := os.Stat(path); err == nil && st.Size() > workload.MaxFileBytes {
		return FileResult{Path: path}, &Error{path, 1, fmt.Sprintf("the file is %d bytes; at most %d (%d MiB) per scenario file (%s)", st.Size(), workload.MaxFileBytes, workload.MaxFileBytes>>20, workload.LimitsDoc)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return FileResult{Path: path}, err
	}
	res, err := Run(path, string(data), opts)
	if err != nil || !opts.Rewrite || res.Output == string(data) {
		return res, err
	}
	if err := os.WriteFile(path, []byte(res.Output), 0o644); err != nil {
		return res, err
	}
	res.Rewritten = true
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "scenarios: rewrote %s — read the diff before committing (git diff %s)\n", path, path)
	}
	return res, nil
}

// Files lists the scenario files (*.txt) directly in dir, sorted.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), Ext) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// RunDir runs every scenario file in dir, in name order. It stops at the
// first file that cannot be run and returns that error with the results so
// far.
func RunDir(dir string, opts Options) ([]FileResult, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	var out []FileResult
	for _, f := range files {
		res, err := RunFile(f, opts)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// Run runs scenario text; name is used in errors and results.
func Run(name, text string, opts Options) (res FileResult, err error) {
	res.Path = name
	items, err := parse(name, text)
	if err != nil {
		return res, err
	}
	w := newScenarioRun(name, opts)
	var out strings.Builder
	for _, it := range items {
		if it.block == nil {
			out.WriteString(it.verbatim + "\n")
			continue
		}
		b := it.block
		got, err := w.exec(b)
		if err != nil {
			return res, err
		}
		res.Blocks++
		if want := strings.Join(trimRight(b.want), "\n"); want != got {
			res.Failures = append(res.Failures, Mismatch{Line: b.line, Command: b.text, Want: want, Got: got})
		}
		out.WriteString(b.text + "\n----\n")
		if got != "" {
			out.WriteString(got + "\n")
		}
	}
	res.Output = out.String()
	for r := range w.rules {
		res.Rules = append(res.Rules, r)
	}
	sort.Slice(res.Rules, func(i, j int) bool { return res.Rules[i].String() < res.Rules[j].String() })
	return res, nil
}

// exec runs one command and returns its output. A panic in the code under
// test is reported as an error naming the line, never passed on.
func (w *scenarioRun) exec(b *block) (got string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s:%d: %s panicked: %v", w.file, b.line, b.cmd, p)
		}
	}()
	w.out, w.indent = nil, ""
	if err := commands[b.cmd].run(w, b); err != nil {
		return "", err
	}
	if w.s != nil {
		w.poll()
	}
	return strings.Join(trimRight(w.out), "\n"), nil
}

func trimRight(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t")
	}
	return out
}

// lineDiff is a small LCS line diff: scenario outputs are short.
func lineDiff(want, got string) string {
	a, b := splitLines(want), splitLines(got)
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + b[j] + "\n")
			j++
		default:
			sb.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
