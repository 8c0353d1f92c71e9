package rules_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/rules"
)

// specPath is the contract, from this package's directory.
const specPath = "../../docs/SPEC.md"

const repro = "(repro: go test ./drivers/rules -run TestSpecTable)"

// The convention of docs/SPEC.md ("How to read this document"):
//
//   - a rule row is a table line of exactly three cells, `| NAME | class |
//     rule |`, whose first cell is a rule-like id (or a name of the table)
//     or whose second cell is a class word;
//   - a rule row belongs to the last `## N.` heading above it, and N is the
//     §N of the rule's Section;
//   - anywhere else, a D-…, B-… or S-… id is a citation and must name a rule
//     of the table.
var (
	ruleLike = regexp.MustCompile(`\b[DBS]-[A-Z0-9]+(?:-[A-Z0-9]+)*\b`)
	ruleFull = regexp.MustCompile(`^[DBS]-[A-Z0-9]+(?:-[A-Z0-9]+)*$`)
	heading  = regexp.MustCompile(`^## (\d+)\.`)
	section  = regexp.MustCompile(`^§(\d+)`)
)

var classes = []rules.Class{rules.Contract, rules.Safety, rules.Liveness, rules.Harness}

type ruleRow struct {
	name, class string
	section     int // -1 before the first numbered section
	line        int
}

// checkSpec holds doc (named docName in messages) against table and returns
// one problem per disagreement, each naming the rule and ending with the
// repro command.
func checkSpec(docName, doc string, table []rules.Rule) []string {
	var problems []string
	bad := func(name, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s %s", name, fmt.Sprintf(format, args...), repro))
	}
	known := map[string]rules.Rule{}
	for _, r := range table {
		known[r.Name] = r
	}
	classWord := map[string]bool{}
	var classNames []string
	for _, c := range classes {
		classWord[c.String()] = true
		classNames = append(classNames, c.String())
	}

	byName := map[string][]ruleRow{}
	sec, fenced := -1, false
	for i, line := range strings.Split(doc, "\n") {
		at := fmt.Sprintf("%s:%d", docName, i+1)
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			fenced = !fenced
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fenced {
			sec, _ = strconv.Atoi(m[1])
		}
		cite := line
		if cells, ok := tableCells(trim); ok && !fenced && len(cells) == 3 {
			_, isName := known[cells[0]]
			if ruleFull.MatchString(cells[0]) || isName || classWord[cells[1]] {
				row := ruleRow{name: cells[0], class: cells[1], section: sec, line: i + 1}
				byName[row.name] = append(byName[row.name], row)
				if !isName {
					bad(row.name, "has a rule row at %s, but drivers/rules has no such rule", at)
				}
				cite = cells[2]
			}
		}
		for _, id := range ruleLike.FindAllString(cite, -1) {
			if _, ok := known[id]; !ok {
				bad(id, "is cited at %s, but drivers/rules has no such rule", at)
			}
		}
	}

	for _, r := range table {
		want := -1
		if m := section.FindStringSubmatch(r.Section); m != nil {
			want, _ = strconv.Atoi(m[1])
		} else {
			bad(r.Name, "has Section %q in drivers/rules, which does not start with §N", r.Section)
		}
		got := byName[r.Name]
		switch {
		case len(got) == 0:
			bad(r.Name, "is in drivers/rules (%v, %s) but has no rule row `| %s | %v | … |` in %s", r.Class, r.Section, r.Name, r.Class, docName)
			continue
		case len(got) > 1:
			var lines []string
			for _, g := range got {
				lines = append(lines, strconv.Itoa(g.line))
			}
			bad(r.Name, "has %d rule rows in %s (lines %s); a rule is stated once", len(got), docName, strings.Join(lines, ", "))
		}
		row := got[0]
		at := fmt.Sprintf("%s:%d", docName, row.line)
		switch {
		case !classWord[row.class]:
			bad(r.Name, "has class %q at %s, which is not one of %s (drivers/rules says %v)", row.class, at, strings.Join(classNames, ", "), r.Class)
		case row.class != r.Class.String():
			bad(r.Name, "has class %s at %s, but drivers/rules says %v", row.class, at, r.Class)
		}
		if want >= 0 && row.section != want {
			where := "before any numbered section"
			if row.section >= 0 {
				where = fmt.Sprintf("in §%d", row.section)
			}
			bad(r.Name, "is stated %s (%s), but drivers/rules says %s", where, at, r.Section)
		}
	}
	return problems
}

// tableCells splits a markdown table line into its trimmed cells.
func tableCells(line string) ([]string, bool) {
	if len(line) < 2 || !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil, false
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

// TestSpecTable holds docs/SPEC.md and the rule table against each other in
// both directions: every rule of rules.All() has exactly one rule row, in
// its section, with its class; every rule row and every D-/B-/S- citation in
// the document names a rule of the table.
func TestSpecTable(t *testing.T) {
	t.Run("document", func(t *testing.T) {
		b, err := os.ReadFile(specPath)
		if err != nil {
			t.Fatalf("the contract must live in the repository: %v %s", err, repro)
		}
		for _, p := range checkSpec("docs/SPEC.md", string(b), rules.All()) {
			t.Error(p)
		}
	})

	t.Run("checker-fires", func(t *testing.T) {
		table := []rules.Rule{
			{Name: "D-ONE", Class: rules.Contract, Section: "§1 data model"},
			{Name: "B-TWO", Class: rules.Safety, Section: "§3 backend"},
			{Name: "liveness", Class: rules.Liveness, Section: "§5 checks"},
		}
		good := strings.Join([]string{
			"# a contract",
			"`| <NAME> | <class> | <one-line rule> |` and D-… are the convention.",
			"## 1. Data",
			"| rule | class | the rule in one line |",
			"|---|---|---|",
			"| D-ONE | contract | the first rule; see B-TWO |",
			"## 3. Backend",
			"| B-TWO | safety | the second rule |",
			"```",
			"| B-TWO | safety | a code block holds no rule row (else B-TWO would have two) |",
			"```",
			"## 5. Checks",
			"| liveness | liveness | the third rule |",
			"| exit code | meaning |",
			"| 3 | liveness |",
			"| broken driver | planted fault | rule |",
			"| Breaker | breaks the first rule | D-ONE |",
			"",
		}, "\n")
		if p := checkSpec("t.md", good, table); len(p) != 0 {
			t.Fatalf("a document that agrees with its table has problems:\n%s", strings.Join(p, "\n"))
		}
		cases := []struct {
			name, old, new string
			want           []string // substrings of the one problem
		}{
			{"missing-id", "| D-ONE | contract | the first rule; see B-TWO |\n", "",
				[]string{"D-ONE: ", "no rule row"}},
			{"extra-row", "| B-TWO | safety | the second rule |\n", "| B-TWO | safety | the second rule |\n| B-THREE | safety | a rule the table lacks |\n",
				[]string{"B-THREE: ", "t.md:9", "no such rule"}},
			{"extra-word-row", "| liveness | liveness | the third rule |\n", "| liveness | liveness | the third rule |\n| progress | liveness | a word rule the table lacks |\n",
				[]string{"progress: ", "no such rule"}},
			{"extra-citation", "the convention.", "the convention, and S-NOPE too.",
				[]string{"S-NOPE: ", "t.md:2", "cited"}},
			{"citation-in-rule-text", "the second rule |", "the second rule, unlike D-GHOST |",
				[]string{"D-GHOST: ", "cited"}},
			{"wrong-class", "| B-TWO | safety |", "| B-TWO | liveness |",
				[]string{"B-TWO: ", "class liveness", "says safety"}},
			{"not-a-class", "| B-TWO | safety |", "| B-TWO | safe |",
				[]string{"B-TWO: ", `"safe"`, "not one of"}},
			{"wrong-section", "## 3. Backend\n", "",
				[]string{"B-TWO: ", "in §1", "§3 backend"}},
			{"duplicate", "| liveness | liveness | the third rule |\n", "| liveness | liveness | the third rule |\n| liveness | liveness | again |\n",
				[]string{"liveness: ", "2 rule rows"}},
			{"only-in-a-fence", "| D-ONE | contract | the first rule; see B-TWO |\n", "```\n| D-ONE | contract | fenced |\n```\n",
				[]string{"D-ONE: ", "no rule row"}},
		}
		for _, tc := range cases {
			doc := strings.Replace(good, tc.old, tc.new, 1)
			if doc == good {
				t.Fatalf("%s: the case changes nothing %s", tc.name, repro)
			}
			p := checkSpec("t.md", doc, table)
			if len(p) != 1 {
				t.Errorf("%s: want exactly one problem, got %d:\n%s %s", tc.name, len(p), strings.Join(p, "\n"), repro)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(p[0], w) {
					t.Errorf("%s: the problem %q does not say %q %s", tc.name, p[0], w, repro)
				}
			}
			if !strings.HasSuffix(p[0], "go test ./drivers/rules -run TestSpecTable)") {
				t.Errorf("%s: the problem %q does not end with the repro command", tc.name, p[0])
			}
		}
		// A table rule whose Section names no §N is the table's error.
		bad := append([]rules.Rule(nil), table...)
		bad[1].Section = "backend"
		if p := checkSpec("t.md", good, bad); len(p) != 1 || !strings.Contains(p[0], "B-TWO: ") || !strings.Contains(p[0], "§N") {
			t.Errorf("a Section without §N: got %q %s", p, repro)
		}
	})
}
