package model

// What the recorder hears beside the monitor (the store's puts, the
// harness's annotations, the memory's touches) and what it gives back
// (calls, notes, the history), and the plain data it gives it in (Note,
// CallInfo, RowInfo). Moved out of recorder.go, unchanged.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// Note tags: one annotation row each in the visualization.
const (
	TagFault    = "faults"
	TagCallback = "callbacks"
	TagAccess   = "access"
	TagCancel   = "cancels"
	TagRegion   = "regions"
	TagShutdown = "shutdown"
	TagStore    = "store"
	TagLookup   = "lookups"
	TagSubmit   = "submits"
)

// Note is one event worth showing next to the history: a callback, a
// fault, an access change, a cancel, a registration, a store event. Seq is
// in the same sequence as the operations' Call and Return. Text is short
// (the call and key are fields), so recording stays cheap on the
// simulator's hot path.
type Note struct {
	Seq  int64
	At   time.Duration
	Tag  string
	Call drivers.CallID
	Key  string
	Text string
}

func (n Note) String() string {
	s := fmt.Sprintf("#%d %v %s", n.Seq, n.At, n.Tag)
	if n.Call != 0 {
		s += fmt.Sprintf(" call %d", n.Call)
	}
	if n.Key != "" {
		s += fmt.Sprintf(" key %q", n.Key)
	}
	return s + ": " + n.Text
}

// RowInfo is what the recorder knows about one row of a call.
type RowInfo struct {
	Key    string
	Region string // label; "" when the handle was not registered at submit
	Slot   int
	Status drivers.Status // PENDING until the monitor saw a final one
	// Value is a Digest: of the slot at submit (PUBLISH) or when the row
	// became final (FETCH OK); 0 otherwise.
	Value    uint64
	FinalSeq int64 // 0 while pending
	FinalAt  time.Duration
}

// CallInfo is what the recorder knows about one submitted call: plain data,
// so the memory oracle and the liveness check do not depend on the
// recorder, the backend or the driver.
type CallInfo struct {
	ID  drivers.CallID
	Dir drivers.Direction
	// CallSeq is the invocation: SubmitStarting when the monitor reports it,
	// else the Submitted event (or an earlier event of the call).
	CallSeq  int64
	CalledAt time.Duration
	Rows     []RowInfo
	Access   drivers.Access
	EndedSeq int64 // 0 until the monitor saw ENDED
	EndedAt  time.Duration
	// Cancelled: Cancel was called. Callbacks counts callbacks seen (when
	// the monitor reports them). Labelled is the shutdown label naming the
	// call, if any.
	Cancelled bool
	Callbacks int
	Labelled  string
}

// Put is optional: the harness reports that the store ran the put of row
// row of call id (whether it wrote or kept the first object: the model's
// publish step does the same). A publish row without OK/MISS is then
// TookEffect at this point.
func (r *Recorder) Put(at time.Duration, id drivers.CallID, row int, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.next()
	if _, ok := r.put(id, row); !ok {
		// In the call's record when Submitted named it; else (a put
		// before Submitted, a row the call lacks) in the map.
		if c := r.calls.get(id); c != nil && row >= 0 && row < len(c.Rows) {
			if c.puts == nil {
				c.puts = r.markSlab.Make(len(c.Rows))
			}
			c.puts[row] = mark{seq: seq, at: at}
		} else {
			if r.puts == nil {
				r.puts = make(map[callRow]mark, 32)
			}
			r.puts[callRow{id, row}] = mark{seq: seq, at: at}
		}
	}
	if !r.opts.NoNotes {
		r.addNote(Note{Seq: seq, At: at, Tag: TagStore, Call: id, Key: key, Text: "put of row " + strconv.Itoa(row) + " ran"})
	}
}

// UnattributedPut is optional: the harness reports that the store ran a
// put of key that names no call (a simulated driver written outside this
// repository that calls Store.Put itself). The store's log then says
// nothing about which publish of key it was, so with StoreLogComplete a
// FAULT or unanswered publish of key is ambiguous (it may be that put),
// not "no effect": a driver whose transport lost the answer of a put that
// ran is honest (SPEC §3, FAULT). A NOT_ATTEMPTED publish still had none.
func (r *Recorder) UnattributedPut(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.anonPuts == nil {
		r.anonPuts = map[string]bool{}
	}
	r.anonPuts[key] = true
}

// put is the first put the store ran of row of call id (Put), if any.
func (r *Recorder) put(id drivers.CallID, row int) (mark, bool) {
	if c := r.calls.get(id); c != nil {
		return r.putOf(c, row)
	}
	m, ok := r.puts[callRow{id, row}]
	return m, ok
}

// putOf is put for row of c.
func (r *Recorder) putOf(c *callRec, row int) (mark, bool) {
	if row >= 0 && row < len(c.puts) && c.puts[row].seq != 0 {
		return c.puts[row], true
	}
	if len(r.puts) == 0 {
		return mark{}, false
	}
	m, ok := r.puts[callRow{c.ID, row}]
	return m, ok
}

// Annotate is optional: the harness adds a note of its own (an injected
// fault, an eviction, a lender event).
func (r *Recorder) Annotate(at time.Duration, tag string, call drivers.CallID, key, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note(at, tag, call, key, text)
}

// OnTouch is the online hook for arena.Options.OnTouch: it stamps each touch
// with its exact place among the monitor's events, so the memory oracle
// orders a touch against the ENDED the monitor saw without relying on
// virtual time (many events share one instant).
//
// It keeps only the touches that can change the oracle's verdict, so a
// driver that touches its rows over and over costs nothing: the first
// touch of each kind (toucher, read or write, region, slot) — which decides
// D-SUB-6 and whether a FETCH row reported MISS was written (D-STATUS) —
// and the first touch of each toucher after the monitor saw its call's
// access ENDED (D-ACCESS-END: a touch stamped after the ENDED event). The
// oracle reports one violation per rule, call and row, told by its first
// touch, so its findings are those of the full log. At most MaxTouches are
// kept.
func (r *Recorder) OnTouch(t arena.Touch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.cur()
	r.lastTouch = t
	r.ntouch++
	// A touch by a known call's row of that row's own slot (every touch of
	// a conforming driver) is marked in the call's record, without hashing
	// a key; any other, and one before Submitted named the call, in the
	// maps. A kind is seen when either marks it.
	c := r.calls.get(t.By.Call)
	row := t.By.Row
	bits := c != nil && row >= 0 && row < min(len(c.Rows), touchBitRows)
	own := bits && (t.Op == arena.Read || t.Op == arena.Write) && t.Slot == c.Rows[row].Slot && t.Region == c.Rows[row].Region
	var k touchKey
	seen := own && c.touched&touchBits(row, t.Op) != 0
	if !seen && (!own || len(r.touchSeen) > 0) {
		k = touchKey{by: t.By, op: t.Op, region: r.touchRegion(t.Region), slot: t.Slot}
		seen = r.touchSeen[k]
	}
	ended := r.endedLocked(t.By.Call)
	keep := !seen
	if !keep && ended != 0 && !r.lateKept(c, t.By, bits) {
		keep = true
		r.keptLate(c, t.By, bits)
	}
	if !keep {
		return
	}
	if len(r.touches) >= MaxTouches {
		if r.touchDropped == 0 {
			r.firstDropped = t
		}
		r.touchDropped++
		return
	}
	if own {
		c.touched |= touchBits(row, t.Op)
	} else {
		if r.touchSeen == nil {
			r.touchSeen = make(map[touchKey]bool, 64)
		}
		r.touchSeen[k] = true
	}
	if ended != 0 {
		r.keptLate(c, t.By, bits)
	}
	r.touches = append(r.touches, stampedTouch{Touch: t, seq: seq, online: true})
}

// lateKept says whether a touch by by after its call's ENDED was kept;
// bits says c.touched has by's marks.
func (r *Recorder) lateKept(c *callRec, by drivers.Toucher, bits bool) bool {
	return (bits && c.touched&touchBits(by.Row, 0) != 0) || r.lateSeen[by]
}

// keptLate marks that a touch by by after its call's ENDED was kept.
func (r *Recorder) keptLate(c *callRec, by drivers.Toucher, bits bool) {
	if bits {
		c.touched |= touchBits(by.Row, 0)
		return
	}
	if r.lateSeen == nil {
		r.lateSeen = map[drivers.Toucher]bool{}
	}
	r.lateSeen[by] = true
}

// endedLocked is the sequence number of the ENDED the monitor reported for
// call id (0: none yet), also before Submitted named the call.
func (r *Recorder) endedLocked(id drivers.CallID) int64 {
	if c := r.calls.get(id); c != nil {
		return c.EndedSeq
	}
	for _, e := range r.early[id] {
		if e.isAcc && e.acc == drivers.AccessEnded {
			return e.seq
		}
	}
	return 0
}

// LastTouch is the latest touch the recorder saw (kept or not), and how
// many it saw in all; ok is false before the first.
func (r *Recorder) LastTouch() (t arena.Touch, seen int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastTouch, r.ntouch, r.ntouch > 0
}

// Kept says how much the recorder keeps and dropped at its bounds:
// notes and touches kept (see OnTouch), notes and distinct touches
// dropped.
func (r *Recorder) Kept() (notes, touches, notesDropped, touchesDropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes), len(r.touches), r.notesDropped, r.touchDropped
}

// Seq is the sequence number of the last event recorded.
func (r *Recorder) Seq() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur()
}

func (r *Recorder) cur() int64 {
	if r.opts.Sequence != nil {
		return r.opts.Sequence.Load()
	}
	return r.seq
}

// Calls returns a copy of every call's facts, in submission order.
func (r *Recorder) Calls() []CallInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callsLocked()
}

func (r *Recorder) callsLocked() []CallInfo {
	out := make([]CallInfo, len(r.order))
	n := 0
	for _, c := range r.order {
		n += len(c.Rows)
	}
	rows := make([]RowInfo, 0, n) // one allocation for every call's rows
	for i, c := range r.order {
		out[i] = c.CallInfo
		start := len(rows)
		rows = append(rows, c.Rows...)
		out[i].Rows = rows[start:len(rows):len(rows)]
		out[i].Labelled = r.labels[c.ID]
	}
	return out
}

// Notes returns the notes, in sequence order; beyond MaxNotes the last one
// says how many more were dropped.
func (r *Recorder) Notes() []Note {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Note(nil), r.notes...)
	if r.notesDropped > 0 {
		last := out[len(out)-1]
		out = append(out, Note{Seq: last.Seq, At: last.At, Tag: TagCallback,
			Text: fmt.Sprintf("… and %d more notes, dropped (a recorder keeps %d)", r.notesDropped, MaxNotes)})
	}
	return out
}

// History returns one operation per row of every submitted call (and per
// escaped publish, and per looked-up key with Lookups), in call order. A
// publish row without OK/MISS is TookEffect when the harness reported its
// Put, NoEffect when it did not and StoreLogComplete is set, else Ambiguous.
func (r *Recorder) History() History { return r.AppendHistory(nil) }

// AppendHistory appends History to h: several recorders' histories end to
// end fill one array when h has room for them all (HistoryLen).
func (r *Recorder) AppendHistory(h History) History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h = slices.Grow(h, r.historyLen()) // one allocation at most, not one per doubling
	base := len(h)
	sorted := true // h[base:] in call order: its rows' calls never go down
	for _, c := range r.order {
		sorted = sorted && (len(h) == base || len(c.Rows) == 0 || c.CallSeq >= h[len(h)-1].Call)
		kind := KindFetch
		if c.Dir == drivers.Publish {
			kind = KindPublish
		}
		for i, row := range c.Rows {
			op := Op{Kind: kind, Key: row.Key, Status: row.Status, Value: row.Value,
				Call: c.CallSeq, Return: Never, CallID: c.ID, Row: i, CallAt: c.CalledAt}
			if row.Status.Final() {
				op.Return, op.ReturnAt = row.FinalSeq, row.FinalAt
			}
			if kind == KindPublish && !op.Settled() {
				if put, ok := r.putOf(c, i); ok {
					op.Effect, op.EffectSeq = TookEffect, max(put.seq, op.Call)
				} else if r.opts.StoreLogComplete && (row.Status == drivers.NotAttempted || !r.anonPuts[row.Key]) {
					op.Effect = NoEffect
				}
			}
			h = append(h, op)
		}
	}
	if sorted && r.extraSorted() {
		return r.mergeExtra(h, base)
	}
	for i := range r.extra {
		h = append(h, r.extra[i].op())
	}
	// A stable sort by call; a history already in call order (the usual
	// case) is left as it is, which is what the sort would leave.
	byCall := func(a, b Op) int { return cmp.Compare(a.Call, b.Call) }
	if own := h[base:]; !slices.IsSortedFunc(own, byCall) {
		slices.SortStableFunc(own, byCall)
	}
	return h
}

// HistoryLen is how many operations History returns.
func (r *Recorder) HistoryLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.historyLen()
}

func (r *Recorder) historyLen() int {
	n := len(r.extra)
	for _, c := range r.order {
		n += len(c.Rows)
	}
	return n
}

// extraSorted reports whether the extra ops are in call order.
func (r *Recorder) extraSorted() bool {
	for i := 1; i < len(r.extra); i++ {
		if r.extra[i].seq < r.extra[i-1].seq {
			return false
		}
	}
	return true
}

// mergeExtra appends the extra ops to h, whose ops from base on are the
// calls' rows, both in call order, merging them: what the stable sort of
// the two appended gives (on a tie a row comes first, as it does there),
// without sorting the large Op records. It merges from the back, in place
// in h's capacity.
func (r *Recorder) mergeExtra(h History, base int) History {
	i, j := len(h)-1, len(r.extra)-1
	h = h[:len(h)+len(r.extra)]
	for k := len(h) - 1; j >= 0; k-- {
		if i >= base && h[i].Call > r.extra[j].seq {
			h[k] = h[i]
			i--
		} else {
			h[k] = r.extra[j].op()
			j--
		}
	}
	return h
}
