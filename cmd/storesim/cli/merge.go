package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
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
