package scenarios

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// scenarioRun is the state of one scenario file being run: the scheduler,
// the shared store, the endpoints and every named attempt, what the scenario
// knows of the store, plus the output of the command being run.
type scenarioRun struct {
	file string
	opts Options

	s        *sim.Scheduler
	store    *memdriver.Store
	evicting bool
	seed     uint64
	seq      atomic.Int64 // shared by the recorders so histories merge

	eps      []*endpoint
	byName   map[string]*endpoint
	attempts []*attemptRec
	named    map[string]*attemptRec
	raws     map[string]*rawCall
	counter  map[drivers.Direction]int

	touches bool // print every memory touch

	budget workload.Budget // the memory of every region of the file (workload.MaxTotalBytes)

	// truth: what the scenario knows about the store (monitor Options.Truth).
	change  int64            // store events so far
	changed map[string]int64 // key → change count at its last put or eviction
	pubs    map[string]int   // key → PUBLISH calls naming it without ENDED access
	fetches map[string][]int64

	out    []string
	indent string
	seen   map[string]int    // violations already printed inline
	rules  map[rules.ID]bool // rule ids of every violation printed
}

// endpoint is one backend on the shared store: what fuzz/engine builds
// (lender, driver, contract monitor, history recorder, backend), plus what
// the scenario prints and knows.
type endpoint struct {
	*engine.Endpoint
	name   string
	driver string
	caps   drivers.Capabilities
	specs  []regionSpec
	faulty bool // some fault rate is or was set
	labels map[drivers.Handle]string
	raw    []*arena.Arena // regions registered by driver-register
	shutN  int
	calls  map[drivers.CallID]*callRec
}

// callRec is what the scenario tracks of one driver call for its truth.
type callRec struct {
	dir   drivers.Direction
	keys  []string
	seq   int64
	ended bool
}

// attemptRec is one named publish or fetch and what was last printed of it.
type attemptRec struct {
	name  string
	ep    *endpoint
	dir   drivers.Direction
	keys  []string
	a     *backend.Attempt // nil: admission refused
	loan  *lender.Loan
	state backend.State
	acc   drivers.Access
	loanS lender.LoanState
	marks string
}

// rawCall is a call submitted with driver-submit, outside any backend.
type rawCall struct {
	name string
	ep   *endpoint
	call drivers.Call
}

func newScenarioRun(file string, opts Options) *scenarioRun {
	return &scenarioRun{
		file: file, opts: opts,
		byName: map[string]*endpoint{}, named: map[string]*attemptRec{}, raws: map[string]*rawCall{},
		counter: map[drivers.Direction]int{},
		changed: map[string]int64{}, pubs: map[string]int{}, fetches: map[string][]int64{},
		seen: map[string]int{}, rules: map[rules.ID]bool{},
	}
}

// printf adds one output line (indented under an event header).
func (w *scenarioRun) printf(format string, args ...any) {
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		if strings.TrimSpace(l) != "" {
			w.out = append(w.out, w.indent+l)
		}
	}
}

// step runs one event (the next, or the chosen id) under a header line and
// prints what it caused.
func (w *scenarioRun) step(e sim.EventInfo, chosen bool) {
	w.printf("> %d @%v %s", e.ID, max(e.At, w.s.Now()), e.Label)
	w.indent = "  "
	if chosen {
		w.s.Deliver(e.ID)
	} else {
		w.s.Step()
	}
	w.poll()
	w.indent = ""
}

// poll prints what changed since the last poll that the boundary observers
// do not report themselves: attempt outcomes and access, loans, and new
// violations seen online.
func (w *scenarioRun) poll() {
	for _, r := range w.attempts {
		if r.a == nil {
			continue
		}
		if st := r.a.State(); st != r.state {
			r.state = st
			w.printf("%s %s %s", r.ep.name, r.name, w.outcome(r))
		}
		if acc := r.a.Access(); acc != r.acc {
			r.acc = acc
			w.printf("%s %s access %v", r.ep.name, r.name, acc)
		}
		if m := arrived(r); m != r.marks {
			r.marks = m
			w.printf("%s %s arrived %s", r.ep.name, r.name, m)
		}
		if ls := r.loan.State(); ls != r.loanS {
			r.loanS = ls
			w.printf("%s %s slots %v", r.ep.name, r.name, ls)
		}
	}
	for _, ep := range w.eps {
		vs := append(ep.Monitor.Violations(), ep.Lender.Violations()...)
		for _, a := range ep.raw {
			vs = append(vs, lender.ArenaViolations(a)...)
		}
		for _, v := range vs {
			w.inline(ep, v)
		}
	}
}

// inline prints a violation the first time it is seen.
func (w *scenarioRun) inline(ep *endpoint, v rules.Violation) {
	key := ep.name + " " + fmtViolation(v)
	if w.seen[key] > 0 {
		return
	}
	w.seen[key]++
	w.rules[v.Rule] = true
	w.printf("!! %s", key)
}

func (w *scenarioRun) outcome(r *attemptRec) string {
	o := r.a.Outcome()
	switch o.State {
	case backend.Delivered:
		var served []string
		for i, s := range o.Served {
			if s {
				served = append(served, r.keys[i])
			}
		}
		return fmt.Sprintf("outcome DELIVERED served=[%s]", strings.Join(served, " "))
	case backend.Failed, backend.Cancelled:
		return fmt.Sprintf("outcome %v: %v", o.State, o.Reason)
	}
	return "outcome " + o.State.String()
}

// arrived is what the lender marked arrived for a fetch (S-MARKS), with
// whose object each row holds; "" before anything arrived.
func arrived(r *attemptRec) string {
	if r.dir != drivers.Fetch {
		return ""
	}
	var data []string
	for i, m := range r.loan.Marks() {
		if m {
			data = append(data, r.keys[i]+"="+describe(r.loan.Data(i)))
		}
	}
	if len(data) == 0 {
		return ""
	}
	return "[" + strings.Join(data, " ") + "]"
}

// content is what a publish writes into a slot: "<attempt>/<key>|"
// repeated, so a fetch shows whose object arrived and every publish has its
// own digest.
func content(id string, n int) []byte {
	unit := id + "|"
	b := make([]byte, n)
	for i := range b {
		b[i] = unit[i%len(unit)]
	}
	return b
}

// describe names the object in slot bytes: the publish that wrote it
// ("p1/a"), marked "~" when the bytes are not exactly that object (torn,
// short, overwritten), or what else is there.
func describe(d []byte) string {
	if i := bytes.IndexByte(d, '|'); i > 0 && printable(string(d[:i])) {
		id := string(d[:i])
		if bytes.Equal(d, content(id, len(d))) {
			return id
		}
		return id + "~"
	}
	allSame := len(d) > 0
	for _, c := range d {
		if c != d[0] {
			allSame = false
			break
		}
	}
	switch {
	case len(d) == 0:
		return "empty"
	case allSame && d[0] == arena.Poison:
		return "poison"
	case allSame && d[0] == 0:
		return "zeros"
	}
	return fmt.Sprintf("bytes(%d)", len(d))
}

func printable(s string) bool {
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return s != ""
}

// row prints a row as key@region/slot.
func (ep *endpoint) row(r drivers.Row) string {
	if l, ok := ep.labels[r.Handle]; ok {
		return fmt.Sprintf("%s@%s/%d", r.Key, l, r.Slot)
	}
	return fmt.Sprintf("%s@h%d/%d", r.Key, r.Handle, r.Slot)
}

func (ep *endpoint) rows(rs []drivers.Row) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = ep.row(r)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// fmtViolation prints a violation as a scenario shows it: `RULE call 3
// row 0 key a region r0 loan 2 @1.5µs: detail` (what it is about, only
// when it is about something).
func fmtViolation(v rules.Violation) string {
	s := v.Rule.String()
	if v.Call != 0 {
		s += fmt.Sprintf(" call %d", v.Call)
	}
	if v.Row >= 0 {
		s += fmt.Sprintf(" row %d", v.Row)
	}
	if v.Key != "" {
		s += " key " + v.Key
	}
	if v.Region != "" {
		s += " region " + v.Region
	}
	if v.Loan != 0 {
		s += fmt.Sprintf(" loan %d", v.Loan)
	}
	return fmt.Sprintf("%s @%v: %s", s, v.At, v.Detail)
}

// truth is the monitor's ground truth (Options.Truth): whether key is in
// the store now, known only on a durable store while no PUBLISH of key is
// without ENDED access and the key has not changed since the oldest
// unfinished FETCH naming it was submitted (its answer may predate the
// change).
func (w *scenarioRun) truth(key string) (present, known bool) {
	if w.evicting || w.pubs[key] > 0 {
		return false, false
	}
	if fs := w.fetches[key]; len(fs) > 0 {
		oldest := fs[0]
		for _, s := range fs[1:] {
			oldest = min(oldest, s)
		}
		if w.changed[key] >= oldest {
			return false, false
		}
	}
	return w.store.Has(key), true
}

// storeEvent prints a store event, tells the recorders about puts (so an
// ambiguous publish that landed is known, S-LIN) and keeps the truth.
func (w *scenarioRun) storeEvent(e memdriver.StoreEvent) {
	w.change++
	w.changed[e.Key] = w.change
	by := "scenario"
	switch {
	case e.By.Driver == "store":
		by = "store"
	case e.By.Driver != "":
		by = fmt.Sprintf("%s call %d row %d", e.By.Driver, e.By.Call, e.By.Row)
	}
	switch {
	case e.Kind == memdriver.EventPut && e.Stored:
		w.printf("store put %s by %s: stored", e.Key, by)
	case e.Kind == memdriver.EventPut:
		w.printf("store put %s by %s: kept the first object", e.Key, by)
	case e.Stored:
		w.printf("store evict %s by %s", e.Key, by)
	default:
		w.printf("store evict %s by %s: was absent", e.Key, by)
	}
	if e.Kind == memdriver.EventPut && e.Stored {
		if ep := w.byName[e.By.Driver]; ep != nil && ep.Recorder != nil {
			ep.Recorder.Put(w.s.Now(), e.By.Call, e.By.Row, e.Key)
		} else if ep == nil {
			for _, o := range w.eps { // a put no endpoint's call names (model.Recorder.UnattributedPut)
				if o.Recorder != nil {
					o.Recorder.UnattributedPut(e.Key)
				}
			}
		}
	}
}

// sortedKeys returns m's keys sorted (map order never reaches output).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
