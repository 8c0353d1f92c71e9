package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// storesim merge FILE…: fold the JSON Lines that shards of one swarm wrote
// (storesim run --shard I/N --json) into one verdict, as if one machine had
// run the whole range.
//
// Each file is one run's output: one record per seed, in seed order, then
// its summary, which declares the swarm's range (--seeds) and the shard it
// covered (--shard). merge checks every file on its own (every line a
// record, the summary last and adding up, every seed inside the shard's
// part of the range, no seed twice), then the files together (the same
// driver, profile, ops, range and shard count; every shard I of N exactly
// once; every seed of every shard present). It prints the failing seeds in
// seed order and the merged counts; with --json it prints what one
// unsharded run --json would have printed: every seed record in seed order
// (each line as its shard wrote it), then one summary (shard 0/1, plus
// "shards": how many files it folded).
//
// Exit codes are the CLI's. Safety (1), liveness (3), a harness crash (4)
// and inconclusive (5) come from the shards' own exit codes, the first of
// 1, 3, 4, 5, 2 winning as in run. A file that is not run --json output
// (empty, a line that is not a JSON record or is cut off, a record of
// another type, a summary that does not add up) is one line naming
// FILE:LINE and exit 2, with nothing merged. Files that do not cover the
// range exactly once (a shard missing or given twice, seeds missing from a
// shard that was interrupted) are reported with the merged counts of what
// is there, and exit 2 whatever those counts say: they are a verdict on part
// of a swarm, not on the swarm.

func mergeCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "JSON Lines on stdout: every seed record in seed order, then the merged summary (the shape of one unsharded run --json)")
	verbose := fs.Bool("v", false, "print a line for every seed, not only failing ones")
	files, err := parseFlags(fs, args, stdout)
	if err == nil && len(files) == 0 {
		err = usagef("give one or more FILEs: the --json output of storesim run, one per shard")
	}
	if err != nil {
		return flagErr("merge", err, stderr)
	}
	var shards []*shardFile
	var bad []string
	for _, name := range files {
		sh, err := readShardFile(name)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		shards = append(shards, sh)
	}
	if len(bad) == 0 {
		bad = sameSwarm(shards)
	}
	if len(bad) > 0 {
		for _, line := range bad {
			fmt.Fprintf(stderr, "storesim merge: %s\n", line)
		}
		return exitUsage
	}
	m := mergeShards(shards)
	m.write(stdout, stderr, *asJSON, *verbose)
	return m.sum.Exit
}

// flexUint reads a non-negative integer written as a JSON number or as a
// decimal string ("seed": 17 or "seed": "17"): seeds above 2^53 do not
// survive a float64, so a consumer may write them as strings. The number
// is read from its text, never through a float.
type flexUint uint64

func (u *flexUint) UnmarshalJSON(b []byte) error {
	text := string(b)
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a non-negative integer", b)
	}
	*u = flexUint(v)
	return nil
}

// seedIn is what merge reads of a seed record; every other field is kept
// in the raw line, which merge --json prints unchanged.
type seedIn struct {
	Seed            *flexUint `json:"seed"`
	TraceHash       string    `json:"trace_hash"`
	Verdict         *string   `json:"verdict"`
	Class           *string   `json:"class"`
	Rule            string    `json:"rule"`
	Repro           string    `json:"repro"`
	SecondTraceHash string    `json:"second_trace_hash"`
	Error           string    `json:"error"`
	Out             string    `json:"out"`
}

// summaryIn is a summary record as merge reads it: pointers, so that a
// missing field is told from a zero.
type summaryIn struct {
	Driver           *string             `json:"driver"`
	Profile          *string             `json:"profile"`
	Ops              *flexUint           `json:"ops"`
	Sched            string              `json:"sched"`
	Range            *string             `json:"range"`
	Shard            *string             `json:"shard"`
	CheckDeterminism bool                `json:"check_determinism"`
	Seeds            *flexUint           `json:"seeds"`
	Passed           *flexUint           `json:"passed"`
	Failed           *flexUint           `json:"failed"`
	Safety           *flexUint           `json:"safety"`
	Liveness         *flexUint           `json:"liveness"`
	Unknown          *flexUint           `json:"unknown"`
	HarnessError     *flexUint           `json:"harness_error"`
	Determinism      *flexUint           `json:"determinism_mismatch"`
	Classes          map[string]flexUint `json:"classes"`
	Interrupted      bool                `json:"interrupted"`
	Exit             *flexUint           `json:"exit"`
}

// seedLine is one seed record of a file.
type seedLine struct {
	rec  seedIn
	seed uint64
	raw  []byte // the line, without its newline
	file string
	line int
}

func (s *seedLine) where() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

func (s *seedLine) failed() bool { return *s.rec.Verdict != "pass" || s.rec.SecondTraceHash != "" }

// shardFile is one file, read and checked on its own.
type shardFile struct {
	name    string
	seeds   []seedLine // in file order
	sum     summaryIn
	sumLine int
	// What the summary declares.
	spec         seedSpec
	shard        shard
	start, count uint64 // the shard's part of the range (spec not random)
	exit         int
}

var verdicts = []string{"pass", "safety", "liveness", "unknown", "harness-error"}

// readShardFile reads and checks one file; the error is one line that
// names the file (and the line, when one line is to blame).
func readShardFile(name string) (*shardFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sh := &shardFile{name: name}
	at := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	r := bufio.NewReader(f)
	seen := map[uint64]int{}
	n := 0
	for {
		raw, rerr := r.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("%s: %v", name, rerr)
		}
		if len(raw) == 0 && rerr == io.EOF {
			break
		}
		n++
		cut := !bytes.HasSuffix(raw, []byte("\n"))
		raw = bytes.TrimSuffix(raw, []byte("\n"))
		var head struct {
			Type *string `json:"type"`
		}
		switch err := json.Unmarshal(raw, &head); {
		case len(bytes.TrimSpace(raw)) == 0:
			return nil, at(n, "blank line (run --json writes one record per line)")
		case err != nil && cut:
			return nil, at(n, "truncated line: the file ends in the middle of a record (was the run killed, or the file cut?)")
		case err != nil:
			return nil, at(n, "not a JSON record (%v): want the output of storesim run --json", err)
		case head.Type == nil:
			return nil, at(n, `a record without a "type" field: want the output of storesim run --json`)
		case sh.sumLine != 0:
			return nil, at(n, "a %s record after the summary (line %d): one file holds one run's output (give each shard its own file)", *head.Type, sh.sumLine)
		}
		switch *head.Type {
		case "seed":
			s := seedLine{raw: raw, file: name, line: n}
			if err := json.Unmarshal(raw, &s.rec); err != nil {
				return nil, at(n, "seed record: %v", err)
			}
			switch {
			case s.rec.Seed == nil:
				return nil, at(n, `a seed record without "seed"`)
			case s.rec.Verdict == nil || !slices.Contains(verdicts, *s.rec.Verdict):
				return nil, at(n, "a seed record whose verdict is not one of %s", strings.Join(verdicts, ", "))
			case s.rec.Class == nil:
				return nil, at(n, `a seed record without "class"`)
			}
			s.seed = uint64(*s.rec.Seed)
			if prev, dup := seen[s.seed]; dup {
				return nil, at(n, "seed %d again (first on line %d): one run has each seed once", s.seed, prev)
			}
			seen[s.seed] = n
			sh.seeds = append(sh.seeds, s)
		case "summary":
			if err := json.Unmarshal(raw, &sh.sum); err != nil {
				return nil, at(n, "summary record: %v", err)
			}
			sh.sumLine = n
			if err := sh.checkSummary(); err != nil {
				return nil, at(n, "%v", err)
			}
		default:
			return nil, at(n, `record type %q: want "seed" or "summary" (the output of storesim run --json)`, *head.Type)
		}
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("%s: empty file: no records (want the output of storesim run --json: a record per seed, then a summary)", name)
	case sh.sumLine == 0:
		return nil, fmt.Errorf("%s:%d: the file ends without a summary record after %d seed records: the run was cut off", name, n, len(sh.seeds))
	}
	return sh, sh.checkSeeds()
}

// checkSummary checks the summary's fields and reads what it declares.
func (sh *shardFile) checkSummary() error {
	s := &sh.sum
	need := []struct {
		name string
		ok   bool
	}{
		{"driver", s.Driver != nil}, {"profile", s.Profile != nil}, {"ops", s.Ops != nil},
		{"seeds", s.Seeds != nil}, {"passed", s.Passed != nil}, {"failed", s.Failed != nil},
		{"safety", s.Safety != nil}, {"liveness", s.Liveness != nil}, {"unknown", s.Unknown != nil},
		{"harness_error", s.HarnessError != nil}, {"determinism_mismatch", s.Determinism != nil}, {"exit", s.Exit != nil},
	}
	for _, f := range need {
		if !f.ok {
			return fmt.Errorf("the summary has no %q field", f.name)
		}
	}
	if s.Range == nil || s.Shard == nil {
		return fmt.Errorf(`the summary has no "range" and "shard" fields: it was written by a storesim without merge; rerun the shard with this one`)
	}
	var err error
	if sh.spec, err = parseSeeds(*s.Range); err != nil {
		return fmt.Errorf("the summary's range: %v", err)
	}
	if sh.shard, err = parseShard(*s.Shard); err != nil {
		return fmt.Errorf("the summary's shard: %v", err)
	}
	if sh.spec.random && sh.shard.n != 1 {
		return fmt.Errorf("the summary says shard %s of random seeds: run never shards random seeds", *s.Shard)
	}
	if !sh.spec.random {
		sh.start, sh.count = sh.shard.cut(sh.spec.start, sh.spec.count)
	}
	sh.exit = int(*s.Exit)
	if !slices.Contains([]int{exitPass, exitSafety, exitUsage, exitLiveness, exitHarness, exitInconclusive}, sh.exit) {
		return fmt.Errorf("the summary's exit %d is not an exit code of storesim run", sh.exit)
	}
	return nil
}

// checkSeeds holds the seed records against the summary: every seed in the
// shard's part of the range, and the summary's counts equal to the
// records'.
func (sh *shardFile) checkSeeds() error {
	for i := range sh.seeds {
		s := &sh.seeds[i]
		if !sh.spec.random && (s.seed < sh.start || s.seed-sh.start >= sh.count) {
			return fmt.Errorf("%s: seed %d is outside shard %s of range %s (seeds %d:%d)", s.where(), s.seed, *sh.sum.Shard, *sh.sum.Range, sh.start, sh.count)
		}
	}
	got := tallyOf(sh.seeds)
	s := &sh.sum
	for _, c := range []struct {
		name      string
		said, got int
	}{
		{"seeds", int(*s.Seeds), got.Seeds}, {"passed", int(*s.Passed), got.Passed}, {"failed", int(*s.Failed), got.Failed},
		{"safety", int(*s.Safety), got.Safety}, {"liveness", int(*s.Liveness), got.Liveness}, {"unknown", int(*s.Unknown), got.Unknown},
		{"harness_error", int(*s.HarnessError), got.HarnessError}, {"determinism_mismatch", int(*s.Determinism), got.Determinism},
	} {
		if c.said != c.got {
			return fmt.Errorf("%s:%d: the summary says %s %d, but the file's seed records give %d", sh.name, sh.sumLine, c.name, c.said, c.got)
		}
	}
	if s.Classes != nil {
		said := map[string]int{}
		for k, v := range s.Classes {
			if v != 0 {
				said[k] = int(v)
			}
		}
		if !mapsEqual(said, got.Classes) {
			return fmt.Errorf("%s:%d: the summary's classes %s disagree with the file's seed records %s", sh.name, sh.sumLine, classList(said), classList(got.Classes))
		}
	}
	// The exit code must be the one the counts make (as far as they
	// decide it: a crash, exit 4, is not told apart in the records).
	want := -1
	switch {
	case got.Safety > 0 || got.Determinism > 0:
		want = exitSafety
	case got.Liveness > 0:
		want = exitLiveness
	case sh.exit == exitSafety || sh.exit == exitLiveness:
		want = exitPass // no failure of that class: anything but 1 or 3
	case sh.exit == exitHarness && got.HarnessError == 0:
		want = exitPass
	case sh.exit == exitInconclusive && got.Unknown == 0:
		want = exitPass
	}
	if want >= 0 && want != sh.exit {
		return fmt.Errorf("%s:%d: the summary's exit %d does not follow from its counts (%d safety, %d liveness, %d unknown, %d harness-error, %d determinism)",
			sh.name, sh.sumLine, sh.exit, got.Safety, got.Liveness, got.Unknown, got.HarnessError, got.Determinism)
	}
	return nil
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// classList prints class counts in a fixed order: "contract 3, pass 7".
func classList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// tallyOf counts seed records as run's tally counts outcomes.
func tallyOf(seeds []seedLine) summaryRecord {
	t := summaryRecord{Classes: map[string]int{}}
	for i := range seeds {
		s := &seeds[i]
		t.Seeds++
		switch *s.rec.Verdict {
		case "safety":
			t.Safety++
		case "liveness":
			t.Liveness++
		case "unknown":
			t.Unknown++
		case "harness-error":
			t.HarnessError++
		}
		if s.rec.SecondTraceHash != "" {
			t.Determinism++
		}
		if s.failed() {
			t.Failed++
		} else {
			t.Passed++
		}
		t.Classes[*s.rec.Class]++
	}
	return t
}

// sameSwarm checks that the files are shards of one swarm: one driver,
// profile, ops, range, determinism setting and shard count.
func sameSwarm(shards []*shardFile) []string {
	var bad []string
	ref := shards[0]
	key := func(sh *shardFile) string {
		k := fmt.Sprintf("range %s in %d shards, driver=%s profile=%s ops=%d check-determinism=%t",
			*sh.sum.Range, sh.shard.n, *sh.sum.Driver, *sh.sum.Profile, *sh.sum.Ops, sh.sum.CheckDeterminism)
		if sh.sum.Sched != "" {
			k += " " + sh.sum.Sched
		}
		return k
	}
	for _, sh := range shards[1:] {
		if key(sh) != key(ref) {
			bad = append(bad, fmt.Sprintf("%s is not a shard of the swarm of %s: %s, but %s (shards of one swarm share the range, shard count, driver, profile, ops, --sched and --check-determinism)",
				sh.name, ref.name, key(sh), key(ref)))
		}
	}
	return bad
}

// merged is the fold of the files.
type merged struct {
	shards   []*shardFile // the files taken, in the order given
	seeds    []seedLine   // every seed of them, sorted
	problems []string     // coverage: missing or repeated shards and seeds
	sum      summaryRecord
}

func mergeShards(files []*shardFile) *merged {
	m := &merged{}
	ref := files[0]
	if ref.spec.random {
		// Random seeds: every machine draws its own; nothing to cover.
		m.shards = files
	} else {
		byIndex := map[uint64]*shardFile{}
		for _, sh := range files {
			if first, dup := byIndex[sh.shard.i]; dup {
				m.problems = append(m.problems, duplicateShard(first, sh))
				continue
			}
			byIndex[sh.shard.i] = sh
			m.shards = append(m.shards, sh)
		}
		m.problems = append(m.problems, missingShards(ref, byIndex)...)
		for _, sh := range m.shards {
			if p := missingSeeds(sh); p != "" {
				m.problems = append(m.problems, p)
			}
		}
	}
	where := map[uint64]*seedLine{}
	for _, sh := range m.shards {
		for i := range sh.seeds {
			s := &sh.seeds[i]
			if first, dup := where[s.seed]; dup {
				// Only random seeds get here: a ranged shard's seeds are
				// inside its own part of the range.
				m.problems = append(m.problems, fmt.Sprintf("seed %d appears twice: %s and %s", s.seed, first.where(), s.where()))
				continue
			}
			where[s.seed] = s
			m.seeds = append(m.seeds, *s)
		}
	}
	sort.SliceStable(m.seeds, func(i, j int) bool { return m.seeds[i].seed < m.seeds[j].seed })

	m.sum = tallyOf(m.seeds)
	m.sum.Type, m.sum.Driver, m.sum.Profile, m.sum.Ops = "summary", *ref.sum.Driver, *ref.sum.Profile, int(*ref.sum.Ops)
	m.sum.Sched = ref.sum.Sched
	m.sum.Range, m.sum.Shard, m.sum.CheckDeterminism, m.sum.Shards = *ref.sum.Range, "0/1", ref.sum.CheckDeterminism, len(files)
	m.sum.Exit = exitPass
	for _, sh := range m.shards {
		m.sum.Interrupted = m.sum.Interrupted || sh.sum.Interrupted
		m.sum.Exit = firstExit(m.sum.Exit, sh.exit)
	}
	if len(m.problems) > 0 {
		m.sum.Exit = exitUsage
	}
	return m
}

// runFlags are the run flags that rebuild sh's seeds as its swarm ran them.
func runFlags(sh *shardFile) string {
	f := fmt.Sprintf("--json --driver %s --profile %s --ops %d", *sh.sum.Driver, *sh.sum.Profile, *sh.sum.Ops)
	if sh.sum.Sched != "" {
		f += " " + sh.sum.Sched
	}
	if sh.sum.CheckDeterminism {
		f += " --check-determinism"
	}
	return f
}

// exitRank is the order in which exit codes win: 1, 3, 4, 5, 2, then 0.
var exitRank = map[int]int{exitSafety: 0, exitLiveness: 1, exitHarness: 2, exitInconclusive: 3, exitUsage: 4, exitPass: 5}

// firstExit is the exit code that wins of a and b.
func firstExit(a, b int) int {
	if exitRank[b] < exitRank[a] {
		return b
	}
	return a
}

// duplicateShard reports a shard given twice and whether the two agree
// (two runs of one shard that disagree are a determinism finding across
// machines).
func duplicateShard(first, again *shardFile) string {
	msg := fmt.Sprintf("duplicate shard %s: %s and %s both hold it; %s is left out", *again.sum.Shard, first.name, again.name, again.name)
	byseed := map[uint64]*seedLine{}
	for i := range first.seeds {
		byseed[first.seeds[i].seed] = &first.seeds[i]
	}
	for i := range again.seeds {
		b := &again.seeds[i]
		a, ok := byseed[b.seed]
		if ok && (a.rec.TraceHash != b.rec.TraceHash || *a.rec.Verdict != *b.rec.Verdict || a.rec.Rule != b.rec.Rule) {
			return msg + fmt.Sprintf(" (and they disagree on seed %d: %s trace=%s rule=%s at %s, %s trace=%s rule=%s at %s — a determinism mismatch across runs; repro: storesim run --seeds %d:1 --check-determinism --driver %s --profile %s --ops %d)",
				b.seed, *a.rec.Verdict, a.rec.TraceHash, a.rec.Rule, a.where(), *b.rec.Verdict, b.rec.TraceHash, b.rec.Rule, b.where(), b.seed, *again.sum.Driver, *again.sum.Profile, *again.sum.Ops)
		}
	}
	return msg
}

// missingShards lists the shards of ref's swarm that no file holds: one
// line each for the first five, then one line for the rest (a shard count
// may be large).
func missingShards(ref *shardFile, byIndex map[uint64]*shardFile) []string {
	have := make([]uint64, 0, len(byIndex))
	for i := range byIndex {
		have = append(have, i)
	}
	slices.Sort(have)
	n := ref.shard.n
	var out []string
	more := uint64(0)
	report := func(lo, hi uint64) { // indexes lo..hi-1 are missing
		for i := lo; i < hi; i++ {
			if len(out) == 5 {
				more += hi - i
				return
			}
			s, c := shard{i, n}.cut(ref.spec.start, ref.spec.count)
			out = append(out, fmt.Sprintf("missing shard %d/%d of range %s (seeds %d:%d): no file holds it; run it with storesim run --seeds %s --shard %d/%d %s",
				i, n, *ref.sum.Range, s, c, *ref.sum.Range, i, n, runFlags(ref)))
		}
	}
	next := uint64(0)
	for _, i := range have {
		report(next, i)
		next = i + 1
	}
	report(next, n)
	if more > 0 {
		out = append(out, fmt.Sprintf("… and %d more missing shards of %d", more, n))
	}
	return out
}

// missingSeeds reports the seeds of a shard's part of the range that its
// file lacks (an interrupted run), as at most five runs START:COUNT.
func missingSeeds(sh *shardFile) string {
	if sh.count == 0 {
		return ""
	}
	seeds := make([]uint64, 0, len(sh.seeds))
	for i := range sh.seeds {
		seeds = append(seeds, sh.seeds[i].seed)
	}
	slices.Sort(seeds)
	var gaps []string
	missing, runs := uint64(0), 0
	gap := func(lo, hi uint64) { // lo..hi inclusive, so the top seed cannot overflow
		missing += hi - lo + 1
		runs++
		if runs <= 5 {
			gaps = append(gaps, fmt.Sprintf("%d:%d", lo, hi-lo+1))
		}
	}
	last := sh.start + (sh.count - 1)
	next := sh.start
	for _, s := range seeds {
		if s > next {
			gap(next, s-1)
		}
		next = s + 1 // s < last here unless it is the last seed
	}
	switch {
	case len(seeds) == 0:
		gap(sh.start, last)
	case seeds[len(seeds)-1] < last:
		gap(seeds[len(seeds)-1]+1, last)
	}
	if missing == 0 {
		return ""
	}
	why := ""
	if sh.sum.Interrupted {
		why = " (its summary says the run was interrupted)"
	}
	if runs > 5 {
		gaps = append(gaps, "…")
	}
	return fmt.Sprintf("%s: shard %s lacks %d of its %d seeds%s: START:COUNT %s; run them with storesim run --seeds START:COUNT %s",
		sh.name, *sh.sum.Shard, missing, sh.count, why, strings.Join(gaps, " "), runFlags(sh))
}

// write prints the merge: on stdout the failing seeds (every seed with -v)
// or, with --json, every seed record then the summary; on stderr what was
// merged, the problems, the counts and the closing line, as run does.
func (m *merged) write(stdout, stderr io.Writer, asJSON, verbose bool) {
	s := &m.sum
	var names []string
	for _, sh := range m.shards {
		names = append(names, *sh.sum.Shard)
	}
	fmt.Fprintf(stderr, "storesim merge: %d files: driver=%s profile=%s ops=%d seeds=%s shards %s\n", s.Shards, s.Driver, s.Profile, s.Ops, s.Range, strings.Join(names, " "))
	enc := json.NewEncoder(stdout)
	for i := range m.seeds {
		sl := &m.seeds[i]
		switch {
		case asJSON:
			stdout.Write(sl.raw)
			io.WriteString(stdout, "\n")
		case sl.failed() || verbose:
			r := &sl.rec
			line := fmt.Sprintf("seed %d: %s class=%s trace=%s", sl.seed, *r.Verdict, *r.Class, r.TraceHash)
			if r.Rule != "" {
				line += " rule=" + r.Rule
			}
			if r.Error != "" {
				line += " error=" + r.Error
			}
			fmt.Fprintln(stdout, line)
			if r.SecondTraceHash != "" {
				fmt.Fprintf(stdout, "  determinism: a second run gave trace=%s (repro: storesim run --seeds %d:1 --check-determinism --driver %s --profile %s --ops %d)\n",
					r.SecondTraceHash, sl.seed, s.Driver, s.Profile, s.Ops)
			}
			if sl.failed() && r.Repro != "" {
				fmt.Fprintf(stdout, "  repro: %s\n", r.Repro)
			}
			if r.Out != "" {
				fmt.Fprintf(stdout, "  saved: %s\n", r.Out)
			}
		}
	}
	if asJSON {
		enc.Encode(s)
	}
	for _, p := range m.problems {
		fmt.Fprintf(stderr, "storesim merge: %s\n", p)
	}
	fmt.Fprintf(stderr, "classes: %s\n", classList(s.Classes))
	fmt.Fprintf(stderr, "failures: %d safety, %d liveness, %d unknown, %d harness-error, %d determinism; %d seeds from %d files\n",
		s.Safety, s.Liveness, s.Unknown, s.HarnessError, s.Determinism, s.Seeds, s.Shards)
	fmt.Fprintf(stderr, "seeds: %d passed, %d failed\n", s.Passed, s.Failed)
}
