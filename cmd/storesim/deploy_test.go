package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// deployFile is one swarm recipe under deploy/ and how it names its shard
// count and its shard index.
type deployFile struct {
	name   string
	merge  string         // the file with the merge command
	shards *regexp.Regexp // the shard count, as the file declares it
	index  string         // the shard index as the command line writes it
	count  func(t *testing.T, text string) int
}

var deployFiles = []deployFile{
	{
		name:   "k8s-swarm.yaml",
		merge:  "k8s-merge.yaml",
		shards: regexp.MustCompile(`- name: SHARDS\n\s+value: "(\d+)"`),
		index:  "$JOB_COMPLETION_INDEX",
		// completions and parallelism: the pods that run shards.
		count: func(t *testing.T, text string) int {
			if !strings.Contains(text, "completionMode: Indexed") {
				t.Fatalf("k8s-swarm.yaml is not an Indexed Job %s", repro(t))
			}
			c := regexp.MustCompile(`(?m)^  completions: (\d+)$`).FindStringSubmatch(text)
			p := regexp.MustCompile(`(?m)^  parallelism: (\d+)$`).FindStringSubmatch(text)
			if c == nil || p == nil || c[1] != p[1] {
				t.Fatalf("k8s-swarm.yaml: completions %v and parallelism %v must be set and equal %s", c, p, repro(t))
			}
			n, _ := strconv.Atoi(c[1])
			return n
		},
	},
	{
		name:   "github-actions-swarm.yml",
		merge:  "github-actions-swarm.yml",
		shards: regexp.MustCompile(`(?m)^  SHARDS: (\d+)`),
		index:  "${{ matrix.shard }}",
		count: func(t *testing.T, text string) int {
			m := regexp.MustCompile(`(?m)^        shard: \[([0-9, ]+)\]$`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("github-actions-swarm.yml: no matrix shard list %s", repro(t))
			}
			for i, s := range strings.Split(m[1], ",") {
				if strings.TrimSpace(s) != strconv.Itoa(i) {
					t.Fatalf("github-actions-swarm.yml: matrix.shard is [%s], want 0, 1, … in order %s", m[1], repro(t))
				}
			}
			return len(strings.Split(m[1], ","))
		},
	},
}

// commandLine returns the words of the first "storesim CMD" command of
// text, after CMD: shell words (double quotes kept together, YAML line
// folds as spaces) up to a redirect, a pipe or the end of the command.
func commandLine(text, cmd string) []string {
	text = uncomment(text)
	i := strings.Index(text, "storesim "+cmd+" ")
	if i < 0 {
		return nil
	}
	rest := text[i+len("storesim "+cmd+" "):]
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range rest {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
			continue
		case !quoted && (r == ' ' || r == '\n' || r == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case !quoted && (r == '>' || r == '|' || r == ';'):
			if inWord && strings.Trim(w.String(), "0123456789") != "" {
				words = append(words, w.String()) // not the 2 of 2>&1
			}
			return words
		}
		w.WriteRune(r)
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// uncomment drops YAML comments: whole comment lines and " # …" tails.
func uncomment(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if i := strings.Index(line, " # "); i >= 0 {
			line = line[:i]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestDeployCommands: the swarm recipes under deploy/ run commands this
// CLI accepts. For each recipe: the shard count it declares equals the
// shards it starts (pods or matrix jobs); its storesim run line, with the
// recipe's variables set (a small range, a quick driver and profile),
// runs every shard I of N; and its storesim merge line folds what they
// wrote into a pass over the whole range.
func TestDeployCommands(t *testing.T) {
	for _, df := range deployFiles {
		t.Run(df.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "deploy", df.name))
			if err != nil {
				t.Fatalf("%v %s", err, repro(t))
			}
			text := string(data)
			m := df.shards.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("%s declares no SHARDS %s", df.name, repro(t))
			}
			n, _ := strconv.Atoi(m[1])
			if c := df.count(t, text); c != n || n < 2 {
				t.Fatalf("%s: SHARDS is %d but it starts %d shards (want them equal, and at least 2) %s", df.name, n, c, repro(t))
			}
			runArgs := commandLine(text, "run")
			for _, want := range []string{"--shard", "--json", "--out", "--seeds"} {
				if !slices.Contains(runArgs, want) {
					t.Fatalf("%s: storesim run %q lacks %s %s", df.name, runArgs, want, repro(t))
				}
			}
			if i := slices.Index(runArgs, "--shard"); runArgs[i+1] != df.index+"/$SHARDS" {
				t.Fatalf("%s: --shard %s, want %s/$SHARDS %s", df.name, runArgs[i+1], df.index, repro(t))
			}
			dir := t.TempDir()
			var files []string
			for i := range n {
				vars := map[string]string{
					"$SEEDS": fmt.Sprintf("0:%d", 2*n), "$SHARDS": strconv.Itoa(n), df.index: strconv.Itoa(i),
					"$DRIVER": "memory", "$PROFILE": "calm",
				}
				args := []string{"run"}
				for j, a := range runArgs {
					if j > 0 && runArgs[j-1] == "--out" {
						a = filepath.Join(dir, "failures")
					}
					for k, v := range vars {
						a = strings.ReplaceAll(a, k, v)
					}
					if strings.Contains(a, "$") {
						t.Fatalf("%s: storesim run uses %s, which this test does not set %s", df.name, a, repro(t))
					}
					args = append(args, a)
				}
				args = append(args, "--ops", "10")
				got := storesim(args...)
				if got.code != exitPass {
					t.Fatalf("%s: storesim %q: exit %d\n%s %s", df.name, args, got.code, got.stderr, repro(t))
				}
				f := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
				os.WriteFile(f, []byte(got.stdout), 0o644)
				files = append(files, f)
			}
			mergeText, err := os.ReadFile(filepath.Join("..", "..", "deploy", df.merge))
			if err != nil {
				t.Fatalf("%v %s", err, repro(t))
			}
			mergeArgs := commandLine(string(mergeText), "merge")
			if len(mergeArgs) == 0 || !strings.HasSuffix(mergeArgs[len(mergeArgs)-1], "shard-*.jsonl") {
				t.Fatalf("%s: storesim merge %q: want it to end with the shard files shard-*.jsonl %s", df.name, mergeArgs, repro(t))
			}
			t.Logf("storesim run %q; storesim merge %q", runArgs, mergeArgs)
			args := append(append([]string{"merge"}, mergeArgs[:len(mergeArgs)-1]...), files...)
			got := storesim(args...)
			if want := fmt.Sprintf("seeds: %d passed, 0 failed\n", 2*n); got.code != exitPass || !strings.HasSuffix(got.stderr, want) {
				t.Fatalf("%s: storesim %q: exit %d, want 0 and %q:\n%s %s", df.name, args, got.code, want, got.stderr, repro(t))
			}
		})
	}
}
