package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/storesim/storesim"

// layer of every package, relative to the module root.
var layer = map[string]int{
	"drivers":       0,
	"drivers/rules": 0,
	"backend/keys":  0,
	"sim":           0,
	"sim/arena":     0,
	"sim/realtime":  0,
	"sim/bareloop":  0,
	"sim/slab":      0,

	"backend":                1,
	"backend/realwait":       1,
	"backend/backendtest":    1,
	"drivers/memdriver":      1,
	"drivers/redisdriver":    1,
	"drivers/memcachedriver": 1,
	"drivers/procdriver":     1,
	"drivers/blobdriver":     1,
	// blobtest starts the blob driver's test stores (gofakes3) and
	// imports nothing of the project.
	"drivers/blobdriver/blobtest": 1,

	"broken":                 2,
	"broken/redisbroken":     2,
	"broken/memcachedbroken": 2,
	"broken/blobbroken":      2,

	"model":                     3,
	"model/lender":              3,
	"model/refine":              3,
	"drivers/monitor":           3,
	"drivers/monitor/realprobe": 3,
	"drivers/monitor/simprobe":  3,

	"fuzz/workload": 4,
	"fuzz/registry": 4,
	"fuzz/engine":   4,
	"fuzz/diff":     4,
	"fuzz/shrink":   4,
	"fuzz/timeline": 4,
	"fuzz":          4,
	"fuzz/machine":  4,
	// corpusfile reads and writes go test corpus files for the fuzz
	// packages' tests and fuzztool; it imports nothing of the project.
	"fuzz/corpusfile": 4,

	"scenarios":             5,
	"drivers/drivertest":    5,
	"broken/zoo":            5,
	"broken/zoo/realhunt":   5,
	"broken/zoo/realstress": 5,
	"cmd/storesim":          5,
	"fuzz/targets":          5,
	"fuzz/fuzztool":         5,
	"cmd/storesim/cli":      5,
	"internal/layers":       5,

	"drivers/procdriver/proctest": 5,
}

// bottom packages import nothing of the project, whatever their layer number
// says about their neighbours.
var bottom = map[string]bool{"drivers": true, "drivers/rules": true, "backend/keys": true, "sim": true, "sim/bareloop": true, "sim/slab": true}

// check returns one error per wrong arrow in deps (package → its imports,
// both relative to the module root), sorted.
func check(deps map[string][]string) []string {
	var bad []string
	for pkg, imports := range deps {
		l, ok := layer[pkg]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: not placed in a layer (add it to internal/layers)", pkg))
			continue
		}
		for _, imp := range imports {
			il, ok := layer[imp]
			switch {
			case !ok:
				continue // reported as its own package
			case bottom[pkg]:
				bad = append(bad, fmt.Sprintf("%s → %s: a bottom package imports nothing of the project", pkg, imp))
			case il > l:
				bad = append(bad, fmt.Sprintf("%s (layer %d) → %s (layer %d): the arrow points up", pkg, l, imp, il))
			case l == 1 && il == 1 && !sameGroup(pkg, imp):
				bad = append(bad, fmt.Sprintf("%s → %s: the backend and the drivers stand side by side on the contract", pkg, imp))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func sameGroup(a, b string) bool {
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	return top(a) == top(b)
}

// listDeps reads the module's tree: package (relative to the module root)
// → the project packages its non-test files import. Test files may reach
// up: an external test package is a client of what it tests, like etcd's
// rafttest. It parses the files itself (go/parser, imports only) rather than
// run go list, so go test's cache sees every file it read and a new import
// is never judged from a stale cached pass.
func listDeps(t *testing.T) map[string][]string {
	t.Helper()
	root := "../.."
	deps := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(dir)
		if _, ok := deps[pkg]; !ok {
			deps[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if r := rel(p); r != p && r != pkg && !slices.Contains(deps[pkg], r) {
				deps[pkg] = append(deps[pkg], r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the tree: %v", err)
	}
	return deps
}

func rel(p string) string {
	if p == module {
		return ""
	}
	return strings.TrimPrefix(p, module+"/")
}

// TestLayers fails on any import that points the wrong way.
func TestLayers(t *testing.T) {
	for _, b := range check(listDeps(t)) {
		t.Error(b)
	}
	if t.Failed() {
		t.Log("repro: go test ./internal/layers -run TestLayers")
	}
}

// TestLayersCatchWrongArrows plants wrong imports and expects each named.
func TestLayersCatchWrongArrows(t *testing.T) {
	for _, c := range []struct {
		pkg, imp, want string
	}{
		{"backend", "model", "backend (layer 1) → model (layer 3)"},
		{"sim", "drivers", "sim → drivers: a bottom package"},
		{"backend", "drivers/memdriver", "backend → drivers/memdriver: the backend and the drivers"},
		{"model", "fuzz/engine", "model (layer 3) → fuzz/engine (layer 4)"},
		{"fuzz/newthing", "drivers", "fuzz/newthing: not placed"},
	} {
		t.Run(c.pkg+"→"+c.imp, func(t *testing.T) {
			got := check(map[string][]string{c.pkg: {c.imp}})
			if len(got) != 1 || !strings.Contains(got[0], c.want) {
				t.Fatalf("check(%s → %s) = %q, want one error containing %q\nrepro: go test ./internal/layers -run TestLayersCatchWrongArrows", c.pkg, c.imp, got, c.want)
			}
		})
	}
}
