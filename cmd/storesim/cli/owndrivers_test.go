package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

// mine is a driver of the caller's own, as a driver author hands it to
// Main: the reference driver with one planted bug (broken.LiesAboutAccess:
// it reports access ENDED, then writes the slot again).
func mine(env Env) (drivers.Driver, error) {
	return broken.New(broken.LiesAboutAccess, env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults})
}

// stale is another: broken.CachesAbsence, whose first D-LOOK-2 violation
// only the backend-driven swarm finds.
func stale(env Env) (drivers.Driver, error) {
	return broken.New(broken.CachesAbsence, env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults})
}

var mineOpts = Options{Name: "mystore", Drivers: map[string]Factory{"mine": mine, "stale": stale}}

// mystore runs Main as a driver author's binary "mystore" with its driver
// "mine".
func mystore(args ...string) cli {
	var out, errb bytes.Buffer
	o := mineOpts
	o.Stdout, o.Stderr = &out, &errb
	code := Main(args, o)
	return cli{code, out.String(), errb.String()}
}

// as runs a printed repro line: its first word must be the binary's name.
func as(t *testing.T, line string) cli {
	t.Helper()
	args := strings.Fields(line)
	if len(args) < 2 || args[0] != "mystore" {
		t.Fatalf("repro %q does not name mystore %s", line, repro(t))
	}
	return mystore(args[1:]...)
}

// TestOwnDriverRun: a swarm on the caller's driver fails, every repro it
// prints names the caller's binary, and the first one replays the same
// rule and trace hash; so does the failure folder it saved, and shrink
// names the binary in its replay line.
func TestOwnDriverRun(t *testing.T) {
	got := mystore("drivers")
	var names []string
	for _, l := range strings.Split(got.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "mixed" && !strings.HasPrefix(f[0], "#") {
			names = append(names, f[0])
		}
	}
	if got.code != 0 || len(names) < 3 || names[0] != "mine" || names[1] != "stale" || names[2] != "memory" {
		t.Fatalf("drivers: exit %d, want mine first:\n%s%s %s", got.code, got.stdout, got.stderr, repro(t))
	}
	dir := t.TempDir()
	got = mystore("run", "--driver", "mine", "--seeds", "0:10", "--ops", "30", "--json", "--out", dir)
	var fail map[string]any
	for _, r := range records(t, got.stdout) {
		if r["type"] == "seed" && r["verdict"] != "pass" && fail == nil {
			fail = r
		}
	}
	if got.code != 1 || fail == nil || fail["rule"] != "D-ACCESS-END" || !strings.HasPrefix(fail["repro"].(string), "mystore replay --seed ") {
		t.Fatalf("exit %d, first failure %v; want exit 1 and a D-ACCESS-END seed whose repro names mystore %s", got.code, fail, repro(t))
	}
	r := as(t, fail["repro"].(string)+" --json")
	again := records(t, r.stdout)
	if r.code != 1 || len(again) != 1 || again[0]["trace_hash"] != fail["trace_hash"] || again[0]["rule"] != fail["rule"] || again[0]["repro"] != fail["repro"] {
		t.Fatalf("%s: exit %d, %v; the swarm printed %v %s", fail["repro"], r.code, again, fail, repro(t))
	}
	folder := fail["out"].(string)
	text, err := os.ReadFile(filepath.Join(folder, "repro.txt"))
	if err != nil || strings.Count(string(text), "mystore ") != 3 || strings.Contains(string(text), "storesim ") {
		t.Fatalf("%s/repro.txt: %v\n%s\nwant three mystore commands %s", folder, err, text, repro(t))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n")[1:2] { // mystore replay DIR
		if r := as(t, line+" --json"); r.code != 1 || !strings.Contains(r.stdout, `"trace_hash":"`+fail["trace_hash"].(string)+`"`) {
			t.Fatalf("%s: exit %d\n%s%s %s", line, r.code, r.stdout, r.stderr, repro(t))
		}
	}
	s := mystore("shrink", folder, "--max-runs", "40")
	if s.code != 0 || !strings.Contains(s.stdout, "# replay: mystore replay FILE\n") || !strings.Contains(s.stdout, "# origin: mystore replay "+folder+"\n") {
		t.Fatalf("shrink %s: exit %d\n%s%s %s", folder, s.code, s.stdout, s.stderr, repro(t))
	}
}

var (
	tableRow   = regexp.MustCompile(`^(\S+)\s+fail\s`)
	tableRepro = regexp.MustCompile(`^    repro: (.*)$`)
)

// failures reads a certify table: failing row → its first violation and
// its repro.
func failures(table string) map[string][2]string {
	out := map[string][2]string{}
	row, first := "", ""
	for _, line := range strings.Split(table, "\n") {
		switch m, r := tableRow.FindStringSubmatch(line), tableRepro.FindStringSubmatch(line); {
		case m != nil:
			row, first = m[1], ""
		case r != nil && row != "":
			out[row] = [2]string{first, r[1]}
			row = ""
		case row != "" && first == "" && strings.HasPrefix(line, "    "):
			first = strings.TrimSpace(line)
		}
	}
	return out
}

// TestOwnDriverCertify: certify fails the caller's driver on the planted
// bug's rule; every failing row's repro names the binary, the case and the
// seed of the run that found its first violation, and running it shows
// that violation first again, in the same row.
func TestOwnDriverCertify(t *testing.T) {
	for driver, rule := range map[string]string{"mine": "D-ACCESS-END", "stale": "D-LOOK-2"} {
		t.Run(driver, func(t *testing.T) { certifyReruns(t, driver, rule) })
	}
	var cert struct {
		Rules []struct {
			Rule  string
			First *struct{ Group, Case string }
			Repro string
		} `json:"rules"`
	}
	got := mystore("certify", "--driver", "mine", "--short", "--rule", "D-ACCESS-END", "--json")
	if err := json.Unmarshal([]byte(got.stdout), &cert); err != nil {
		t.Fatalf("certify --json: %v\n%s %s", err, got.stdout, repro(t))
	}
	for _, rr := range cert.Rules {
		if rr.Rule == "D-ACCESS-END" && (rr.First == nil || rr.First.Group != "D-ACCESS-END" || !strings.HasPrefix(rr.Repro, "mystore certify --driver mine --rule D-ACCESS-END --case "+rr.First.Case+" --seed ")) {
			t.Fatalf("D-ACCESS-END in JSON: first %+v, repro %q %s", rr.First, rr.Repro, repro(t))
		}
	}
}

// certifyReruns certifies driver, which must fail rule, and runs every
// failing row's repro.
func certifyReruns(t *testing.T, driver, rule string) {
	got := mystore("certify", "--driver", driver, "--short")
	rows := failures(got.stdout)
	if got.code != 1 || rows[rule][0] == "" {
		t.Fatalf("certify --driver %s: exit %d, failing rows %v; want exit 1 failing %s:\n%s%s %s", driver, got.code, rows, rule, got.stdout, got.stderr, repro(t))
	}
	for row, f := range rows {
		line := f[1]
		if !strings.HasPrefix(line, "mystore certify --driver "+driver+" --rule ") && !strings.HasPrefix(line, "mystore replay --seed ") ||
			strings.HasPrefix(line, "mystore certify") && (!strings.Contains(line, " --case ") || !strings.Contains(line, " --seed ")) {
			t.Fatalf("row %s: repro %q does not name mystore with a case and seed (or its replay) %s", row, line, repro(t))
		}
		r := as(t, line)
		if strings.HasPrefix(line, "mystore replay") {
			text, _, _ := strings.Cut(f[0], " (swarm ")
			if r.code != 1 || !strings.Contains(r.stdout, text+"\n") {
				t.Fatalf("%s: exit %d; want the violation %q:\n%s%s %s", line, r.code, f[0], r.stdout, r.stderr, repro(t))
			}
			continue
		}
		again := failures(r.stdout)
		if r.code != 1 || again[row][0] != f[0] || !strings.Contains(r.stdout, "rerun of one run only: ") {
			t.Fatalf("%s: exit %d, row %s first %q; want %q:\n%s%s %s", line, r.code, row, again[row][0], f[0], r.stdout, r.stderr, repro(t))
		}
	}
	if !strings.HasPrefix(rows[rule][1], "mystore replay") && driver == "stale" {
		t.Fatalf("%s's %s was found first by a case (%s): the swarm's repro went unexercised %s", driver, rule, rows[rule][1], repro(t))
	}
}

// TestOwnDriverScenario: scenario --driver takes the caller's driver, and
// it fails the scenarios exactly as the broken driver it is does.
func TestOwnDriverScenario(t *testing.T) {
	file := "../../../scenarios/testdata/late_write.txt"
	own, ref := mystore("scenario", "--driver", "mine", file), storesim("scenario", "--driver", "broken:LiesAboutAccess", file)
	if own.code != 1 || own.code != ref.code || own.stdout != strings.NewReplacer("repro: storesim ", "repro: mystore ", "driver broken:LiesAboutAccess:", "driver mine:").Replace(ref.stdout) {
		t.Fatalf("scenario --driver mine: exit %d\n%s\nwant as broken:LiesAboutAccess (exit %d)\n%s %s", own.code, own.stdout, ref.code, ref.stdout, repro(t))
	}
}

// TestBadOptions: Options naming a driver storesim already has, or one
// without a factory or with a name that cannot be written in an op log,
// are one error line and exit 2.
func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		drivers map[string]Factory
		want    string
	}{
		{map[string]Factory{"memory": mine}, `"memory" is storesim's own name`},
		{map[string]Factory{"mixed": mine}, `"mixed" is storesim's own name`},
		{map[string]Factory{"redis://x:1": mine}, `"redis://x:1" is storesim's own name`},
		{map[string]Factory{"my driver": mine}, "one word"},
		{map[string]Factory{"a=b": mine}, "one word"},
		{map[string]Factory{"nil": nil}, "has no factory"},
	} {
		var out, errb bytes.Buffer
		code := Main([]string{"drivers"}, Options{Name: "mystore", Drivers: tc.drivers, Stdout: &out, Stderr: &errb})
		if code != exitUsage || !strings.HasPrefix(errb.String(), "mystore: Options.Drivers: ") || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 || out.Len() != 0 {
			t.Errorf("Drivers %v: exit %d, stderr %q; want exit 2, one line naming %q %s", tc.drivers, code, errb.String(), tc.want, repro(t))
		}
	}
	if got := mystore("run", "--driver", "nope"); got.code != exitUsage || !strings.Contains(got.stderr, `unknown driver "nope" (known: mine, stale, memory, together, broken:`) {
		t.Errorf("run --driver nope: exit %d, stderr %q; want the caller's driver among the known ones %s", got.code, got.stderr, repro(t))
	}
}
