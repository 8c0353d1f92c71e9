// Package timeline writes the failure timeline page: one self-contained
// HTML file (no network, no external script or style) that shows a run as
// the engine recorded it (fuzz/engine Result: Notes, Calls, History,
// Failures, Ops).
//
// The page has one lane per endpoint and one per region of each endpoint.
// An endpoint's lane holds every driver call as a bar from its submit to its
// access evidence (ENDED, UNPROVABLE, or the end of the run when none came),
// with ticks for its row results, callbacks, cancels and faults, and the
// endpoint's own events (attempts admitted and committed, lookups, refused
// submits, shutdown). A region's lane holds its registrations and
// unregistrations, every row a call placed on one of its slots, and the
// lender's releases and retentions of its slots. Every failure is marked
// where it happened with its rule: a red line across the lanes, the
// offending call (or touch, on its region's lane) outlined and labelled.
//
// The horizontal axis is the order of events (the sequence the recorders
// share), not virtual time, which many events share; every element shows
// its virtual time when hovered or clicked. The page opens zoomed to the
// window around the first failure, with it scrolled into view; buttons jump
// to each failure, zoom to its window or show the whole run, and the wheel
// zooms. For an S-LIN failure it links porcupine's linearization view, when
// the caller wrote one next to it.
//
// After it has laid the page out, the page's script writes what it showed
// into the element #storesim-status (data-failure-in-view, data-rule,
// data-window), so a headless browser's --dump-dom can check that the
// failure marker is in view.
package timeline

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
)

// Options are what the page adds to the result.
type Options struct {
	// Repro is the command that replays the run (default Result.Repro()).
	Repro string
	// Porcupine is the link to porcupine's view of the same run, relative to
	// the page (a file written next to it); "" for none.
	Porcupine string
	// Report is the text report (default Result.WriteReport, with Repro).
	Report string
}

// lane is one row of the page: an endpoint or one region of an endpoint.
type lane struct {
	Kind     string `json:"kind"` // "endpoint" or "region"
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	// Setup is what the log says of it: an endpoint's driver, bounds and
	// the faults injected into it (fault lines, lies included); a region's
	// shape.
	Setup string `json:"setup"`
}

type row struct {
	Key    string `json:"key"`
	Region string `json:"region"`
	Slot   int    `json:"slot"`
	Status string `json:"status"`
	Seq    int64  `json:"seq"` // 0: no final result
	At     string `json:"at"`
}

type call struct {
	Lane      int    `json:"lane"`
	ID        uint64 `json:"id"`
	Dir       string `json:"dir"`
	Start     int64  `json:"start"`
	StartAt   string `json:"startAt"`
	End       int64  `json:"end"` // access evidence (or the run's end)
	EndAt     string `json:"endAt"`
	Access    string `json:"access"`
	Evidenced bool   `json:"evidenced"`
	Cancelled bool   `json:"cancelled"`
	Labelled  string `json:"labelled"`
	Rows      []row  `json:"rows"`
}

type event struct {
	Lane int    `json:"lane"`
	Seq  int64  `json:"seq"`
	At   string `json:"at"`
	Tag  string `json:"tag"`
	Call uint64 `json:"call"`
	Key  string `json:"key"`
	Text string `json:"text"`
	ns   time.Duration
}

// span is a row a call placed on a region's slot, on the region's lane.
type span struct {
	Lane  int    `json:"lane"`
	Call  int    `json:"call"` // index into calls
	Row   int    `json:"row"`
	Slot  int    `json:"slot"`
	Key   string `json:"key"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

type failure struct {
	Rule   string `json:"rule"`
	Class  string `json:"class"`
	Text   string `json:"text"`
	Seq    int64  `json:"seq"`
	At     string `json:"at"`
	Lanes  []int  `json:"lanes"` // the lanes it is marked on
	Call   int    `json:"call"`  // index into calls, -1 when none
	From   int64  `json:"from"`  // the violation window
	To     int64  `json:"to"`
	Lin    bool   `json:"lin"` // an S-LIN failure
	Detail string `json:"detail"`
}

type opRow struct {
	Index    int    `json:"index"`
	At       string `json:"at"`
	Line     string `json:"line"`
	Attempt  uint64 `json:"attempt"`
	Outcome  string `json:"outcome"`
	Access   string `json:"access"`
	Skipped  string `json:"skipped"`
	Endpoint string `json:"endpoint"`
}

// data is everything the page's script draws.
type data struct {
	Title     string    `json:"title"`
	Summary   string    `json:"summary"`
	Verdict   string    `json:"verdict"`
	Repro     string    `json:"repro"`
	Lin       string    `json:"lin"`
	Porcupine string    `json:"porcupine"`
	First     int64     `json:"first"`
	Last      int64     `json:"last"`
	Lanes     []lane    `json:"lanes"`
	Calls     []call    `json:"calls"`
	Events    []event   `json:"events"`
	Spans     []span    `json:"spans"`
	Failures  []failure `json:"failures"`
	Ops       []opRow   `json:"ops"`
}

var (
	reRegistered   = regexp.MustCompile(`^registered (\S+) as handle`)
	reUnregistered = regexp.MustCompile(`^unregistered (\S+) \(handle`)
	reSlots        = regexp.MustCompile(`(\S+)/\d+`)
)

func at(d time.Duration) string { return d.String() }

// build turns a result into the page's data.
func build(r *engine.Result, o Options) data {
	d := data{
		Title:     fmt.Sprintf("storesim timeline: seed %d, %s", r.Seed, r.Verdict),
		Summary:   r.Summary(),
		Verdict:   string(r.Verdict),
		Repro:     o.Repro,
		Lin:       r.Lin.String(),
		Porcupine: o.Porcupine,
	}
	laneOf := map[string]int{}
	addLane := func(kind, ep, name string) int {
		k := kind + "\x00" + ep + "\x00" + name
		if i, ok := laneOf[k]; ok {
			return i
		}
		d.Lanes = append(d.Lanes, lane{Kind: kind, Name: name, Endpoint: ep})
		laneOf[k] = len(d.Lanes) - 1
		return len(d.Lanes) - 1
	}
	epLane := func(ep string) int { return addLane("endpoint", ep, ep) }
	regLane := func(ep, reg string) int { epLane(ep); return addLane("region", ep, reg) }
	if r.Log != nil {
		for _, e := range r.Log.Endpoints {
			l := epLane(e.Name)
			d.Lanes[l].Setup = fmt.Sprintf("driver %s, rows=%d absent-is-miss=%t inflight=%d queued=%d unprovable=%d", e.Driver, e.MaxRows, e.AbsentIsMiss, e.InFlight, e.Queued, e.Unprovable)
			if len(e.Faults) == 0 {
				d.Lanes[l].Setup += "; no faults injected"
			} else {
				d.Lanes[l].Setup += "; faults injected: " + strings.Join(e.Faults, "; ")
			}
			for _, rg := range e.Regions {
				d.Lanes[regLane(e.Name, rg.Label)].Setup = fmt.Sprintf("%d slots of %d bytes", rg.Slots, rg.SlotBytes)
			}
		}
	}
	var last int64
	seen := func(seq int64) {
		if seq > last {
			last = seq
		}
	}
	for _, n := range r.Notes {
		seen(n.Seq)
	}
	for _, c := range r.Calls {
		seen(c.CallSeq)
		seen(c.EndedSeq)
		for _, rw := range c.Rows {
			seen(rw.FinalSeq)
		}
	}
	for _, op := range r.History {
		seen(op.Call)
		if op.Return != 0 && op.Return < 1<<62 {
			seen(op.Return)
		}
	}
	d.First, d.Last = 0, last+1
	callIdx := map[string]int{}
	callKey := func(ep string, id uint64) string { return fmt.Sprintf("%s\x00%d", ep, id) }
	for _, c := range r.Calls {
		cl := call{Lane: epLane(c.Endpoint), ID: uint64(c.ID), Dir: c.Dir.String(), Start: c.CallSeq, StartAt: at(c.CalledAt),
			Access: c.Access.String(), Evidenced: c.Access.Evidenced(), Cancelled: c.Cancelled, Labelled: c.Labelled}
		cl.End, cl.EndAt = d.Last, at(r.End)
		if c.EndedSeq != 0 {
			cl.End, cl.EndAt = c.EndedSeq, at(c.EndedAt)
		}
		for _, rw := range c.Rows {
			cl.Rows = append(cl.Rows, row{Key: rw.Key, Region: rw.Region, Slot: rw.Slot, Status: rw.Status.String(), Seq: rw.FinalSeq, At: at(rw.FinalAt)})
		}
		d.Calls = append(d.Calls, cl)
		ci := len(d.Calls) - 1
		callIdx[callKey(c.Endpoint, uint64(c.ID))] = ci
		for i, rw := range c.Rows {
			if rw.Region == "" {
				continue
			}
			d.Spans = append(d.Spans, span{Lane: regLane(c.Endpoint, rw.Region), Call: ci, Row: i, Slot: rw.Slot, Key: rw.Key, Start: cl.Start, End: cl.End})
		}
	}
	for _, n := range r.Notes {
		ev := event{Lane: epLane(n.Endpoint), Seq: n.Seq, At: at(n.At), Tag: n.Tag, Call: uint64(n.Call), Key: n.Key, Text: n.Text, ns: n.At}
		d.Events = append(d.Events, ev)
		var regs []string
		if m := reRegistered.FindStringSubmatch(n.Text); m != nil && n.Tag == "regions" {
			regs = []string{m[1]}
		} else if m := reUnregistered.FindStringSubmatch(n.Text); m != nil && n.Tag == "regions" {
			regs = []string{m[1]}
		} else if n.Tag == engine.TagLender {
			for _, m := range reSlots.FindAllStringSubmatch(n.Text, -1) {
				if !containsStr(regs, m[1]) {
					regs = append(regs, m[1])
				}
			}
		}
		for _, reg := range regs {
			ev.Lane = regLane(n.Endpoint, reg)
			d.Events = append(d.Events, ev)
		}
	}
	for _, f := range r.Failures {
		d.Failures = append(d.Failures, placeFailure(r, &d, f, epLane, regLane, callIdx, callKey))
	}
	for _, op := range r.Ops {
		d.Ops = append(d.Ops, opRow{Index: op.Index, At: at(op.Op.At), Line: op.Op.String(), Attempt: op.Attempt, Outcome: op.Outcome,
			Access: op.Access, Skipped: op.Skipped, Endpoint: op.Endpoint})
	}
	return d
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// placeFailure finds where a violation goes on the page: the last event of
// its call (or, without a call, of its endpoint, or of the run) at or
// before its virtual time; the lanes of its endpoint and region; and the
// window to zoom to (its call's life, or the events around it).
func placeFailure(r *engine.Result, d *data, f rules.Violation, epLane func(string) int,
	regLane func(string, string) int, callIdx map[string]int, callKey func(string, uint64) string) failure {
	out := failure{Rule: f.Rule.String(), Class: string(f.Class), Text: f.String(), At: at(f.At), Call: -1, Lin: f.Rule == rules.SLin, Detail: f.Detail}
	var seq int64
	best := func(ok func(event) bool) bool {
		found := false
		for _, e := range d.Events {
			if !ok(e) {
				continue
			}
			if e.ns <= f.At && e.Seq >= seq {
				seq, found = e.Seq, true
			}
		}
		return found
	}
	if f.Endpoint != "" {
		out.Lanes = append(out.Lanes, epLane(f.Endpoint))
		if f.Region != "" {
			out.Lanes = append(out.Lanes, regLane(f.Endpoint, f.Region))
		}
	}
	if f.Call != 0 && f.Endpoint != "" {
		if ci, ok := callIdx[callKey(f.Endpoint, f.Call)]; ok {
			out.Call = ci
			c := d.Calls[ci]
			seq = c.Start
			if f.Region == "" && f.Row >= 0 && f.Row < len(c.Rows) && c.Rows[f.Row].Region != "" {
				out.Lanes = append(out.Lanes, regLane(f.Endpoint, c.Rows[f.Row].Region))
			}
		}
	}
	// The last event at or before the violation's time: of its call, and of
	// its endpoint (a late touch comes after its call's last event), else of
	// the run.
	found := out.Call >= 0 && best(func(e event) bool { return e.Call == d.Calls[out.Call].ID && d.Lanes[e.Lane].Endpoint == f.Endpoint })
	found = f.Endpoint != "" && best(func(e event) bool { return d.Lanes[e.Lane].Endpoint == f.Endpoint }) || found
	if !found {
		best(func(event) bool { return true })
	}
	if f.At >= r.End && out.Call < 0 && f.Class == rules.Liveness {
		seq = d.Last - 1 // a hang is found at the end
	}
	out.Seq = seq
	margin := max(8, (d.Last-d.First)/40)
	out.From, out.To = seq-margin, seq+margin
	if out.Call >= 0 {
		c := d.Calls[out.Call]
		out.From, out.To = min(out.From, c.Start-margin/2), max(out.To, min(c.End, seq+4*margin)+margin/2)
	}
	out.From, out.To = max(d.First, out.From), min(d.Last, out.To)
	if len(out.Lanes) == 0 {
		out.Lanes = []int{0}
	}
	return out
}

// Write writes the timeline page of r.
func Write(w io.Writer, r *engine.Result, o Options) error {
	if o.Repro == "" {
		o.Repro = r.Repro()
	}
	if o.Report == "" {
		var b strings.Builder
		r.WriteReport(&b)
		o.Report = strings.Replace(b.String(), "repro: "+r.Repro()+"\n", "repro: "+o.Repro+"\n", 1)
	}
	d := build(r, o)
	sort.SliceStable(d.Events, func(i, j int) bool { return d.Events[i].Seq < d.Events[j].Seq })
	js, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return page.Execute(w, struct {
		Title, Summary, Repro, Report, Porcupine, Lin string
		LinFailed                                     bool
		Data                                          template.JS
		Rules                                         []string
	}{d.Title, d.Summary, o.Repro, o.Report, o.Porcupine, d.Lin, linFailed(r), template.JS(js), failedRules(r)})
}

func linFailed(r *engine.Result) bool {
	for _, f := range r.Failures {
		if f.Rule == rules.SLin {
			return true
		}
	}
	return false
}

func failedRules(r *engine.Result) []string {
	var out []string
	for _, f := range r.Failures {
		if s := f.Rule.String(); !containsStr(out, s) {
			out = append(out, s)
		}
	}
	return out
}
