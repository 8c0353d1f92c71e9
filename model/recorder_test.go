package model

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// clock is a hand-driven virtual clock for arenas and events.
type clock struct{ now time.Duration }

func (c *clock) Now() time.Duration { return c.now }

// rig is a recorder wired to one arena region ("A", 4 slots of 16 bytes,
// handle 1) with the online touch hook; tests play the driver by hand.
type rig struct {
	t   *testing.T
	clk *clock
	rec *Recorder
	a   *arena.Arena
}

func newRig(t *testing.T, opts RecorderOptions) *rig {
	r := &rig{t: t, clk: &clock{}}
	r.rec = NewRecorder(opts)
	r.a = arena.New("A", 4, 16, arena.Options{Clock: r.clk, Log: true, OnTouch: r.rec.OnTouch})
	r.a.SetRegistered(true)
	r.rec.Registered(r.tick(), 1, r.a.Region())
	for s := range 4 {
		r.a.Lend(s, uint64(s+1))
	}
	return r
}

func (r *rig) tick() time.Duration { r.clk.now += time.Millisecond; return r.clk.now }

func content(n byte) []byte { return []byte(fmt.Sprintf("object-%02d-......", n))[:16] }

func batch(dir drivers.Direction, rows ...drivers.Row) drivers.RowBatch {
	return drivers.RowBatch{Dir: dir, Rows: rows}
}

func row(key string, slot int) drivers.Row { return drivers.Row{Key: key, Handle: 1, Slot: slot} }

func (r *rig) submit(id drivers.CallID, b drivers.RowBatch) {
	r.rec.Submitted(r.tick(), id, b, nil)
}

func (r *rig) final(id drivers.CallID, row int, st drivers.Status) {
	r.rec.RowFinal(r.tick(), id, row, st)
}
func (r *rig) access(id drivers.CallID, a drivers.Access) { r.rec.AccessChanged(r.tick(), id, a) }

func (r *rig) write(id drivers.CallID, row, off int, p []byte) {
	r.tick()
	if err := r.a.Write(drivers.Toucher{Call: id, Row: row}, off, p); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) read(id drivers.CallID, row, slot int) []byte {
	r.tick()
	buf := make([]byte, 16)
	if err := r.a.Read(drivers.Toucher{Call: id, Row: row}, slot*16, buf); err != nil {
		r.t.Fatal(err)
	}
	return buf
}

// publishThenFetch plays a correct publish of content(1) from slot 0 under
// key k (call 10) and a fetch of it into slot 1 (call 11).
func (r *rig) publishThenFetch() {
	r.a.Fill(0, content(1))
	r.submit(10, batch(drivers.Publish, row("k", 0)))
	r.read(10, 0, 0)
	r.final(10, 0, drivers.OK)
	r.access(10, drivers.AccessEnded)
	r.submit(11, batch(drivers.Fetch, row("k", 1)))
	r.write(11, 0, 16, content(1))
	r.final(11, 0, drivers.OK)
	r.access(11, drivers.AccessEnded)
}

func TestRecorderHistory(t *testing.T) {
	r := newRig(t, RecorderOptions{Seed: 3})
	r.publishThenFetch()
	h := r.rec.History()
	const repro = "(repro: go test ./model -run TestRecorderHistory)"
	if len(h) != 2 {
		t.Fatalf("history has %d ops, want 2:\n%s%s", len(h), dump(h), repro)
	}
	want := Digest(content(1))
	p, f := h[0], h[1]
	if p.Kind != KindPublish || p.Value != want || p.Status != drivers.OK || p.CallID != 10 ||
		f.Kind != KindFetch || f.Value != want || f.Status != drivers.OK || f.CallID != 11 {
		t.Fatalf("wrong ops:\n%s%s", dump(h), repro)
	}
	if !(p.Call < p.Return && p.Return < f.Call && f.Call < f.Return) || f.ReturnAt <= f.CallAt {
		t.Fatalf("ops out of event order:\n%s%s", dump(h), repro)
	}
	if res := Check(h, DurableStore, 0); !res.Ok() {
		t.Fatalf("%v %s", res, repro)
	}
	if vs := r.rec.MemoryViolations(r.a); len(vs) != 0 {
		t.Fatalf("clean run has memory violations %v %s", vs, repro)
	}
	if vs := r.rec.LivenessViolations(r.clk.now); len(vs) != 0 {
		t.Fatalf("clean run has liveness violations %v %s", vs, repro)
	}
	calls := r.rec.Calls()
	if len(calls) != 2 || calls[1].Rows[0].Region != "A" || calls[1].EndedSeq == 0 {
		t.Fatalf("calls %+v %s", calls, repro)
	}
}

// A fetch that reads bytes no publish wrote (a torn or short read reported
// OK) fails the model through its digest.
func TestRecorderTornReadFailsModel(t *testing.T) {
	r := newRig(t, RecorderOptions{})
	r.a.Fill(0, content(1))
	r.submit(10, batch(drivers.Publish, row("k", 0)))
	r.final(10, 0, drivers.OK)
	r.submit(11, batch(drivers.Fetch, row("k", 1)))
	r.write(11, 0, 16, content(1)[:8]) // half the object
	r.final(11, 0, drivers.OK)
	if res := Check(r.rec.History(), DurableStore, 0); res.Outcome != porcupine.Illegal {
		t.Fatalf("torn read passed: %v (repro: go test ./model -run TestRecorderTornReadFailsModel)", res)
	}
}

func TestRecorderEarlyEvents(t *testing.T) {
	// The callback ran before Submit returned (D-CB-4 allows it): the row
	// result and access reach the recorder before Submitted.
	r := newRig(t, RecorderOptions{})
	r.a.Fill(0, content(1))
	b := batch(drivers.Publish, row("k", 0))
	r.final(10, 0, drivers.OK)
	r.access(10, drivers.AccessEnded)
	r.submit(10, b)
	h := r.rec.History()
	const repro = "(repro: go test ./model -run TestRecorderEarlyEvents)"
	if len(h) != 1 || h[0].Call > h[0].Return || h[0].Status != drivers.OK || h[0].Value != Digest(content(1)) {
		t.Fatalf("early result lost or misordered:\n%s%s", dump(h), repro)
	}
	if c := r.rec.Calls()[0]; c.Access != drivers.AccessEnded || c.EndedSeq == 0 {
		t.Fatalf("early access lost: %+v %s", c, repro)
	}
}

func TestRecorderSubmitStarting(t *testing.T) {
	r := newRig(t, RecorderOptions{})
	r.a.Fill(0, content(1))
	b := batch(drivers.Publish, row("k", 0))
	r.rec.SubmitStarting(r.tick(), b)
	start := r.rec.Seq()
	r.rec.RowFinal(r.tick(), 10, 0, drivers.OK) // a callback inside Submit
	r.submit(10, b)
	if h := r.rec.History(); h[0].Call != start {
		t.Fatalf("call seq %d, want the SubmitStarting event %d (repro: go test ./model -run TestRecorderSubmitStarting)", h[0].Call, start)
	}
}

func TestRecorderSubmitErrors(t *testing.T) {
	errTransport := errors.New("transport broke mid-submit")
	for _, c := range []struct {
		name    string
		err     error
		wantOps int
	}{
		{"invalid submission: nothing escaped", fmt.Errorf("%w: repeated key", drivers.ErrInvalidSubmission), 0},
		{"closed: nothing escaped", drivers.ErrClosed, 0},
		{"rejected: nothing escaped", drivers.ErrRejected, 0},
		{"other error: publish may have escaped", errTransport, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, RecorderOptions{})
			r.a.Fill(0, content(1))
			r.rec.Submitted(r.tick(), 0, batch(drivers.Publish, row("k", 0)), c.err)
			h := r.rec.History()
			if len(h) != c.wantOps {
				t.Fatalf("%d ops, want %d:\n%s(repro: go test ./model -run 'TestRecorderSubmitErrors')", len(h), c.wantOps, dump(h))
			}
			if c.wantOps == 1 && (h[0].Return != Never || h[0].Effect != Ambiguous || h[0].Value != Digest(content(1))) {
				t.Fatalf("escaped publish should be ambiguous: %v (repro: go test ./model -run 'TestRecorderSubmitErrors')", h[0])
			}
		})
	}
}

func TestRecorderClassifiesPublishes(t *testing.T) {
	for _, c := range []struct {
		name     string
		complete bool
		put      bool
		anon     string // a put the store ran that named no call, of this key
		status   drivers.Status
		want     Effect
	}{
		{"no store log: ambiguous", false, false, "", drivers.NotAttempted, Ambiguous},
		{"put reported: took effect", false, true, "", drivers.NotAttempted, TookEffect},
		{"complete log without put: no effect", true, false, "", drivers.NotAttempted, NoEffect},
		{"complete log, FAULT without put: no effect", true, false, "", drivers.Fault, NoEffect},
		// A FAULT of a key the store ran an unattributed put of may be that
		// put (a transport that lost the answer), so it may have happened.
		{"unattributed put of the key: FAULT ambiguous", true, false, "k", drivers.Fault, Ambiguous},
		{"unattributed put of another key: no effect", true, false, "other", drivers.Fault, NoEffect},
		{"unattributed put: NOT_ATTEMPTED still never started", true, false, "k", drivers.NotAttempted, NoEffect},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, RecorderOptions{StoreLogComplete: c.complete})
			r.a.Fill(0, content(1))
			r.submit(10, batch(drivers.Publish, row("k", 0)))
			r.rec.Cancelled(r.tick(), 10, drivers.CancelRequested)
			if c.put {
				r.rec.Put(r.tick(), 10, 0, "k")
			}
			if c.anon != "" {
				r.rec.UnattributedPut(c.anon)
			}
			r.final(10, 0, c.status)
			op := r.rec.History()[0]
			if op.Effect != c.want || (c.want == TookEffect && (op.EffectSeq <= op.Call || op.EffectSeq >= op.Return)) {
				t.Fatalf("op %v effect seq %d, want %v (repro: go test ./model -run 'TestRecorderClassifiesPublishes')", op, op.EffectSeq, c.want)
			}
		})
	}
}

func TestRecorderLookups(t *testing.T) {
	for _, on := range []bool{false, true} {
		r := newRig(t, RecorderOptions{Lookups: on})
		r.rec.LookedUp(r.tick(), []string{"x", "y"}, []bool{false, true}, nil)
		r.rec.LookedUp(r.tick(), []string{"z"}, nil, drivers.ErrLookupFailed)
		h := r.rec.History()
		want := 0
		if on {
			want = 2
		}
		if len(h) != want {
			t.Fatalf("Lookups=%v: %d ops, want %d (repro: go test ./model -run TestRecorderLookups)", on, len(h), want)
		}
		// "y" found although nothing was ever published there: D-LOOK-2
		// style lies fail the model once lookups are recorded.
		if on && Check(h, DurableStore, 0).Ok() {
			t.Fatalf("a lookup found a never-published key and passed (repro: go test ./model -run TestRecorderLookups)")
		}
	}
}

func TestRecorderNotes(t *testing.T) {
	r := newRig(t, RecorderOptions{})
	r.publishThenFetch()
	r.rec.Callback(r.tick(), 11)
	r.rec.Annotate(r.tick(), "harness", 0, "k", "evicted")
	r.rec.ShutDown(r.tick(), nil)
	var tags []string
	for _, n := range r.rec.Notes() {
		tags = append(tags, n.Tag)
	}
	for _, want := range []string{TagRegion, TagAccess, TagCallback, "harness", TagShutdown} {
		if !slices.Contains(tags, want) {
			t.Fatalf("no %q note among %v (repro: go test ./model -run TestRecorderNotes)", want, tags)
		}
	}
	if c := r.rec.Calls(); c[1].Callbacks != 1 {
		t.Fatalf("callbacks of call 11 = %d, want 1 (repro: go test ./model -run TestRecorderNotes)", c[1].Callbacks)
	}
}

// TestRecorderConcurrent: real-time mode reports events from several
// goroutines; run under -race.
func TestRecorderConcurrent(t *testing.T) {
	rec := NewRecorder(RecorderOptions{})
	mem := make(drivers.Bytes, 64*16)
	rec.Registered(0, 1, drivers.Region{Label: "B", SlotBytes: 16, Slots: 64, Mem: mem})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				id := drivers.CallID(w*8 + i + 1)
				rec.Submitted(0, id, batch(drivers.Publish, drivers.Row{Key: fmt.Sprint(id), Handle: 1, Slot: int(id) - 1}), nil)
				rec.RowFinal(0, id, 0, drivers.OK)
				rec.AccessChanged(0, id, drivers.AccessEnded)
				rec.OnTouch(arena.Touch{By: drivers.Toucher{Call: id}})
			}
		}()
	}
	wg.Wait()
	if h := rec.History(); len(h) != 64 || !Check(h, DurableStore, 0).Ok() {
		t.Fatalf("%d ops (repro: go test -race ./model -run TestRecorderConcurrent)", len(h))
	}
}

func TestPeekRegion(t *testing.T) {
	a := arena.New("P", 2, 4, arena.Options{Log: true})
	a.Fill(1, []byte("abcd"))
	plain := drivers.Bytes("....wxyz")
	for _, c := range []struct {
		name string
		r    drivers.Region
		slot int
		want string
	}{
		{"arena", a.Region(), 1, "abcd"},
		{"bytes", drivers.Region{Label: "b", SlotBytes: 4, Slots: 2, Mem: plain}, 1, "wxyz"},
		{"slot out of range", a.Region(), 2, ""},
		{"no memory", drivers.Region{Label: "n", SlotBytes: 4, Slots: 2}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(PeekRegion(c.r, c.slot)); got != c.want {
				t.Fatalf("got %q, want %q (repro: go test ./model -run 'TestPeekRegion')", got, c.want)
			}
		})
	}
	if len(a.Touches()) != 0 {
		t.Fatalf("PeekRegion recorded a touch (repro: go test ./model -run TestPeekRegion)")
	}
}
