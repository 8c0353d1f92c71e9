package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// One shard file of storesim merge, read and checked on its own: every line a
// record, the summary last and adding up, every seed inside the shard's part of
// the range, no seed twice. The files together are checked and folded in
// merge.go.

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
