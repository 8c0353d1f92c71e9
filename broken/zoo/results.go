package zoo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The records scripts/zoo.sh collects (JSON Lines, one "kind" per line)
// and [Render] turns into docs/ZOO.md. Times are milliseconds of wall clock,
// measured by broken/zoo/realhunt.

// HuntRecord is one swarm hunt from one start seed.
type HuntRecord struct {
	Start   uint64  `json:"start"`
	Tried   uint64  `json:"tried"` // seeds run, including the failing one
	Found   bool    `json:"found"`
	Seed    uint64  `json:"seed,omitempty"`
	Verdict string  `json:"verdict,omitempty"`
	Rule    string  `json:"rule,omitempty"`
	Detail  string  `json:"detail,omitempty"`
	WallMS  float64 `json:"wall_ms"`
}

// ShrinkRecord is `storesim shrink` on the first hunt's failing seed.
type ShrinkRecord struct {
	Seed      uint64  `json:"seed"`
	Rule      string  `json:"rule,omitempty"`
	OpsBefore int     `json:"ops_before,omitempty"`
	OpsAfter  int     `json:"ops_after,omitempty"`
	WallMS    float64 `json:"wall_ms"`
	Err       string  `json:"err,omitempty"`
}

// SwarmRecord is kind "swarm": every hunt of one bug.
type SwarmRecord struct {
	Kind   string        `json:"kind"`
	Bug    string        `json:"bug"`
	Limit  uint64        `json:"limit"`
	Hunts  []HuntRecord  `json:"hunts"`
	Shrink *ShrinkRecord `json:"shrink,omitempty"`
}

// NaiveRun is one naive stress run.
type NaiveRun struct {
	Seed       uint64  `json:"seed"`
	Check      string  `json:"check,omitempty"` // first naive finding; "" if none
	AtMS       float64 `json:"at_ms,omitempty"`
	Detail     string  `json:"detail,omitempty"`
	ArenaCheck string  `json:"arena_check,omitempty"`
	ArenaMS    float64 `json:"arena_ms,omitempty"`
	Ops        int64   `json:"ops"`
	Rounds     int     `json:"rounds"`
}

// NaiveRecord is kind "naive": the naive stress runs of one bug, each
// stopped at its first finding or at the budget.
type NaiveRecord struct {
	Kind     string     `json:"kind"`
	Bug      string     `json:"bug"`
	BudgetMS float64    `json:"budget_ms"`
	Runs     []NaiveRun `json:"runs"`
}

// Medians are the medians over the runs of the time to the first naive
// finding and to the first naive-or-arena finding; +Inf for a run that
// found nothing. found counts the runs with a naive finding.
func (n NaiveRecord) Medians() (naiveMS, arenaMS float64, found int) {
	var ns, as []float64
	for _, r := range n.Runs {
		at, best := math.Inf(1), math.Inf(1)
		if r.Check != "" {
			at, best = r.AtMS, r.AtMS
			found++
		}
		if r.ArenaCheck != "" && r.ArenaMS < best {
			best = r.ArenaMS
		}
		ns, as = append(ns, at), append(as, best)
	}
	return median(ns), median(as), found
}

// MetaRecord is kind "meta": the machine and the commands.
type MetaRecord struct {
	Kind      string   `json:"kind"`
	Date      string   `json:"date"`
	Commit    string   `json:"commit"`
	NProc     int      `json:"nproc"`
	CPU       string   `json:"cpu"`
	GoVersion string   `json:"go_version"`
	Commands  []string `json:"commands"`
	TotalS    float64  `json:"total_s"`
}

// Results is every record of one zoo run.
type Results struct {
	Meta  MetaRecord
	Swarm map[string]SwarmRecord
	Naive map[string]NaiveRecord
}

// ReadResults parses the JSON Lines scripts/zoo.sh wrote.
func ReadResults(r io.Reader) (*Results, error) {
	res := &Results{Swarm: map[string]SwarmRecord{}, Naive: map[string]NaiveRecord{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var k struct{ Kind string }
		if err := json.Unmarshal(line, &k); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		var err error
		switch k.Kind {
		case "swarm":
			var s SwarmRecord
			err = json.Unmarshal(line, &s)
			res.Swarm[s.Bug] = s
		case "naive":
			var v NaiveRecord
			err = json.Unmarshal(line, &v)
			res.Naive[v.Bug] = v
		case "meta":
			err = json.Unmarshal(line, &res.Meta)
		default:
			err = fmt.Errorf("unknown record kind %q", k.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return res, sc.Err()
}

// median of xs; +Inf stands for "not found within the limit".
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.Inf(1)
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// SwarmMedians are the medians over a bug's hunts of the seeds run until
// the first failure and of the wall time; a hunt that found nothing counts
// as +Inf. found is how many hunts found a failure.
func (s SwarmRecord) SwarmMedians() (seeds, wallMS float64, found int) {
	var ss, ws []float64
	for _, h := range s.Hunts {
		if h.Found {
			found++
			ss, ws = append(ss, float64(h.Tried)), append(ws, h.WallMS)
		} else {
			ss, ws = append(ss, math.Inf(1)), append(ws, math.Inf(1))
		}
	}
	return median(ss), median(ws), found
}

// rules lists the distinct first rules of the hunts that found something.
func (s SwarmRecord) rules() string {
	var rs []string
	for _, h := range s.Hunts {
		if h.Found && !slices.Contains(rs, h.Rule) {
			rs = append(rs, h.Rule)
		}
	}
	return strings.Join(rs, ", ")
}

func fmtMS(ms float64) string {
	switch {
	case math.IsInf(ms, 1):
		return "—"
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

func fmtRatio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// Render writes docs/ZOO.md from the results: caught bugs, then escapes,
// then the ratios and the machine.
func Render(w io.Writer, res *Results) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	m := res.Meta
	p("# The bug zoo: time to detect, swarm vs a naive stress test\n\n")
	p("<!-- generated by scripts/zoo.sh; do not edit numbers by hand -->\n\n")
	p("Generated %s at commit %s on %d CPUs (%s), %s. The whole script took %.0f s.\n\n", m.Date, m.Commit, m.NProc, m.CPU, m.GoVersion, m.TotalS)
	p("Each planted bug is a patch against the backend (broken/zoo/patches/<name>.patch), built in with\n")
	p("`go build -overlay` (see package broken/zoo); the backend itself carries none. For each bug:\n\n")
	p("- **swarm**: `storesim run`'s run function (fuzz/engine, default profile, 100 ops, the mixed memory/together drivers) on seeds\n")
	p("  START, START+1, … in one goroutine until the first seed that fails, for 5 start offsets; the table shows the\n")
	p("  medians of the seeds run (including the failing one) and of the wall time, and the first rules named.\n")
	p("- **shrunk**: `storesim shrink --seed S` on the failing seed of the first hunt: ops before → after.\n")
	p("- **naive**: package broken/zoo/realstress, built with `-race`: the same backend and the in-memory\n")
	p("  driver (fault mix memdriver.Default, which has no never-ending calls) on the wall-clock runtime, 4\n")
	p("  goroutines issuing random publishes,\n")
	p("  fetches and cancels with random sleeps, a new backend every 500 ms; it checks what such a test can see:\n")
	p("  panics, -race reports, timeouts (3 s), fetched bytes against what was published, a stored key fetched as\n")
	p("  not served, and the shape of delivered outcomes. Each run stops at its first finding or at the budget;\n")
	p("  the table shows the median over the runs (a run that found nothing counts as never).\n")
	p("- **naive+arena**: the same run, also counting the simulated memory's S-NO-LATE-ACCESS records — what an\n")
	p("  instrumented allocator would add; a plain stress test does not have it.\n\n")

	var caught, escapes []Bug
	for _, b := range Bugs {
		if b.Caught() {
			caught = append(caught, b)
		} else {
			escapes = append(escapes, b)
		}
	}
	var ratios []float64
	lowerBounds := 0
	p("## Caught by the swarm\n\n")
	p("| bug | breaks | swarm: first rules | seeds (median) | swarm time (median) | shrunk ops | naive: check | naive time | naive+arena time | naive / swarm |\n")
	p("|---|---|---|---:|---:|---|---|---:|---:|---:|\n")
	for _, b := range caught {
		s, sok := res.Swarm[b.Name]
		n, nok := res.Naive[b.Name]
		if !sok || !nok {
			p("| %s | %s | not measured | | | | | | | |\n", b.Name, b.Breaks)
			continue
		}
		seeds, wall, found := s.SwarmMedians()
		seedStr := "—"
		if !math.IsInf(seeds, 1) {
			seedStr = fmt.Sprintf("%.0f", seeds)
		}
		ratio := "—"
		naiveMS, _, _ := n.Medians()
		switch {
		case math.IsInf(wall, 1):
		case !math.IsInf(naiveMS, 1):
			r := naiveMS / wall
			ratios = append(ratios, r)
			ratio = fmtRatio(r)
		default:
			r := n.BudgetMS / wall
			ratios = append(ratios, r)
			lowerBounds++
			ratio = "> " + fmtRatio(r)
		}
		p("| %s | %s | %s (%d/%d found) | %s | %s | %s | %s | %s | %s | %s |\n", b.Name, b.Breaks, s.rules(), found, len(s.Hunts),
			seedStr, fmtMS(wall), s.shrunk(), n.check(), n.at(), n.arenaAt(), ratio)
	}
	p("\n")
	if len(ratios) > 0 {
		p("**Ratio of time to detect, naive / swarm** over the %d caught bugs: median %s, geometric mean %s", len(ratios), fmtRatio(median(ratios)), fmtRatio(geomean(ratios)))
		if lowerBounds > 0 {
			p(" (%d of them are lower bounds: the naive test found nothing within its budget, counted as the budget)", lowerBounds)
		}
		p(".\n\n")
	}

	p("## Escapes: planted, but the swarm cannot see them\n\n")
	if len(escapes) == 0 {
		p("No escapes: the swarm is expected to catch every planted bug, and the table above shows whether it did.\n")
	} else {
		p("These bugs stay in the zoo on purpose: each names a check the framework lacks. They are hunted the same way.\n\n")
		p("| bug | breaks | what | swarm | naive: check | naive time | naive+arena time | why the swarm is blind |\n")
		p("|---|---|---|---|---|---:|---:|---|\n")
		for _, b := range escapes {
			s, sok := res.Swarm[b.Name]
			n, nok := res.Naive[b.Name]
			if !sok || !nok {
				p("| %s | %s | %s | not measured | | | | %s |\n", b.Name, b.Breaks, b.What, b.Blind)
				continue
			}
			_, _, found := s.SwarmMedians()
			sw := fmt.Sprintf("nothing in %d×%d seeds", len(s.Hunts), s.Limit)
			if found > 0 {
				sw = fmt.Sprintf("found %d/%d: %s", found, len(s.Hunts), s.rules())
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", b.Name, b.Breaks, b.What, sw, n.check(), n.at(), n.arenaAt(), b.Blind)
		}
	}
	p("\n## What the bugs are\n\n")
	for _, b := range caught {
		trips := make([]string, len(b.Trips))
		for i, r := range b.Trips {
			trips[i] = r.String()
		}
		p("- `%s` (%s): %s. Expected rules: %s.\n", b.Name, b.Breaks, b.What, strings.Join(trips, ", "))
	}
	p("\n## Commands\n\n```\n")
	for _, c := range m.Commands {
		p("%s\n", c)
	}
	p("```\n")
	return nil
}

func geomean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

func (s SwarmRecord) shrunk() string {
	switch sh := s.Shrink; {
	case sh == nil:
		return "n/a"
	case sh.Err != "":
		return "n/a (" + sh.Err + ")"
	default:
		return fmt.Sprintf("%d → %d (%s)", sh.OpsBefore, sh.OpsAfter, sh.Rule)
	}
}

// check lists the naive checks that fired, with how many runs found one.
func (n NaiveRecord) check() string {
	var cs []string
	for _, r := range n.Runs {
		if r.Check != "" && !slices.Contains(cs, r.Check) {
			cs = append(cs, r.Check)
		}
	}
	_, _, found := n.Medians()
	if found == 0 {
		return fmt.Sprintf("nothing in %d×%s", len(n.Runs), fmtMS(n.BudgetMS))
	}
	return fmt.Sprintf("%s (%d/%d)", strings.Join(cs, ", "), found, len(n.Runs))
}

func (n NaiveRecord) at() string {
	naiveMS, _, _ := n.Medians()
	return fmtMS(naiveMS)
}

func (n NaiveRecord) arenaAt() string {
	_, arenaMS, _ := n.Medians()
	return fmtMS(arenaMS)
}
