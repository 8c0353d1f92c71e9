package model

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/slab"
)

// RecorderOptions configures a Recorder.
type RecorderOptions struct {
	// Peek reads a row's slot bytes without recording a touch; nil means
	// PeekRegion.
	Peek func(r drivers.Region, slot int) []byte
	// Seed is stamped on every violation.
	Seed uint64
	// Lookups records each key of a successful Contains as a LOOKUP
	// operation at the LookedUp event. Sound only where Contains is
	// synchronous on the runtime (the simulator), since the event carries no
	// start.
	Lookups bool
	// StoreLogComplete says the harness reports every put the store runs
	// (Put): an ambiguous publish without a Put then had no effect — except
	// on a key the store also ran a put of that named no call
	// (UnattributedPut), where it may have.
	StoreLogComplete bool
	// Sequence, if set, is shared by several recorders (one per endpoint on
	// one store) so their histories merge: Call and Return positions then
	// come from one counter. Nil gives the recorder its own.
	Sequence *atomic.Int64
	// NoNotes keeps no notes: each still takes its sequence number, so the
	// history is the same as with notes, but only reports read notes and a
	// run whose report nobody prints need not keep them (the engine's Lean
	// runs).
	NoNotes bool
	// Ops, when known, is about how many ops the recorder's endpoint runs
	// (publishes, fetches, probes): the recorder's lists start with room for
	// what that many need. 0 means room for an endpoint of a 100-op run.
	Ops int
	_   struct{}
}

// Recorder is the history recorder at the driver boundary: it implements
// monitor.Observer and turns what the contract monitor sees into a History
// (one operation per row result), per-call facts for the memory oracle and
// the liveness check, and notes for the visualization. It is safe for
// concurrent use (real-time mode).
//
// The monitor must report a row final before the backend hears of it (the
// monitor reads results in the callback before forwarding it), so a FETCH
// OK's slot is read before the lender can reuse it.
//
// Beyond monitor.Observer the monitor (or harness) may call SubmitStarting,
// Callback, Put, Annotate and OnTouch; each is optional.
type Recorder struct {
	opts RecorderOptions
	peek func(drivers.Region, int) []byte

	mu  sync.Mutex
	seq int64
	// regList is every region registered, in order, with the handle it was
	// registered as: a few, so a scan from the latest back finds a handle's
	// region (regionIndex) faster than a map's hash.
	regList   []registered
	calls     callIndex
	order     []*callRec
	early     map[drivers.CallID][]earlyEvent
	starting  []starting // SubmitStarting's marks whose Submitted has not come
	labels    map[drivers.CallID]string
	puts      map[callRow]mark // the first put the store ran of a publish row, when callRec.puts cannot hold it
	anonPuts  map[string]bool  // keys the store ran a put of that named no call (UnattributedPut)
	extra     []extraOp        // escaped publishes and lookups
	escaped   int              // submits that failed with an error after which rows may have escaped
	refusedIn []seqSpan        // the event spans of Submits refused with a nothing-escaped error (touches inside: D-SUB-1)
	unread    int              // publish slots that could not be read
	notes     []Note
	touches   []stampedTouch
	scratch   []byte // the slot bytes a digest reads (peekSlot)

	notesDropped    int                      // notes beyond MaxNotes
	touchSeen       map[touchKey]bool        // kinds of touch kept that callRec.touched does not mark (see OnTouch)
	touchRegions    []string                 // the region labels touchKeys name
	touchRegionsInl [4]string                // touchRegions' first storage
	startingInl     [4]starting              // starting's first storage (a few batches at once)
	regListInl      [8]registered            // regList's first storage (a run with probes registers about 7)
	lateSeen        map[drivers.Toucher]bool // a touch after the call's ENDED was kept (unless callRec.touched marks it)
	touchDropped    int                      // distinct touches beyond MaxTouches
	firstDropped    arena.Touch
	lastTouch       arena.Touch // the latest touch seen, kept or not
	ntouch          int64       // touches seen, kept or not

	// Every call's record and rows, carved from chunks: they live as long
	// as the recorder.
	callSlab   slab.Of[callRec]
	rowSlab    slab.Of[RowInfo]
	regionSlab slab.Of[int32]
	markSlab   slab.Of[mark]
}

// The bounds of what a recorder keeps, whatever the driver does. Normal
// runs stay far below them.
const (
	// MaxNotes bounds the notes (they are for reports and the
	// visualization, no check reads them): beyond it notes are counted, and
	// Notes ends with one saying how many were dropped.
	MaxNotes = 1 << 17
	// MaxTouches bounds the distinct touches kept for the memory oracle
	// (see OnTouch): beyond it a touch is counted, and MemoryViolations
	// reports that the oracle could not judge every touch (harness).
	MaxTouches = 1 << 19
)

// NewRecorder returns an empty recorder.
func NewRecorder(opts RecorderOptions) *Recorder {
	// early, labels and puts are made on first use: many runs never need
	// some of them.
	// The lists start at about what opts.Ops need, so they seldom grow: an
	// op of the engine makes on average 3/4 of a call and of a kept touch,
	// and 5/4 of an escaped publish or lookup (each gets room for more: they
	// vary); a run with probes has about 7 regions.
	ops := 48
	if opts.Ops > 0 {
		ops = max(opts.Ops, 4)
	}
	calls := make([]*callRec, 2*ops) // the call index's and order's room, in one array
	r := &Recorder{
		opts: opts, peek: opts.Peek,
		calls:   callIndex{dense: calls[:0:ops]},
		order:   calls[ops:ops],
		extra:   make([]extraOp, 0, ops*3/2),
		touches: make([]stampedTouch, 0, ops),
	}
	r.starting, r.regList = r.startingInl[:0], r.regListInl[:0]
	if opts.Ops > 0 {
		// The slabs' first chunks too (over 600 seeds of 2, 35 and 100
		// ops, one endpoint: about the 90th percentile of each, but the
		// calls' median: a fuzz input's ops make fewer calls).
		r.callSlab.Reserve(opts.Ops/2 + 3)
		r.rowSlab.Reserve(opts.Ops*3/2 + 2)
		r.regionSlab.Reserve(opts.Ops + 2)
		r.markSlab.Reserve(opts.Ops/2 + 3)
	}
	if r.peek == nil {
		r.peek = PeekRegion
	}
	return r
}

// PeekRegion reads slot of r as its owner, without recording a touch: it
// uses (*arena.Arena).Peek for simulated memory, copies drivers.Bytes, and
// reads any other Memory on behalf of call 0 (no call). It returns nil when
// the slot cannot be read.
func PeekRegion(r drivers.Region, slot int) []byte {
	b, _ := appendPeekRegion(nil, r, slot)
	return b
}

// appendPeekRegion is PeekRegion appending to dst: ok is false (and b
// nil) when the slot cannot be read. The digests use it with a scratch
// buffer, since they only hash the bytes.
func appendPeekRegion(dst []byte, r drivers.Region, slot int) (b []byte, ok bool) {
	if r.Mem == nil || slot < 0 || slot >= r.Slots || r.SlotBytes <= 0 {
		return nil, false
	}
	off := r.SlotOffset(slot)
	switch m := r.Mem.(type) {
	case *arena.Arena:
		return m.AppendPeek(dst, slot), true
	case drivers.Bytes:
		if off+r.SlotBytes > len(m) {
			return nil, false
		}
		return append(dst, m[off:off+r.SlotBytes]...), true
	}
	n := len(dst)
	dst = slices.Grow(dst, r.SlotBytes)[:n+r.SlotBytes]
	if r.Mem.Read(drivers.Toucher{Row: -1}, off, dst[n:]) != nil {
		return nil, false
	}
	return dst, true
}

// peekSlot is the slot's bytes for a digest, or nil when unreadable. With
// the default peek they land in r.scratch (r.mu held), valid until the
// next peekSlot.
func (r *Recorder) peekSlot(reg drivers.Region, slot int) []byte {
	if r.opts.Peek != nil {
		return r.peek(reg, slot)
	}
	b, ok := appendPeekRegion(r.scratch[:0], reg, slot)
	if !ok {
		return nil
	}
	r.scratch = b
	return b
}

func (r *Recorder) next() int64 {
	if r.opts.Sequence != nil {
		return r.opts.Sequence.Add(1)
	}
	r.seq++
	return r.seq
}

func (r *Recorder) note(at time.Duration, tag string, call drivers.CallID, key, text string) {
	r.addNote(Note{Seq: r.next(), At: at, Tag: tag, Call: call, Key: key, Text: text})
}

// notef is note with a text built only when notes are kept: a Lean run
// (NoNotes) formats nothing, yet every note still takes its sequence number.
func (r *Recorder) notef(at time.Duration, tag string, call drivers.CallID, key string, text func() string) {
	seq := r.next()
	if r.opts.NoNotes {
		return
	}
	r.addNote(Note{Seq: seq, At: at, Tag: tag, Call: call, Key: key, Text: text()})
}

// addNote keeps n unless MaxNotes notes are kept already.
func (r *Recorder) addNote(n Note) {
	if r.opts.NoNotes {
		return
	}
	if len(r.notes) >= MaxNotes {
		r.notesDropped++
		return
	}
	r.notes = append(r.notes, n)
}

// Registered implements monitor.Observer.
func (r *Recorder) Registered(at time.Duration, h drivers.Handle, reg drivers.Region) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regList = append(r.regList, registered{reg, h})
	r.notef(at, TagRegion, 0, "", func() string { return fmt.Sprintf("registered %s as handle %d", reg.Label, h) })
}

// Unregistered implements monitor.Observer. The region stays known so rows
// of older calls still resolve.
func (r *Recorder) Unregistered(at time.Duration, h drivers.Handle, reg drivers.Region) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notef(at, TagRegion, 0, "", func() string { return fmt.Sprintf("unregistered %s (handle %d)", reg.Label, h) })
}

// SubmitStarting is optional: the monitor calls it just before the driver's
// Submit, so the operations' call is the true invocation. Without it the
// call is the Submitted event, which is exact on the simulator (Submit does
// not run other calls' callbacks) but late in real time. It is matched to
// Submitted by the batch's row array.
func (r *Recorder) SubmitStarting(at time.Duration, b drivers.RowBatch) {
	if len(b.Rows) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := mark{seq: r.next(), at: at}
	for i := range r.starting {
		if r.starting[i].row == &b.Rows[0] {
			r.starting[i].mark = m // the batch again, before its Submitted
			return
		}
	}
	r.starting = append(r.starting, starting{&b.Rows[0], m})
}

// Submitted implements monitor.Observer.
func (r *Recorder) Submitted(at time.Duration, id drivers.CallID, b drivers.RowBatch, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.next()
	start, started := mark{seq: seq, at: at}, false
	if len(b.Rows) > 0 {
		for i, s := range r.starting {
			if s.row == &b.Rows[0] {
				start, started = s.mark, true
				last := len(r.starting) - 1
				r.starting[i] = r.starting[last]
				r.starting[last] = starting{}
				r.starting = r.starting[:last]
				break
			}
		}
	}
	if err != nil {
		r.submitFailed(at, start, b, err)
		return
	}
	if r.calls.get(id) != nil {
		r.note(at, TagSubmit, id, "", "Submitted again for a known call id; ignored")
		return
	}
	c := r.callSlab.New()
	c.CallInfo = CallInfo{ID: id, Dir: b.Dir, CallSeq: start.seq, CalledAt: start.at}
	c.Rows = r.rowSlab.Make(len(b.Rows))
	if b.Dir == drivers.Fetch {
		c.regs = r.regionSlab.Make(len(b.Rows))
	}
	for i, row := range b.Rows {
		ri := RowInfo{Key: row.Key, Slot: row.Slot}
		ix, ok := r.regionIndex(row.Handle)
		var reg drivers.Region
		if ok {
			reg = r.regList[ix].Region
			ri.Region = reg.Label
		}
		switch {
		case b.Dir == drivers.Publish:
			ri.Value = r.publishDigest(reg, ok, row.Slot)
		case c.regs != nil && ok:
			c.regs[i] = ix
		case c.regs != nil:
			c.regs[i] = noRegion
		}
		c.Rows[i] = ri
	}
	r.calls.add(id, c)
	r.order = append(r.order, c)
	for _, e := range r.early[id] {
		if !started && e.seq < c.CallSeq {
			c.CallSeq, c.CalledAt = e.seq, e.at
		}
		if e.isAcc {
			r.access(c, e.seq, e.at, e.acc)
		} else {
			r.final(c, e.seq, e.at, e.row, e.st)
		}
	}
	delete(r.early, id)
}

// submitFailed: InvalidSubmission, Closed and Rejected mean nothing escaped
// (D-SUB-2); any other error means rows may have escaped, so its publishes
// are ambiguous operations.
func (r *Recorder) submitFailed(at time.Duration, start mark, b drivers.RowBatch, err error) {
	clean := errors.Is(err, drivers.ErrInvalidSubmission) || errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrRejected)
	if clean {
		r.notef(at, TagSubmit, 0, "", func() string { return fmt.Sprintf("%v of %d rows refused: %v", b.Dir, len(b.Rows), err) })
		if start.seq < r.cur() && len(r.refusedIn) < maxRefusedSpans {
			r.refusedIn = append(r.refusedIn, seqSpan{from: start.seq, to: r.cur()})
		}
		return
	}
	r.escaped++
	r.notef(at, TagFault, 0, "", func() string {
		return fmt.Sprintf("%v of %d rows failed, rows may have escaped (D-SUB-2): %v", b.Dir, len(b.Rows), err)
	})
	if b.Dir != drivers.Publish {
		return
	}
	for i, row := range b.Rows {
		reg, ok := r.region(row.Handle)
		r.extra = append(r.extra, extraOp{kind: KindPublish, key: row.Key, status: drivers.Pending,
			value: r.publishDigest(reg, ok, row.Slot), seq: start.seq, at: start.at, row: int32(i)})
	}
}

// region is the region registered as h, if any.
func (r *Recorder) region(h drivers.Handle) (drivers.Region, bool) {
	i, ok := r.regionIndex(h)
	if !ok {
		return drivers.Region{}, false
	}
	return r.regList[i].Region, true
}

// regionIndex is the index in regList of the latest region registered as
// h, if any.
func (r *Recorder) regionIndex(h drivers.Handle) (int32, bool) {
	for i := len(r.regList) - 1; i >= 0; i-- {
		if r.regList[i].h == h {
			return int32(i), true
		}
	}
	return 0, false
}

// rowRegion is the region row i of c was on at submit, if any.
func (r *Recorder) rowRegion(c *callRec, i int) (drivers.Region, bool) {
	if c.regs[i] == noRegion {
		return drivers.Region{}, false
	}
	return r.regList[c.regs[i]].Region, true
}

// publishDigest reads the content a publish sends; an unreadable slot gets
// a value of its own, unique, that no read can match.
func (r *Recorder) publishDigest(reg drivers.Region, known bool, slot int) uint64 {
	if known {
		if b := r.peekSlot(reg, slot); b != nil {
			return Digest(b)
		}
	}
	r.unread++
	return Digest([]byte(fmt.Sprintf("storesim: unreadable publish slot #%d", r.unread)))
}

// fetchDigest reads what a FETCH OK delivered; an unreadable slot gives the
// digest of nothing, which no publish has (slots are never empty), so the
// read fails the model rather than passing unchecked.
func (r *Recorder) fetchDigest(reg drivers.Region, known bool, slot int) uint64 {
	if known {
		if b := r.peekSlot(reg, slot); b != nil {
			return Digest(b)
		}
	}
	return Digest(nil)
}

// RowFinal implements monitor.Observer.
func (r *Recorder) RowFinal(at time.Duration, id drivers.CallID, row int, st drivers.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.next()
	c := r.calls.get(id)
	if c == nil {
		r.addEarly(id, earlyEvent{seq: seq, at: at, row: row, st: st})
		return
	}
	r.final(c, seq, at, row, st)
}

// addEarly keeps an event of a call Submitted has not named yet.
func (r *Recorder) addEarly(id drivers.CallID, e earlyEvent) {
	if r.early == nil {
		r.early = map[drivers.CallID][]earlyEvent{}
	}
	r.early[id] = append(r.early[id], e)
}

func (r *Recorder) final(c *callRec, seq int64, at time.Duration, row int, st drivers.Status) {
	if row < 0 || row >= len(c.Rows) || c.Rows[row].Status.Final() || !st.Final() {
		return // the monitor reports these; the history keeps the first result
	}
	ri := &c.Rows[row]
	ri.Status, ri.FinalSeq, ri.FinalAt = st, seq, at
	if c.Dir == drivers.Fetch && st == drivers.OK {
		reg, ok := r.rowRegion(c, row)
		ri.Value = r.fetchDigest(reg, ok, ri.Slot)
	}
	if (st == drivers.Fault || st == drivers.NotAttempted) && !r.opts.NoNotes {
		r.addNote(Note{Seq: seq, At: at, Tag: TagFault, Call: c.ID, Key: ri.Key,
			Text: "row " + strconv.Itoa(row) + " " + st.String()})
	}
}

// AccessChanged implements monitor.Observer.
func (r *Recorder) AccessChanged(at time.Duration, id drivers.CallID, acc drivers.Access) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.next()
	c := r.calls.get(id)
	if c == nil {
		r.addEarly(id, earlyEvent{seq: seq, at: at, row: -1, acc: acc, isAcc: true})
		return
	}
	r.access(c, seq, at, acc)
}

func (r *Recorder) access(c *callRec, seq int64, at time.Duration, acc drivers.Access) {
	c.Access = acc
	if acc == drivers.AccessEnded && c.EndedSeq == 0 {
		c.EndedSeq, c.EndedAt = seq, at
	}
	text := "access ?"
	if int(acc) < len(accessTexts) {
		text = accessTexts[acc]
	}
	r.addNote(Note{Seq: seq, At: at, Tag: TagAccess, Call: c.ID, Text: text})
}

// Cancelled implements monitor.Observer.
func (r *Recorder) Cancelled(at time.Duration, id drivers.CallID, res drivers.CancelResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls.get(id); c != nil {
		c.Cancelled = true
	}
	r.notef(at, TagCancel, id, "", func() string { return "cancel: " + res.String() })
}

// Callback is optional: the monitor reports each change callback of call id
// it forwards, for the visualization.
func (r *Recorder) Callback(at time.Duration, id drivers.CallID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls.get(id); c != nil {
		c.Callbacks++
	}
	r.note(at, TagCallback, id, "", "callback")
}

// LookedUp implements monitor.Observer. With RecorderOptions.Lookups each
// key of a successful answer becomes a LOOKUP operation; an error
// constrains nothing (D-LOOK-2: it is never "absent").
func (r *Recorder) LookedUp(at time.Duration, keys []string, found []bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || len(found) != len(keys) {
		r.notef(at, TagLookup, 0, "", func() string { return fmt.Sprintf("lookup of %d keys failed: %v", len(keys), err) })
		return
	}
	seq := r.next()
	if !r.opts.Lookups {
		return
	}
	for i, k := range keys {
		st := drivers.Miss
		if found[i] {
			st = drivers.OK
		}
		r.extra = append(r.extra, extraOp{kind: KindLookup, key: k, status: st, seq: seq, at: at, row: int32(i)})
	}
}

// ShutDown implements monitor.Observer: a call named by a label
// ("call:<id>:<why>") is excused from the liveness check — the driver said
// honestly that it stopped waiting (D-SHUT-1).
func (r *Recorder) ShutDown(at time.Duration, labels []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range labels {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && parts[0] == "call" {
			if id, err := strconv.ParseUint(parts[1], 10, 64); err == nil {
				if _, seen := r.labels[drivers.CallID(id)]; !seen {
					if r.labels == nil {
						r.labels = map[drivers.CallID]string{}
					}
					r.labels[drivers.CallID(id)] = l
				}
			}
		}
	}
	r.notef(at, TagShutdown, 0, "", func() string { return fmt.Sprintf("shutdown returned labels %q", labels) })
}
