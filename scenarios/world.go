package scenarios

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// world is one scenario run: the scheduler, the shared store, the endpoints
// and every named attempt, plus the output of the command being run.
type world struct {
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

	// truth: what the scenario knows about the store (monitor Options.Truth).
	change  int64            // store events so far
	changed map[string]int64 // key → change count at its last put or eviction
	pubs    map[string]int   // key → PUBLISH calls naming it without ENDED access
	fetches map[string][]int64

	out    []string
	indent string
	seen   map[string]int  // violations already printed inline
	rules  map[string]bool // rule ids of every violation printed
}

// endpoint is one backend on the shared store: lender, driver, contract
// monitor, history recorder.
type endpoint struct {
	name    string
	driver  string
	caps    drivers.Capabilities
	cfg     backend.Config
	specs   []regionSpec
	regions []drivers.Region // what the backend is asked to register
	lender  *lender.Lender
	drv     drivers.Driver
	mon     *monitor.Monitor
	rec     *model.Recorder
	b       *backend.Backend
	faulty  bool // some fault rate is or was set
	labels  map[drivers.Handle]string
	raw     []*arena.Arena // regions registered by driver-register
	asked   bool           // shutdown called
	down    bool           // a shutdown returned
	shutN   int
	calls   map[drivers.CallID]*callRec
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

func newWorld(file string, opts Options) *world {
	return &world{
		file: file, opts: opts,
		byName: map[string]*endpoint{}, named: map[string]*attemptRec{}, raws: map[string]*rawCall{},
		counter: map[drivers.Direction]int{},
		changed: map[string]int64{}, pubs: map[string]int{}, fetches: map[string][]int64{},
		seen: map[string]int{}, rules: map[string]bool{},
	}
}

// printf adds one output line (indented under an event header).
func (w *world) printf(format string, args ...any) {
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		if strings.TrimSpace(l) != "" {
			w.out = append(w.out, w.indent+l)
		}
	}
}

// step runs one event (the next, or the chosen id) under a header line and
// prints what it caused.
func (w *world) step(e sim.EventInfo, chosen bool) {
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
func (w *world) poll() {
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
		if ep.mon != nil {
			for _, v := range ep.mon.Violations() {
				w.inline(ep, fmtMonitor(v))
			}
		}
		if ep.lender != nil {
			for _, v := range ep.lender.Violations() {
				w.inline(ep, fmtLender(v))
			}
		}
		for _, a := range ep.raw {
			for _, v := range a.Violations() {
				w.inline(ep, fmtLender(lender.Violation{Rule: v.Rule, At: v.Touch.At, Detail: v.Detail + ": " + v.Touch.String()}))
			}
		}
	}
}

// rule records the rule id a violation line starts with.
func (w *world) rule(line string) {
	if f := strings.Fields(line); len(f) > 0 {
		w.rules[f[0]] = true
	}
}

// inline prints a violation the first time it is seen.
func (w *world) inline(ep *endpoint, line string) {
	key := ep.name + " " + line
	if w.seen[key] > 0 {
		return
	}
	w.seen[key]++
	w.rule(line)
	w.printf("!! %s", key)
}

func (w *world) outcome(r *attemptRec) string {
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

func fmtMonitor(v monitor.Violation) string {
	where := whereOf(v.Call, v.Row, v.Key)
	if v.Region != "" {
		where = append(where, fmt.Sprintf("region %s", v.Region))
	}
	return fmtRule(v.Rule, where, v.At, v.Detail)
}

func fmtModel(v model.Violation) string {
	return fmtRule(v.Rule, whereOf(v.Call, v.Row, v.Key), v.At, v.Detail)
}

// whereOf names the call, row and key a violation is about (zero, -1 and ""
// mean none).
func whereOf(call drivers.CallID, row int, key string) []string {
	var where []string
	if call != 0 {
		where = append(where, fmt.Sprintf("call %d", call))
	}
	if row >= 0 {
		where = append(where, fmt.Sprintf("row %d", row))
	}
	if key != "" {
		where = append(where, fmt.Sprintf("key %s", key))
	}
	return where
}

func fmtLender(v lender.Violation) string {
	var where []string
	if v.Loan != 0 {
		where = append(where, fmt.Sprintf("loan %d", v.Loan))
	}
	return fmtRule(v.Rule, where, v.At, v.Detail)
}

func fmtRule(rule string, where []string, at time.Duration, detail string) string {
	s := rule
	if len(where) > 0 {
		s += " " + strings.Join(where, " ")
	}
	return fmt.Sprintf("%s @%v: %s", s, at, detail)
}

// truth is the monitor's ground truth (Options.Truth): whether key is in
// the store now, known only on a durable store while no PUBLISH of key is
// without ENDED access and the key has not changed since the oldest
// unfinished FETCH naming it was submitted (its answer may predate the
// change).
func (w *world) truth(key string) (present, known bool) {
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
func (w *world) storeEvent(e memdriver.StoreEvent) {
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
		if ep := w.byName[e.By.Driver]; ep != nil && ep.rec != nil {
			ep.rec.Put(w.s.Now(), e.By.Call, e.By.Row, e.Key)
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
