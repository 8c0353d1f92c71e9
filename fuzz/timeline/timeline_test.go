package timeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
)

const repro = "(repro: go test ./fuzz/timeline -run "

// failing is a run with a late touch: broken:LiesAboutAccess on seed 17
// fails D-ACCESS-END (the README's example).
func failing(t *testing.T) *engine.Result {
	t.Helper()
	r := engine.RunSeed(17, engine.Config{Driver: "broken:LiesAboutAccess"})
	if r.Verdict != engine.Safety || r.Rule() != rules.DAccessEnd {
		t.Fatalf("seed 17 on broken:LiesAboutAccess: %s, want a D-ACCESS-END failure %sTestPage)", r.Summary(), repro)
	}
	return r
}

func render(t *testing.T, r *engine.Result, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r, o); err != nil {
		t.Fatalf("Write: %v %sTestPage)", err, repro)
	}
	return b.String()
}

// TestPage: the page is one self-contained file (no URL, no external
// script, style or image), names every endpoint and region lane, every
// failure with its rule and the repro command, and is the same bytes for
// the same run.
func TestPage(t *testing.T) {
	r := failing(t)
	html := render(t, r, Options{})
	for _, bad := range []string{"http://", "https://", "<link", "src=", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Fatalf("the page refers outside itself (%q) %sTestPage)", bad, repro)
		}
	}
	for _, want := range []string{"<!doctype html>", `id="storesim-status"`, "D-ACCESS-END", r.Repro(), "seed 17"} {
		if !strings.Contains(html, want) {
			t.Fatalf("the page lacks %q %sTestPage)", want, repro)
		}
	}
	d := build(r, Options{})
	lanes := map[string]bool{}
	for _, l := range d.Lanes {
		lanes[l.Kind+" "+l.Endpoint+"/"+l.Name] = true
	}
	for _, e := range r.Log.Endpoints {
		if !lanes["endpoint "+e.Name+"/"+e.Name] {
			t.Fatalf("no lane for endpoint %s: %v %sTestPage)", e.Name, lanes, repro)
		}
		for _, rg := range e.Regions {
			if !lanes["region "+e.Name+"/"+rg.Label] {
				t.Fatalf("no lane for region %s of %s: %v %sTestPage)", rg.Label, e.Name, lanes, repro)
			}
		}
	}
	for _, l := range d.Lanes {
		if l.Kind == "endpoint" && !strings.Contains(l.Setup, "faults injected") {
			t.Fatalf("endpoint lane %s does not say which faults were injected: %q %sTestPage)", l.Name, l.Setup, repro)
		}
	}
	if again := render(t, r, Options{}); again != html {
		t.Fatalf("two pages of one run differ %sTestPage)", repro)
	}
}

// TestEverythingOnItsLane: every call of the run is a bar on its
// endpoint's lane from its submit to its evidence, every row it placed is
// on its region's lane, and the recorded events — callbacks, access
// changes, cancels, faults, registrations, attempts and the lender's
// releases — are all there, registrations and releases also on their
// region's lane.
func TestEverythingOnItsLane(t *testing.T) {
	r := failing(t)
	d := build(r, Options{})
	if len(d.Calls) != len(r.Calls) || len(d.Calls) == 0 {
		t.Fatalf("%d call bars for %d calls %sTestEverythingOnItsLane)", len(d.Calls), len(r.Calls), repro)
	}
	rows := 0
	for i, c := range d.Calls {
		if d.Lanes[c.Lane].Kind != "endpoint" || d.Lanes[c.Lane].Name != r.Calls[i].Endpoint || c.Start > c.End || c.Start <= 0 {
			t.Fatalf("call %d (%+v) is not a bar on endpoint %s's lane %sTestEverythingOnItsLane)", i, c, r.Calls[i].Endpoint, repro)
		}
		for _, rw := range r.Calls[i].Rows {
			if rw.Region != "" {
				rows++
			}
		}
	}
	if len(d.Spans) != rows {
		t.Fatalf("%d slot spans for %d rows on known regions %sTestEverythingOnItsLane)", len(d.Spans), rows, repro)
	}
	tags := map[string]int{}
	regionTags := map[string]int{}
	for _, e := range d.Events {
		tags[e.Tag]++
		if d.Lanes[e.Lane].Kind == "region" {
			regionTags[e.Tag]++
		}
	}
	for _, tag := range []string{"callbacks", "access", "cancels", "faults", "regions", "attempts", engine.TagLender} {
		if tags[tag] == 0 {
			t.Fatalf("no %s event on the page (tags %v) %sTestEverythingOnItsLane)", tag, tags, repro)
		}
	}
	if regionTags["regions"] == 0 || regionTags[engine.TagLender] == 0 {
		t.Fatalf("registrations and releases are not on the region lanes (%v) %sTestEverythingOnItsLane)", regionTags, repro)
	}
	for _, n := range r.Notes {
		if n.Tag == engine.TagLender && !strings.Contains(n.Text, "released") && !strings.Contains(n.Text, "retained") {
			t.Fatalf("a lender note that says neither released nor retained: %v %sTestEverythingOnItsLane)", n, repro)
		}
	}
}

// TestFailuresMarked: each failure is placed inside its zoom window, on
// its endpoint's lane, on the lane of the region it names (or its row's),
// and on the call it names.
func TestFailuresMarked(t *testing.T) {
	r := failing(t)
	d := build(r, Options{})
	if len(d.Failures) != len(r.Failures) {
		t.Fatalf("%d failures placed of %d %sTestFailuresMarked)", len(d.Failures), len(r.Failures), repro)
	}
	for i, f := range d.Failures {
		v := r.Failures[i]
		if f.Rule != v.Rule.String() || f.Seq < f.From || f.Seq > f.To || f.From < d.First || f.To > d.Last {
			t.Fatalf("failure %d (%s) at #%d outside its window #%d..#%d %sTestFailuresMarked)", i, f.Rule, f.Seq, f.From, f.To, repro)
		}
		if v.Endpoint != "" && d.Lanes[f.Lanes[0]].Name != v.Endpoint {
			t.Fatalf("failure %d is marked first on lane %v, not on endpoint %s %sTestFailuresMarked)", i, d.Lanes[f.Lanes[0]], v.Endpoint, repro)
		}
		if v.Call != 0 {
			if f.Call < 0 || d.Calls[f.Call].ID != v.Call {
				t.Fatalf("failure %d names call %d but marks call index %d %sTestFailuresMarked)", i, v.Call, f.Call, repro)
			}
			onRegion := false
			for _, l := range f.Lanes {
				onRegion = onRegion || d.Lanes[l].Kind == "region"
			}
			if !onRegion {
				t.Fatalf("failure %d (%s, a touch of call %d) is not marked on a region lane %sTestFailuresMarked)", i, f.Rule, v.Call, repro)
			}
		}
	}
	first := d.Failures[0]
	if c := d.Calls[first.Call]; first.Seq < c.End {
		t.Fatalf("the late touch (D-ACCESS-END) is placed at #%d, before its call's access ENDED at #%d %sTestFailuresMarked)", first.Seq, c.End, repro)
	}
}

// TestPorcupineLinked: a page given porcupine's view links it, and says
// so for an S-LIN failure; without one an S-LIN page says none was written.
func TestPorcupineLinked(t *testing.T) {
	r := failing(t)
	lin := *r
	lin.Failures = append([]rules.Violation{{Rule: rules.SLin, Class: rules.Safety, Row: -1, Key: "k8", At: r.End, Seed: 17, Detail: "planted for the test"}}, r.Failures...)
	if html := render(t, &lin, Options{Porcupine: "porcupine.html"}); !strings.Contains(html, `id="porcupine-link" href="porcupine.html"`) || !strings.Contains(html, "this run's S-LIN failure") {
		t.Fatalf("an S-LIN page does not link porcupine's view %sTestPorcupineLinked)", repro)
	}
	if html := render(t, &lin, Options{}); !strings.Contains(html, "no porcupine view was written") {
		t.Fatalf("an S-LIN page without porcupine's view does not say so %sTestPorcupineLinked)", repro)
	}
	if html := render(t, r, Options{}); strings.Contains(html, "porcupine-link") {
		t.Fatalf("a page links a porcupine view it was not given %sTestPorcupineLinked)", repro)
	}
}

// TestPassingRun: a passing run has a page too, with no failure marker.
func TestPassingRun(t *testing.T) {
	r := engine.RunSeed(1, engine.Config{Ops: 20, AllNotes: true})
	if r.Verdict != engine.Pass {
		t.Fatalf("seed 1: %s %sTestPassingRun)", r.Summary(), repro)
	}
	html := render(t, r, Options{})
	if !strings.Contains(html, `"failures":null`) && !strings.Contains(html, `"failures":[]`) {
		t.Fatalf("a passing run's page has failures %sTestPassingRun)", repro)
	}
}

// chromium is the headless browser of the page tests, or "" when none is
// installed.
func chromium() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// Headless runs a headless Chromium on url with args (--dump-dom,
// --screenshot=…) and returns its stdout.
func headless(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	// A bound on a hung browser, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(), "--window-size=1400,900", "--hide-scrollbars"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s %sTestPageInBrowser)", bin, err, errb.String(), repro)
	}
	return out.String()
}

var statusRe = regexp.MustCompile(`<div id="storesim-status"[^>]*>`)

// TestPageInBrowser: a real browser loads the page from disk; its script
// zooms to the first failure, scrolls it into view and writes what it saw
// into #storesim-status: the failure marker is in the viewport, and it is
// the first failure's rule. Skipped without Chromium (apt-get install
// chromium). With STORESIM_TIMELINE_PNG=path it also writes a screenshot
// there (the README's docs/timeline.png).
func TestPageInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no headless browser: install Chromium (apt-get install chromium) to check the timeline page in one")
	}
	r := failing(t)
	path := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(path, []byte(render(t, r, Options{})), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, "file://"+path, "--dump-dom")
	status := statusRe.FindString(dom)
	want := `data-first="` + r.Rule().String() + `"`
	if !strings.Contains(status, `data-failure-in-view="true"`) || !strings.Contains(status, want) {
		t.Fatalf("the browser did not show the failure marker in view: %q, want data-failure-in-view=\"true\" and %s %sTestPageInBrowser)", status, want, repro)
	}
	if !strings.Contains(dom, `id="failure-marker-0"`) || !strings.Contains(dom, "⚠ "+r.Rule().String()) {
		t.Fatalf("the laid-out page has no marker labelled %s %sTestPageInBrowser)", r.Rule(), repro)
	}
	if png := os.Getenv("STORESIM_TIMELINE_PNG"); png != "" {
		abs, _ := filepath.Abs(png)
		headless(t, bin, "file://"+path, "--screenshot="+abs)
		if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
			t.Fatalf("no screenshot at %s: %v %sTestPageInBrowser)", abs, err, repro)
		}
	}
}
