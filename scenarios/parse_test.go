package scenarios

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMalformed: a truncated or garbled file fails before or at the bad
// block with one *Error naming the file and the line, on one line, saying
// what is wrong; nothing after it runs.
func TestMalformed(t *testing.T) {
	const head = "store durable\n----\nstore durable seed=1 wake-delay=0s coalesce=0 evict-chance=0\n\n"
	cases := []struct {
		name, text string
		line       int
		says       string
	}{
		{"truncated block", head + "endpoint A\n", 5, "truncated block"},
		{"truncated after comment", "# a comment\nstore durable", 2, "truncated block"},
		{"truncated inside expected output", "store durable\n----\nstore dur", 3, "truncated: the file ends mid-line"},
		{"no separator", head + "endpoint A\nstabilize\n----\n", 6, `want "----"`},
		{"separator alone", head + "----\nfoo\n", 5, `"----" without a command`},
		{"second separator", head + "check\n----\nok\n----\n", 8, `second "----"`},
		{"unknown command", head + "publsh A keys=a\n----\n", 5, `unknown command "publsh"`},
		{"unknown key", head + "endpoint A rowz=4\n----\n", 5, `unknown key "rowz"`},
		{"key twice", head + "endpoint A rows=1 rows=2\n----\n", 5, `given twice`},
		{"empty key", head + "endpoint A =4\n----\n", 5, "empty key"},
		{"missing positional", head + "fetch keys=a\n----\n", 5, "positional arguments"},
		{"extra positional", head + "check now\n----\n", 5, "positional arguments"},
		{"bad number", head + "endpoint A rows=many\n----\n", 5, `bad argument rows="many"`},
		{"bad bool", head + "endpoint A absent-is-miss=perhaps\n----\n", 5, "true or false"},
		{"bad region", head + "endpoint A regions=r0:8by64\n----\n", 5, "bad argument regions"},
		{"bad fault", head + "endpoint A faults=gremlins:1\n----\n", 5, "unknown fault"},
		{"bad driver", head + "endpoint A driver=floppy\n----\n", 5, `bad argument driver="floppy"`},
		{"bad mask", head + "endpoint A\n----\n\nfetch A keys=a,b mask=1\n----\n", 8, "bad argument mask"},
		{"unknown endpoint", head + "fetch B keys=a\n----\n", 5, `unknown endpoint "B"`},
		{"unknown attempt", head + "cancel f9\n----\n", 5, `unknown attempt "f9"`},
		{"no store", "endpoint A\n----\n", 1, "no store yet"},
		{"store twice", head + "store evicting\n----\n", 5, "store defined twice"},
		{"bad duration", head + "tick soon\n----\n", 5, "duration"},
		{"bad rate", head + "endpoint A\n----\n\ninject A row-fault rate=2\n----\n", 8, "a number in [0, 1]"},
		{"empty file", "", 1, "no command block: the file is empty or holds only comments"},
		{"comments only", "# a scenario\n\n# that lost its blocks\n", 3, "no command block"},
		{"huge region", head + "endpoint A regions=A0:3000000000x16\n----\n", 5, "has 3000000000 slots; at most 65536 slots per region (docs/FORMATS.md)"},
		{"huge slot", head + "endpoint A regions=A0:4x100000000\n----\n", 5, "over 67108864 bytes (64 MiB) per region"},
		{"huge memory", head + "endpoint A regions=A0:4x16/3000000000\n----\n", 5, "over 67108864 bytes (64 MiB) per region"},
		{"huge total", head + "endpoint A regions=a:1024x65536,b:1024x65536,c:1024x65536\n----\n\nendpoint B regions=d:1024x65536,e:1x16\n----\n", 8, "over 268435456 bytes (256 MiB) per file"},
		{"huge driver-register", head + "endpoint A\n----\n\ndriver-register A big:3000000000x16\n----\n", 8, "at most 65536 slots per region"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repro := "(repro: go test ./scenarios -run 'TestMalformed/" + strings.ReplaceAll(tc.name, " ", "_") + "')"
			_, err := Run("bad.txt", tc.text, Options{})
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, ErrBadScenario) {
				t.Fatalf("got %v, want a *scenarios.Error %s", err, repro)
			}
			msg := err.Error()
			if se.File != "bad.txt" || se.Line != tc.line || !strings.HasPrefix(msg, "bad.txt:") || !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") {
				t.Fatalf("got %q (line %d), want one line at bad.txt:%d saying %q %s", msg, se.Line, tc.line, tc.says, repro)
			}
		})
	}
}

// TestRewrite: a file with stale expected output fails; -rewrite fixes it,
// keeps its comments and blank lines, warns to read the diff, and the file
// then passes. A malformed file is never rewritten.
func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.txt")
	stale := "# keep me\n\nstore durable\n----\nsomething old\n\n# and me\ncheck\n----\n"
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := RunFile(path, Options{})
	if err != nil || res.Passed() || len(res.Failures) != 2 || res.Failures[0].Line != 3 {
		t.Fatalf("stale file: %v, %+v; want 2 mismatches, the first at line 3 (repro: go test ./scenarios -run TestRewrite)", err, res.Failures)
	}
	if d := res.Failures[0].Diff(); !strings.Contains(d, "- something old") || !strings.Contains(d, "+ store durable seed=1") {
		t.Fatalf("diff %q does not show both sides (repro: go test ./scenarios -run TestRewrite)", d)
	}
	var log bytes.Buffer
	res, err = RunFile(path, Options{Rewrite: true, Log: &log})
	if err != nil || !res.Rewritten || !strings.Contains(log.String(), "read the diff") {
		t.Fatalf("rewrite: %v, rewritten %v, log %q (repro: go test ./scenarios -run TestRewrite)", err, res.Rewritten, log.String())
	}
	got, _ := os.ReadFile(path)
	want := "# keep me\n\nstore durable\n----\nstore durable seed=1 wake-delay=0s coalesce=0 evict-chance=0\n\n# and me\ncheck\n----\nok\n"
	if string(got) != want {
		t.Fatalf("rewritten file:\n%s\nwant:\n%s(repro: go test ./scenarios -run TestRewrite)", got, want)
	}
	if res, err := RunFile(path, Options{}); err != nil || !res.Passed() {
		t.Fatalf("rewritten file does not pass: %v %+v (repro: go test ./scenarios -run TestRewrite)", err, res.Failures)
	}
	bad := "store durable\n----\n\nbogus\n----\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunFile(path, Options{Rewrite: true}); err == nil {
		t.Fatal("malformed file accepted (repro: go test ./scenarios -run TestRewrite)")
	}
	if got, _ := os.ReadFile(path); string(got) != bad {
		t.Fatalf("malformed file was rewritten to %q (repro: go test ./scenarios -run TestRewrite)", got)
	}
}

// TestDeterministic: every scenario file prints the same output on every
// run (sorted where it comes from maps, one seed for everything).
func TestDeterministic(t *testing.T) {
	files, err := Files("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		a, errA := RunFile(f, Options{})
		b, errB := RunFile(f, Options{})
		if errA != nil || errB != nil || a.Output != b.Output {
			t.Errorf("%s: two runs differ (%v, %v) (repro: go test ./scenarios -run TestDeterministic)", f, errA, errB)
		}
	}
}

// TestSeedMatters: the store's seed decides the interleaving, so another
// seed prints another run (a check that the output is not a constant).
func TestSeedMatters(t *testing.T) {
	text := "store durable seed=%s\n----\n\nendpoint A\n----\n\npublish A keys=a,b,c\n----\n\nstabilize\n----\n"
	a, errA := Run("a", strings.Replace(text, "%s", "1", 1), Options{})
	b, errB := Run("b", strings.Replace(text, "%s", "2", 1), Options{})
	if errA != nil || errB != nil || a.Output == strings.Replace(b.Output, "seed=2", "seed=1", -1) {
		t.Fatalf("seeds 1 and 2 printed the same run (%v, %v) (repro: go test ./scenarios -run TestSeedMatters)", errA, errB)
	}
}
