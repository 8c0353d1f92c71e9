package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the storesim module's root, from this package's directory.
const repoRoot = "../../.."

// readmeSnippets are README.md's Go blocks that name their file on their
// first line ("// cmd/mystore/main.go"): path → the block, as written.
func readmeSnippets(t *testing.T) map[string]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatalf("README.md: %v %s", err, repro(t))
	}
	out := map[string]string{}
	for _, block := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(text), -1) {
		first, _, _ := strings.Cut(block[1], "\n")
		if path, ok := strings.CutPrefix(first, "// "); ok && strings.HasSuffix(path, ".go") {
			out[path] = block[1]
		}
	}
	return out
}

// mineGo is the driver of the module outside the repository: the
// reference driver with one planted bug, through package broken's
// exported constructor (it reports access ENDED, then writes the slot
// again: D-ACCESS-END).
const mineGo = `// Package mine is a store driver with one planted bug.
package mine

import (
	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// New builds the driver on rt over store, named name.
func New(rt sim.Runtime, store *memdriver.Store, name string) drivers.Driver {
	d, err := broken.New(broken.LiesAboutAccess, rt, store, memdriver.Config{Name: name})
	if err != nil {
		panic(err)
	}
	return d
}
`

// outOfTree is a module in a temporary directory: the README's two
// snippets, exactly as written, around package mine, built against this
// checkout through a replace, offline (every dependency is in the module
// cache).
type outOfTree struct {
	t   *testing.T
	dir string
	env []string
}

func newOutOfTree(t *testing.T) *outOfTree {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	snippets := readmeSnippets(t)
	m := &outOfTree{t: t, dir: t.TempDir()}
	// Offline, the module needs the go.mod of every module in the full
	// graph in the cache, which building this repository alone does not
	// fetch on a fresh machine: loading the graph here once fetches them.
	list := exec.Command("go", "list", "-m", "all")
	list.Dir = root
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("go list -m all in %s (to fill the module cache): %v\n%s%s", root, err, out, repro(t))
	}
	m.env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).FindString(string(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":       fmt.Sprintf("module example.com/mystore\n\n%s\n\nrequire github.com/storesim/storesim v0.0.0\n\nreplace github.com/storesim/storesim => %s\n", goLine, root),
		"go.sum":       string(sum),
		"mine/mine.go": mineGo,
	}
	for _, path := range []string{"mine/conformance_test.go", "cmd/mystore/main.go"} {
		body, ok := snippets[path]
		if !ok {
			t.Fatalf("README.md has no Go block starting with // %s (it has %d named blocks) %s", path, len(snippets), repro(t))
		}
		files[path] = body
	}
	for path, body := range files {
		full := filepath.Join(m.dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := m.command("go", "build", "-o", filepath.Join(m.dir, "bin", "mystore"), "./cmd/mystore").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mystore of the README's snippet, outside the repository: %v\n%s%s", err, out, repro(t))
	}
	if out, err := m.command("go", "vet", "./...").CombinedOutput(); err != nil {
		t.Fatalf("go vet of the README's snippets: %v\n%s%s", err, out, repro(t))
	}
	return m
}

func (m *outOfTree) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = m.dir, m.env
	return cmd
}

// run runs a command line in the module (mystore is its binary) and
// returns its exit code and output.
func (m *outOfTree) run(line []string) cli {
	m.t.Helper()
	name := line[0]
	if name == "mystore" {
		name = filepath.Join(m.dir, "bin", "mystore")
	}
	var out, errb strings.Builder
	cmd := m.command(name, line[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatalf("%q: %v %s", line, err, repro(m.t))
	}
	return cli{code, out.String(), errb.String()}
}

// shellWords splits a printed repro line as sh would (single quotes only).
func shellWords(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

var (
	goTestRepro = regexp.MustCompile(`\(repro: (go test \./mine -run '[^']+' -args -drivertest\.seed=\d+(?: -drivertest\.directed)?)\)`)
	goTestFirst = regexp.MustCompile(`violation\(s\):\n\s+(\[counts against [^\]]+\] .*)\n`)
)

// TestReadmeOutOfTree is the done-when: a module outside the
// repository, built with a replace from the README's snippets exactly as
// written, gets the CLI with its own driver through cli.Main; its certify
// fails on the planted bug's rule (D-ACCESS-END), and every repro line it
// prints, run with that module's binary, shows the same violation (same
// rule, case and seed); a swarm failure's printed repro replays the same
// rule and trace with that binary; and in its own go test, the failure's
// go test repro reruns the same violation, while -run of one group runs
// only that group.
func TestReadmeOutOfTree(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go tool is needed to build a module outside the repository: %v %s", err, repro(t))
	}
	m := newOutOfTree(t)

	t.Run("certify", func(t *testing.T) {
		got := m.run([]string{"mystore", "certify", "--driver", "mine", "--short"})
		rows := failures(got.stdout)
		if got.code != 1 || rows["D-ACCESS-END"][0] == "" || !strings.Contains(got.stderr, "mine NOT certified: failed D-ACCESS-END") {
			t.Fatalf("mystore certify --driver mine: exit %d, failing rows %v; want exit 1 failing D-ACCESS-END:\n%s%s %s", got.code, rows, got.stdout, got.stderr, repro(t))
		}
		for row, f := range rows {
			if !(strings.HasPrefix(f[1], "mystore certify --driver mine --rule ") && strings.Contains(f[1], " --case ") && strings.Contains(f[1], " --seed ")) &&
				!strings.HasPrefix(f[1], "mystore replay --seed ") {
				t.Fatalf("row %s: repro %q names no run of mystore %s", row, f[1], repro(t))
			}
			line := strings.Fields(f[1])
			r := m.run(line)
			if line[1] == "replay" {
				text, _, _ := strings.Cut(f[0], " (swarm ")
				if r.code != 1 || !strings.Contains(r.stdout, text+"\n") {
					t.Fatalf("%s: exit %d; want the violation %q:\n%s%s %s", f[1], r.code, f[0], r.stdout, r.stderr, repro(t))
				}
				continue
			}
			if again := failures(r.stdout); r.code != 1 || again[row][0] != f[0] {
				t.Fatalf("%s: exit %d, row %s first %q; want %q:\n%s%s %s", f[1], r.code, row, again[row][0], f[0], r.stdout, r.stderr, repro(t))
			}
		}
	})

	t.Run("run", func(t *testing.T) {
		got := m.run([]string{"mystore", "run", "--driver", "mine", "--seeds", "0:10", "--ops", "30", "--json"})
		var fail map[string]any
		for _, r := range records(t, got.stdout) {
			if r["type"] == "seed" && r["verdict"] != "pass" && fail == nil {
				fail = r
			}
		}
		if got.code != 1 || fail == nil || fail["rule"] != "D-ACCESS-END" || !strings.HasPrefix(fail["repro"].(string), "mystore replay --seed ") {
			t.Fatalf("mystore run --driver mine: exit %d, first failure %v; want a D-ACCESS-END seed whose repro names mystore:\n%s %s", got.code, fail, got.stderr, repro(t))
		}
		r := m.run(append(strings.Fields(fail["repro"].(string)), "--json"))
		again := records(t, r.stdout)
		if r.code != 1 || len(again) != 1 || again[0]["trace_hash"] != fail["trace_hash"] || again[0]["rule"] != fail["rule"] {
			t.Fatalf("%s: exit %d, %v; the swarm printed %v\n%s %s", fail["repro"], r.code, again, fail, r.stderr, repro(t))
		}
	})

	t.Run("go-test", func(t *testing.T) {
		got := m.run([]string{"go", "test", "./mine", "-run", "TestConformance/D-ACCESS-END$", "-short", "-count=1", "-v"})
		for _, line := range strings.Split(got.stdout, "\n") {
			if name, ok := strings.CutPrefix(line, "=== RUN   "); ok && name != "TestConformance" && !strings.HasPrefix(name, "TestConformance/D-ACCESS-END") {
				t.Fatalf("-run 'TestConformance/D-ACCESS-END$' ran %s:\n%s %s", name, got.stdout, repro(t))
			}
		}
		rm, fm := goTestRepro.FindStringSubmatch(got.stdout), goTestFirst.FindStringSubmatch(got.stdout)
		if got.code != 1 || rm == nil || fm == nil {
			t.Fatalf("go test ./mine -run 'TestConformance/D-ACCESS-END$': exit %d; want a failure with a go test repro of one run:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
		}
		words := shellWords(rm[1])
		i := len(words) - 1
		for words[i] != "-args" {
			i--
		}
		line := append(append(words[:i:i], "-count=1", "-v"), words[i:]...) // go test flags before -args
		r := m.run(line)
		g := goTestFirst.FindStringSubmatch(r.stdout)
		if r.code != 1 || g == nil || g[1] != fm[1] {
			t.Fatalf("%s: exit %d, first violation %v; want\n  %s\n%s%s %s", rm[1], r.code, g, fm[1], r.stdout, r.stderr, repro(t))
		}
	})
}
