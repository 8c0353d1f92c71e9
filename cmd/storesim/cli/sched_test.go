package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPCTRunAndShrunkSchedule: a PCT swarm's failure names the policy in
// its repro and its folder's op log, and replays from the folder; shrink
// writes a file whose sched script replays the failure without the seed's
// schedule draws, fewer decisions than the seed's run.
func TestPCTRunAndShrunkSchedule(t *testing.T) {
	plantKey(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	r := storesim("run", "--seeds", "0:20", "--ops", "30", "--profile", "calm", "--sched", "pct", "--depth", "2", "--out", out)
	if r.code != 1 || !strings.Contains(r.stderr, "sched=pct depth=2") || !strings.Contains(r.stdout+r.stderr, "--sched pct --depth 2") {
		t.Fatalf("PCT run: exit %d, want 1 with the policy named in the header and the repro:\n%s%s %s", r.code, r.stdout, r.stderr, repro(t))
	}
	folders, _ := filepath.Glob(filepath.Join(out, "seed-*"))
	if len(folders) == 0 {
		t.Fatalf("no failure folder in %s %s", out, repro(t))
	}
	log, err := os.ReadFile(filepath.Join(folders[0], "oplog.txt"))
	if err != nil || !strings.Contains(string(log), "\nsched pct depth=2 steps=0\n") {
		t.Fatalf("the folder's op log does not carry the PCT policy (%v):\n%s %s", err, log, repro(t))
	}
	if r := storesim("replay", folders[0]); r.code != 1 {
		t.Fatalf("replay of the PCT folder: exit %d, want 1:\n%s%s %s", r.code, r.stdout, r.stderr, repro(t))
	}
	seed := strings.TrimPrefix(filepath.Base(folders[0]), "seed-")
	min := filepath.Join(dir, "min.txt")
	r = storesim("shrink", "--seed", seed, "--ops", "30", "--profile", "calm", "--out", min)
	text, _ := os.ReadFile(min)
	if r.code != 0 || !strings.Contains(string(text), "\nsched script\n") || !strings.Contains(string(text), "# schedule: ") {
		t.Fatalf("shrink: exit %d, want 0 and a sched script in the file:\n%s\n%s %s", r.code, text, r.stderr, repro(t))
	}
	if r := storesim("replay", min); r.code != 1 || !strings.Contains(r.stdout, "D-CB-2") {
		t.Fatalf("replay of the shrunk file: exit %d, want 1 naming D-CB-2:\n%s%s %s", r.code, r.stdout, r.stderr, repro(t))
	}
}

// TestMergePCTShards: PCT shards merge into the unsharded PCT run's verdict,
// and a random shard is no shard of a PCT swarm.
func TestMergePCTShards(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, args ...string) string {
		r := storesim(append([]string{"run", "--seeds", "0:6", "--ops", "20", "--json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("run %v: exit %d:\n%s %s", args, r.code, r.stderr, repro(t))
		}
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(r.stdout), 0o644)
		return path
	}
	a := write("a.jsonl", "--shard", "0/2", "--sched", "pct", "--depth", "2")
	b := write("b.jsonl", "--shard", "1/2", "--sched", "pct", "--depth", "2")
	c := write("c.jsonl", "--shard", "1/2")
	whole := storesim("run", "--seeds", "0:6", "--ops", "20", "--json", "--sched", "pct", "--depth", "2")
	m := storesim("merge", "--json", a, b)
	if m.code != 0 || strings.Replace(m.stdout, `"shards":2,`, "", 1) != whole.stdout || !strings.Contains(m.stdout, `"sched":"--sched pct --depth 2"`) {
		t.Fatalf("merge of PCT shards: exit %d\n%s\nwant the unsharded run's\n%s %s", m.code, m.stdout, whole.stdout, repro(t))
	}
	if m := storesim("merge", a, c); m.code != 2 || !strings.Contains(m.stderr, "--sched pct --depth 2") {
		t.Fatalf("merge of a PCT and a random shard: exit %d, want 2 naming the policy:\n%s %s", m.code, m.stderr, repro(t))
	}
}
