package memdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// ruleCases are the D-rule tests; TestRules runs each on both drivers.
var ruleCases = []struct {
	rule string
	run  func(t *testing.T, k kind)
}{
	{"D-REG-1_geometry", testRegGeometry},
	{"D-REG-1_overlap", testRegOverlap},
	{"D-REG-2", testRegRefusedLeavesNothing},
	{"D-REG-3", testRegStaleClose},
	{"D-REG-4_once", testRegCloseFailsOnce},
	{"D-REG-4_forever", testRegCloseFailsForever},
	{"D-REG-5", testRegAfterShutdown},
	{"D-REG-6", testRegBusy},
	{"D-LOOK-1", testLookup},
	{"D-LOOK-2", testLookupOutage},
	{"D-SUB-1", testSubmitValidates},
	{"D-SUB-2", testSubmitErrors},
	{"D-STATUS_publish-fetch", testStatusRoundTrip},
	{"D-STATUS_absent-not-miss", testAbsentIsFault},
	{"D-STATUS_size-mismatch", testSizeMismatch},
	{"D-SUB-4", testFirstWriterWins},
	{"D-SUB-5", testAtomicVisibility},
	{"D-CB-1", func(t *testing.T, k kind) { testCallbacks(t, k, "D-CB-1") }},
	{"D-CB-2", func(t *testing.T, k kind) { testCallbacks(t, k, "D-CB-2") }},
	{"D-CB-3", func(t *testing.T, k kind) { testCallbacks(t, k, "D-CB-3") }},
	{"D-CB-4", func(t *testing.T, k kind) { testCallbacks(t, k, "D-CB-4") }},
	{"D-ACCESS", func(t *testing.T, k kind) { testCallbacks(t, k, "D-ACCESS") }},
	{"D-CB-5", testNoCallbackAfterShutdown},
	{"D-CAN-1", testCancelNonBlocking},
	{"D-CAN-2_before-start", testCancelBeforeStart},
	{"D-CAN-2_mid-call", testCancelMidCall},
	{"D-DRAIN-1", testDrainHonest},
	{"D-DRAIN-2", testDrainAfterLastCallback},
	{"D-SHUT-1_clean", testShutdownClean},
	{"D-SHUT-1_never-ends", testShutdownUnprovable},
	{"D-SHUT-2", testShutdownRetries},
	{"D-QUAR", testQuarantine},
	{"D-TOG-1", testTogetherAllOrNothing},
	{"D-TOG-3", testTogetherUnregisterFails},
	{"D-TOG-4", testTogetherBusy},
	{"TOG-one-live-batch", testTogetherOneBatch},
}

// TestRules runs every D-rule test on the MemoryDriver and on the
// TogetherMemoryDriver. D-CB-1..4 and D-ACCESS are checked in every case by
// the watch each call carries; D-SUB-6, D-ACCESS-END and "MISS is never
// touched" by the arena hook of every env.
func TestRules(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for _, rc := range ruleCases {
				t.Run(rc.rule, func(t *testing.T) { rc.run(t, k) })
			}
		})
	}
}

func testRegGeometry(t *testing.T, k kind) {
	// With every store registration refused, a geometry error must still be
	// reported as one: the store was not asked (D-REG-1).
	e := newEnv(t, k, envOpts{cfg: Config{Faults: FaultMix{RegisterRefused: 1}}})
	buf := make(drivers.Bytes, 64)
	for _, c := range []struct {
		name string
		r    drivers.Region
	}{
		{"no-label", drivers.Region{SlotBytes: 8, Slots: 4, Mem: buf}},
		{"no-memory", drivers.Region{Label: "a", SlotBytes: 8, Slots: 4}},
		{"zero-slot-bytes", drivers.Region{Label: "a", SlotBytes: 0, Slots: 4, Mem: buf}},
		{"zero-slots", drivers.Region{Label: "a", SlotBytes: 8, Slots: 0, Mem: buf}},
		{"too-big", drivers.Region{Label: "a", SlotBytes: 8, Slots: 9, Mem: buf}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.driver().Register(c.r)
			if !errors.Is(err, drivers.ErrRegistrationRefused) || !errors.Is(err, drivers.ErrBadGeometry) {
				t.Errorf("D-REG-1: Register(%+v) = %v, want a refusal wrapping ErrBadGeometry %s", c.r, err, repro(t))
			}
			if e.td != nil {
				_, err := e.td.RegisterTogether([]drivers.Region{c.r})
				if !errors.Is(err, drivers.ErrBadGeometry) {
					t.Errorf("D-REG-1: RegisterTogether = %v, want ErrBadGeometry %s", err, repro(t))
				}
			}
		})
	}
}

func testRegOverlap(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	buf := make(drivers.Bytes, 64)
	region := func(label string, lo, hi int) drivers.Region {
		return drivers.Region{Label: label, SlotBytes: 8, Slots: (hi - lo) / 8, Mem: buf[lo:hi]}
	}
	if _, err := e.d.Register(region("a", 0, 32)); err != nil {
		t.Fatalf("Register(a): %v %s", err, repro(t))
	}
	for _, c := range []struct {
		name string
		r    drivers.Region
	}{
		{"shared-bytes", region("b", 16, 48)},
		{"same-memory", region("b", 0, 32)},
		{"label-twice", region("a", 32, 64)},
	} {
		if _, err := e.d.Register(c.r); !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Errorf("D-REG-1 %s: Register = %v, want ErrRegistrationRefused %s", c.name, err, repro(t))
		}
		if e.td != nil {
			if _, err := e.td.RegisterTogether([]drivers.Region{region("z", 40, 48), c.r}); !errors.Is(err, drivers.ErrRegistrationRefused) {
				t.Errorf("D-REG-1 %s: RegisterTogether = %v, want ErrRegistrationRefused %s", c.name, err, repro(t))
			}
		}
	}
	if _, err := e.d.Register(region("c", 32, 64)); err != nil {
		t.Errorf("D-REG-1: disjoint Register(c) = %v, want success %s", err, repro(t))
	}
}

func testRegRefusedLeavesNothing(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 3, cfg: Config{Faults: FaultMix{RegisterRefused: 0.5}}})
	a := e.arena("a", 4, 8)
	refusals := 0
	var h drivers.Handle
	for i := 0; i < 64 && h == 0; i++ {
		got, err := e.d.Register(a.Region())
		switch {
		case err == nil && refusals == 0:
			if err := e.d.Unregister(got); err != nil { // not yet refused once: start over
				t.Fatal(err)
			}
		case err == nil:
			h = got
		case !errors.Is(err, drivers.ErrRegistrationRefused) || got != 0:
			t.Fatalf("D-REG-2: refusal = (%d, %v), want (0, ErrRegistrationRefused) %s", got, err, repro(t))
		default:
			refusals++
		}
	}
	if refusals == 0 || h == 0 {
		t.Fatalf("64 tries gave %d refusals and handle %d %s", refusals, h, repro(t))
	}
	// The same memory registered after the refusals: no piece was left (it
	// would overlap), and no refused handle is live.
	for stale := drivers.Handle(1); stale < h; stale++ {
		if e.live(stale) {
			t.Errorf("D-REG-2: refused registration left handle %d live %s", stale, repro(t))
		}
	}
}

func testRegStaleClose(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a := e.arena("a", 4, 8)
	h1 := e.register(a)
	for i := 0; i < 2; i++ {
		if err := e.d.Unregister(h1); err != nil {
			t.Fatalf("D-REG-3: close #%d of h1 = %v, want nil (idempotent) %s", i+1, err, repro(t))
		}
	}
	h2 := e.register(a)
	if h2 == h1 {
		t.Fatalf("D-REG-3: handle %d reused %s", h1, repro(t))
	}
	if err := e.d.Unregister(h1); err != nil || !e.live(h2) {
		t.Fatalf("D-REG-3: stale close = %v; newer registration live = %v, want nil and true %s", err, e.live(h2), repro(t))
	}
	_, w := e.submit(drivers.Publish, rows(h2, "k"))
	e.run()
	w.settled()
	if err := e.d.Unregister(999); err != nil {
		t.Errorf("D-REG-3: close of an unknown handle = %v, want nil %s", err, repro(t))
	}
	e.noViolations()
}

func testRegCloseFailsOnce(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 1, cfg: Config{Faults: FaultMix{UnregisterFail: 0.6}}})
	h := e.register(e.arena("a", 4, 8))
	failures := 0
	for i := 0; i < 64; i++ {
		err := e.d.Unregister(h)
		if err == nil {
			break
		}
		if !errors.Is(err, drivers.ErrUnregisterFailed) || !e.live(h) {
			t.Fatalf("D-REG-4: failed close = %v, live = %v; want ErrUnregisterFailed and still live %s", err, e.live(h), repro(t))
		}
		failures++
	}
	if failures == 0 || e.live(h) {
		t.Fatalf("D-REG-4: %d failures, live after retries = %v; want >= 1 and false %s", failures, e.live(h), repro(t))
	}
}

func testRegCloseFailsForever(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{cfg: Config{Faults: FaultMix{UnregisterStuck: 1}}})
	h := e.register(e.arena("a", 4, 8))
	for i := 0; i < 5; i++ {
		if err := e.d.Unregister(h); !errors.Is(err, drivers.ErrUnregisterFailed) || !e.live(h) {
			t.Fatalf("D-REG-4: close #%d = %v, live = %v %s", i, err, e.live(h), repro(t))
		}
	}
	want := []string{"region:a:unregister-failed"}
	for i := 0; i < 2; i++ {
		if got := e.d.Shutdown(context.Background()); !slices.Equal(got, want) {
			t.Errorf("D-SHUT-1: Shutdown #%d = %v, want %v %s", i+1, got, want, repro(t))
		}
	}
}

func testRegAfterShutdown(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a, b := e.arena("a", 4, 8), e.arena("b", 4, 8)
	if labels := e.d.Shutdown(context.Background()); len(labels) != 0 {
		t.Fatalf("empty Shutdown = %v %s", labels, repro(t))
	}
	if _, err := e.d.Register(a.Region()); !errors.Is(err, drivers.ErrRegistrationRefused) {
		t.Errorf("D-REG-5: Register after Shutdown = %v, want ErrRegistrationRefused %s", err, repro(t))
	}
	if e.td != nil {
		if _, err := e.td.RegisterTogether([]drivers.Region{a.Region(), b.Region()}); !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Errorf("D-REG-5: RegisterTogether after Shutdown = %v %s", err, repro(t))
		}
	}
}

func testRegBusy(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a := e.arena("a", 4, 8)
	h := e.register(a)
	_, w := e.submit(drivers.Publish, rows(h, "k0", "k1"))
	if err := e.d.Unregister(h); !errors.Is(err, drivers.ErrBusy) || !e.live(h) {
		t.Fatalf("D-REG-6: close of a busy region = %v, live = %v; want ErrBusy, live %s", err, e.live(h), repro(t))
	}
	e.run()
	w.settled()
	if err := e.d.Unregister(h); err != nil || e.live(h) {
		t.Fatalf("D-REG-6: close after access ENDED = %v, live = %v %s", err, e.live(h), repro(t))
	}
	e.noViolations()
}

func testLookup(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	e.store.Put("k0", []byte("x"))
	e.store.Put("k2", []byte("y"))
	got, err := e.d.Contains(context.Background(), []string{"k0", "k1", "k2", "k3"})
	if want := []bool{true, false, true, false}; err != nil || !slices.Equal(got, want) {
		t.Errorf("D-LOOK-1: Contains = %v, %v; want %v %s", got, err, want, repro(t))
	}
	if got, err := e.d.Contains(context.Background(), nil); err != nil || len(got) != 0 {
		t.Errorf("D-LOOK-1: Contains(nil) = %v, %v %s", got, err, repro(t))
	}
	if _, err := e.d.Contains(context.Background(), []string{"a", "b", "c", "d", "e"}); !errors.Is(err, drivers.ErrLookupFailed) {
		t.Errorf("D-LOOK-1: 5 keys over MaxRowsPerOp 4 = %v, want an error %s", err, repro(t))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.d.Contains(ctx, []string{"k0"}); !errors.Is(err, drivers.ErrLookupFailed) || !errors.Is(err, context.Canceled) {
		t.Errorf("D-LOOK-2: Contains on a done context = %v %s", err, repro(t))
	}
}

func testLookupOutage(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{cfg: Config{Faults: FaultMix{LookupError: 1}}})
	e.store.Put("k0", []byte("x"))
	for i := 0; i < 20; i++ {
		if got, err := e.d.Contains(context.Background(), []string{"k0", "k1"}); !errors.Is(err, drivers.ErrLookupFailed) || got != nil {
			t.Fatalf("D-LOOK-2: Contains under outage = %v, %v; want nil, ErrLookupFailed %s", got, err, repro(t))
		}
	}
	e.d.Shutdown(context.Background())
	if _, err := e.d.Contains(context.Background(), []string{"k0"}); !errors.Is(err, drivers.ErrLookupFailed) {
		t.Errorf("D-LOOK-2: Contains after Shutdown = %v %s", err, repro(t))
	}
}

func testSubmitValidates(t *testing.T, k kind) {
	for _, c := range []struct {
		name string
		caps drivers.Capabilities
		mk   func(h, gone drivers.Handle) drivers.RowBatch
	}{
		{"no-rows", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch { return drivers.RowBatch{Dir: drivers.Fetch} }},
		{"too-many-rows", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a", "b", "c", "d", "e")}
		}},
		{"D-BATCH-KEYS", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a", "b", "a")}
		}},
		{"same-slot", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch {
			rs := rows(h, "a", "b")
			rs[1].Slot = 0
			return drivers.RowBatch{Dir: drivers.Fetch, Rows: rs}
		}},
		{"stale-handle", DefaultCaps, func(_, gone drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(gone, "a")}
		}},
		{"slot-out-of-range", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "a", Handle: h, Slot: 8}}}
		}},
		{"empty-key", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, "")}
		}},
		{"bad-direction", DefaultCaps, func(h, _ drivers.Handle) drivers.RowBatch { return drivers.RowBatch{Rows: rows(h, "a")} }},
		{"fetch-only", drivers.Capabilities{MaxRowsPerOp: 4, CanFetch: true}, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a")}
		}},
		{"publish-only", drivers.Capabilities{MaxRowsPerOp: 4, CanPublish: true}, func(h, _ drivers.Handle) drivers.RowBatch {
			return drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, "a")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, k, envOpts{cfg: Config{Caps: c.caps}})
			e.store.Put("a", make([]byte, 8))
			gone := e.register(e.arena("old", 8, 8))
			if err := e.d.Unregister(gone); err != nil {
				t.Fatal(err)
			}
			a := e.arena("a", 8, 8)
			h := e.register(a)
			call, err := e.d.Submit(c.mk(h, gone), func() { t.Errorf("callback for a refused batch %s", repro(t)) })
			if !errors.Is(err, drivers.ErrInvalidSubmission) || call != nil {
				t.Fatalf("D-SUB-1: Submit = %v, %v; want nil, ErrInvalidSubmission %s", call, err, repro(t))
			}
			e.run()
			if n := len(a.Touches()); n != 0 || e.store.Len() != 1 {
				t.Errorf("D-SUB-1: refused batch touched memory %d times, store holds %d keys %s", n, e.store.Len(), repro(t))
			}
		})
	}
}

func testSubmitErrors(t *testing.T, k kind) {
	for _, c := range []struct {
		name  string
		mix   FaultMix
		drain bool
		check func(error) bool
	}{
		{"rejected", FaultMix{SubmitReject: 1}, false, func(err error) bool { return errors.Is(err, drivers.ErrRejected) }},
		{"closed", FaultMix{}, true, func(err error) bool { return errors.Is(err, drivers.ErrClosed) }},
		{"escaped", FaultMix{SubmitError: 1}, false, func(err error) bool {
			return err != nil && !errors.Is(err, drivers.ErrRejected) && !errors.Is(err, drivers.ErrClosed) && !errors.Is(err, drivers.ErrInvalidSubmission)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, k, envOpts{cfg: Config{Faults: c.mix}})
			a := e.arena("a", 4, 8)
			h := e.register(a)
			if c.drain {
				e.d.Drain()
			}
			call, err := e.d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "a")}, func() {})
			if !c.check(err) || call != nil {
				t.Fatalf("D-SUB-2: Submit = %v, %v %s", call, err, repro(t))
			}
			e.run()
			if len(a.Touches()) != 0 || e.store.Len() != 0 || len(e.d.PendingCalls()) != 0 {
				t.Errorf("D-SUB-2: a refused submit left %d touches, %d keys, calls %v %s", len(a.Touches()), e.store.Len(), e.d.PendingCalls(), repro(t))
			}
		})
	}
}

// slotCoverage checks that a row's touches cover its slot exactly once
// (FETCH OK writes, PUBLISH reads exactly SlotBytes bytes).
func slotCoverage(t *testing.T, a *arena.Arena, id drivers.CallID, row, slot, slotBytes int) {
	t.Helper()
	seen := make([]int, slotBytes)
	for _, tc := range touchesBy(a, id, row) {
		for i := tc.Off; i < tc.Off+tc.N; i++ {
			seen[i-slot*slotBytes]++
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("D-STATUS: call %d row %d touched byte %d of its slot %d times, want exactly once %s", id, row, i, n, repro(t))
		}
	}
}

func testStatusRoundTrip(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 5})
	const sb = 16
	src, dst := e.arena("src", 4, sb), e.arena("dst", 4, sb)
	hs, hd := e.register(src), e.register(dst)
	keys := []string{"k0", "k1", "k2", "k3"}
	for i, key := range keys {
		src.Fill(i, content(key, sb))
	}
	pub, pw := e.submit(drivers.Publish, rows(hs, keys...))
	e.run()
	pw.settled()
	if got := pub.Results(); !slices.Equal(got, statuses(drivers.OK, drivers.OK, drivers.OK, drivers.OK)) || pub.Access() != drivers.AccessEnded {
		t.Fatalf("PUBLISH = %v/%v, want all OK/ENDED %s", got, pub.Access(), repro(t))
	}
	for i, key := range keys {
		slotCoverage(t, src, pub.ID(), i, i, sb)
		if obj, _ := e.store.Get(key); !bytes.Equal(obj, content(key, sb)) {
			t.Errorf("D-STATUS: store holds %x under %s, want the slot's bytes %s", obj, key, repro(t))
		}
	}
	fetch, fw := e.submit(drivers.Fetch, rows(hd, "k0", "absent", "k2"))
	e.run()
	fw.settled()
	if got := fetch.Results(); !slices.Equal(got, statuses(drivers.OK, drivers.Miss, drivers.OK)) {
		t.Fatalf("FETCH = %v, want OK MISS OK %s", got, repro(t))
	}
	slotCoverage(t, dst, fetch.ID(), 0, 0, sb)
	slotCoverage(t, dst, fetch.ID(), 2, 2, sb)
	if n := len(touchesBy(dst, fetch.ID(), 1)); n != 0 {
		t.Errorf("D-STATUS: MISS row touched %d times %s", n, repro(t))
	}
	if !bytes.Equal(dst.Peek(0), content("k0", sb)) || !bytes.Equal(dst.Peek(2), content("k2", sb)) {
		t.Errorf("D-STATUS: FETCH OK slot does not hold the object %s", repro(t))
	}
	e.noViolations()
}

func testAbsentIsFault(t *testing.T, k kind) {
	caps := DefaultCaps
	caps.AbsentIsMiss = false
	e := newEnv(t, k, envOpts{cfg: Config{Caps: caps}})
	a := e.arena("a", 4, 8)
	h := e.register(a)
	e.store.Put("here", make([]byte, 8))
	c, w := e.submit(drivers.Fetch, rows(h, "absent", "here"))
	e.run()
	w.settled()
	if got := c.Results(); !slices.Equal(got, statuses(drivers.Fault, drivers.OK)) || c.Access() != drivers.AccessEnded {
		t.Errorf("AbsentIsMiss=false: FETCH = %v/%v, want FAULT OK/ENDED %s", got, c.Access(), repro(t))
	}
	if n := len(touchesBy(a, c.ID(), 0)); n != 0 {
		t.Errorf("absent key's slot touched %d times %s", n, repro(t))
	}
}

func testSizeMismatch(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a := e.arena("a", 4, 16)
	h := e.register(a)
	e.store.Put("short", make([]byte, 5))
	e.store.Put("long", bytes.Repeat([]byte{7}, 40))
	c, w := e.submit(drivers.Fetch, rows(h, "short", "long"))
	e.run()
	w.settled()
	if got := c.Results(); !slices.Equal(got, statuses(drivers.Fault, drivers.Fault)) {
		t.Errorf("D-STATUS: FETCH of wrong-size objects = %v, want FAULT FAULT %s", got, repro(t))
	}
	e.noViolations() // the bytes written stayed inside the slots (D-SUB-6)
}

func testFirstWriterWins(t *testing.T, k kind) {
	var events []StoreEvent
	e := newEnv(t, k, envOpts{store: StoreOptions{OnEvent: func(ev StoreEvent) { events = append(events, ev) }}})
	a := e.arena("a", 4, 8)
	h := e.register(a)
	a.Fill(0, []byte("AAAAAAAA"))
	a.Fill(1, []byte("BBBBBBBB"))
	first, w1 := e.submit(drivers.Publish, rows(h, "k"))
	e.run()
	second, w2 := e.submit(drivers.Publish, []drivers.Row{{Key: "k", Handle: h, Slot: 1}})
	e.run()
	w1.settled()
	w2.settled()
	if first.Results()[0] != drivers.OK || second.Results()[0] != drivers.OK {
		t.Errorf("D-SUB-4: publishes = %v, %v; want OK, OK %s", first.Results(), second.Results(), repro(t))
	}
	if obj, _ := e.store.Get("k"); string(obj) != "AAAAAAAA" {
		t.Errorf("D-SUB-4: store holds %q, want the first object %s", obj, repro(t))
	}
	want := []StoreEvent{
		{Kind: EventPut, Key: "k", Stored: true, By: Origin{Driver: "mem", Call: first.ID()}},
		{Kind: EventPut, Key: "k", Stored: false, By: Origin{Driver: "mem", Call: second.ID()}},
	}
	if !slices.Equal(events, want) {
		t.Errorf("store events = %v, want %v %s", events, want, repro(t))
	}
}

func testAtomicVisibility(t *testing.T, k kind) {
	const sb = 64
	var e *env
	keys := []string{"k0", "k1", "k2", "k3"}
	// Every read of a publishing row happens before its key is visible, and
	// whatever the store holds is the whole object (D-SUB-5).
	e = newEnv(t, k, envOpts{seed: 9, store: StoreOptions{OnEvent: func(ev StoreEvent) {
		if obj, ok := e.store.Get(ev.Key); ok && !bytes.Equal(obj, content(ev.Key, sb)) {
			t.Errorf("D-SUB-5: %s visible as %d bytes that are not the object %s", ev.Key, len(obj), repro(t))
		}
	}}})
	a := arena.New("a", 4, sb, arena.Options{Clock: e.s, Log: true, OnTouch: func(tc arena.Touch) {
		if e.store.Has(keys[tc.Slot]) {
			t.Errorf("D-SUB-5: key %s visible while its slot is still being read: %v %s", keys[tc.Slot], tc, repro(t))
		}
	}})
	a.SetRegistered(true)
	for i, key := range keys {
		a.Lend(i, 1)
		a.Fill(i, content(key, sb))
	}
	h, err := e.d.Register(a.Region())
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, keys...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.run()
	if c.Access() != drivers.AccessEnded || e.store.Len() != 4 {
		t.Errorf("publish ended %v with %d keys stored %s", c.Access(), e.store.Len(), repro(t))
	}
	if chunks := len(a.Touches()); chunks <= 4 {
		t.Errorf("seed moved every row in one chunk (%d touches); the test needs several %s", chunks, repro(t))
	}
}

// testCallbacks runs 40 calls of 1..4 rows under the default fault mix with
// a watch on each: every callback checks D-CB-4 (the driver's mutex is
// free), D-CB-3 (final results stay, access moves along D-ACCESS); at the
// end the last callback must have seen the final state (D-CB-2), and for
// D-CB-1 no callback may come before its change (this driver signals only
// after a change, so a callback that sees nothing new was early).
func testCallbacks(t *testing.T, k kind, rule string) {
	e := newEnv(t, k, envOpts{seed: 12, cfg: Config{Faults: Default()}})
	a := e.arena("a", 160, 8)
	h := e.register(a)
	var ws []*watch
	for i := 0; i < 40; i++ {
		n := 1 + i%4
		var rs []drivers.Row
		for j := 0; j < n; j++ {
			rs = append(rs, drivers.Row{Key: fmt.Sprint("k", (i+j)%9), Handle: h, Slot: 4*i + j, Position: j})
		}
		dir := drivers.Publish
		if i%2 == 1 {
			dir = drivers.Fetch
		}
		w := &watch{t: t, d: e.d}
		c, err := e.d.Submit(drivers.RowBatch{Dir: dir, Rows: rs}, w.onChange)
		if err != nil {
			continue // injected refusals
		}
		w.c = c
		e.calls[c.ID()] = tracked{c, drivers.RowBatch{Dir: dir, Rows: rs}}
		ws = append(ws, w)
		if i%5 == 0 {
			c.Cancel()
		}
	}
	e.run()
	labels := e.d.Shutdown(context.Background())
	total, empty := 0, 0
	for _, w := range ws {
		w.settled()
		total += w.n
		empty += w.empty
	}
	if rule == "D-CB-1" && empty > 0 {
		t.Errorf("D-CB-1: %d of %d callbacks saw no change since the previous one %s", empty, total, repro(t))
	}
	if len(ws) < 20 || total < len(ws) {
		t.Errorf("only %d calls with %d callbacks ran; labels %v %s", len(ws), total, labels, repro(t))
	}
	e.noViolations()
}

func testNoCallbackAfterShutdown(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 2, cfg: Config{Faults: FaultMix{Delay: 1}}})
	a := e.arena("a", 8, 8)
	h := e.register(a)
	var ws []*watch
	for i := 0; i < 3; i++ {
		key := string(rune('a' + i))
		_, w := e.submit(drivers.Publish, []drivers.Row{{Key: key + "0", Handle: h, Slot: 2 * i}, {Key: key + "1", Handle: h, Slot: 2*i + 1, Position: 1}})
		ws = append(ws, w)
	}
	// Stop right after a change whose callback is queued but has not run:
	// Shutdown must run it itself, and the queued one must stay silent.
	owed := func() bool {
		e.d.mu.Lock()
		defer e.d.mu.Unlock()
		for _, c := range e.d.calls {
			if !c.retired && c.delivered < c.version && c.access == drivers.AccessPending {
				return true
			}
		}
		return false
	}
	for !owed() && e.s.Step() {
	}
	labels := e.d.Shutdown(context.Background())
	for _, w := range ws {
		w.shutDone = true
		if !w.c.Access().Evidenced() {
			t.Errorf("D-SHUT-1: call %d still %v after Shutdown %s", w.c.ID(), w.c.Access(), repro(t))
		}
	}
	e.run() // any queued transfer step or callback must now be inert
	for _, w := range ws {
		w.shutDone = false
		w.settled()
	}
	if len(labels) == 0 {
		t.Errorf("seed finished every call before Shutdown; the test needs one in flight %s", repro(t))
	}
	e.noViolations()
}

func testCancelNonBlocking(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	h := e.register(e.arena("a", 4, 8))
	c, w := e.submit(drivers.Fetch, rows(h, "k0", "k1"))
	steps := e.s.Steps()
	r1, r2 := c.Cancel(), c.Cancel()
	if r1 != drivers.CancelRequested || (r2 != drivers.CancelRequested && r2 != drivers.CancelAlreadyDone) || e.s.Steps() != steps {
		t.Fatalf("D-CAN-1: Cancel = %v then %v after %d steps; want REQUESTED, idempotent, no step %s", r1, r2, e.s.Steps()-steps, repro(t))
	}
	e.run()
	w.settled()
	if r := c.Cancel(); r != drivers.CancelAlreadyDone {
		t.Errorf("D-CAN-1: Cancel of a finished call = %v, want ALREADY_DONE %s", r, repro(t))
	}

	caps := DefaultCaps
	caps.CanCancel = false
	e2 := newEnv(t, k, envOpts{cfg: Config{Caps: caps}})
	h2 := e2.register(e2.arena("a", 4, 8))
	c2, w2 := e2.submit(drivers.Fetch, rows(h2, "k0"))
	if r := c2.Cancel(); r != drivers.CancelUnsupported {
		t.Errorf("D-CAN-1: Cancel without CanCancel = %v, want UNSUPPORTED %s", r, repro(t))
	}
	e2.run()
	w2.settled()
}

func testCancelBeforeStart(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a := e.arena("a", 4, 8)
	h := e.register(a)
	e.store.Put("k0", make([]byte, 8))
	c, w := e.submit(drivers.Fetch, rows(h, "k0", "k1"))
	c.Cancel()
	if got := c.Results(); !slices.Equal(got, statuses(drivers.NotAttempted, drivers.NotAttempted)) || c.Access() != drivers.AccessPending {
		t.Fatalf("D-CAN-2: right after Cancel = %v/%v; want NOT_ATTEMPTED rows and access still PENDING %s", got, c.Access(), repro(t))
	}
	e.run()
	w.settled()
	if c.Access() != drivers.AccessEnded || len(a.Touches()) != 0 {
		t.Errorf("D-CAN-2: cancelled call ended %v with %d touches %s", c.Access(), len(a.Touches()), repro(t))
	}
}

func testCancelMidCall(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 4})
	a := e.arena("a", 4, 8)
	h := e.register(a)
	keys := []string{"k0", "k1", "k2", "k3"}
	c, w := e.submit(drivers.Publish, rows(h, keys...))
	for len(a.Touches()) == 0 && e.s.Step() {
	}
	if r := c.Cancel(); r != drivers.CancelRequested {
		t.Fatalf("D-CAN-2: Cancel mid-call = %v %s", r, repro(t))
	}
	e.run()
	w.settled()
	res := c.Results()
	ok := 0
	for i, st := range res {
		switch st {
		case drivers.OK:
			ok++
			if !e.store.Has(keys[i]) {
				t.Errorf("D-CAN-2: cancel rolled back %s %s", keys[i], repro(t))
			}
		case drivers.NotAttempted:
		default:
			t.Errorf("D-CAN-2: row %d = %v, want OK (completion won) or NOT_ATTEMPTED %s", i, st, repro(t))
		}
	}
	if ok == 0 || ok == len(keys) {
		t.Errorf("D-CAN-2: %d of %d rows completed; the seed should cancel mid-call %s", ok, len(keys), repro(t))
	}
}

func testDrainHonest(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	h := e.register(e.arena("a", 4, 8))
	c, w := e.submit(drivers.Publish, rows(h, "k0"))
	if ds := e.d.Drain(); ds.Done || !slices.Equal(ds.Pending, []drivers.CallID{c.ID()}) {
		t.Errorf("D-DRAIN-1: Drain with a call in flight = %+v %s", ds, repro(t))
	}
	if _, err := e.d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "k1")}, nil); !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("D-DRAIN-1: Submit while draining = %v, want ErrClosed %s", err, repro(t))
	}
	e.run()
	w.settled()
	if ds := e.d.Drain(); !ds.Done || len(ds.Pending) != 0 {
		t.Errorf("D-DRAIN-1: Drain after the call ended = %+v %s", ds, repro(t))
	}
}

func testDrainAfterLastCallback(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	h := e.register(e.arena("a", 4, 8))
	c, w := e.submit(drivers.Publish, rows(h, "k0", "k1"))
	w.onCall = func() {
		if ds := e.d.Drain(); ds.Done {
			t.Errorf("D-DRAIN-2: Drain Done while call %d's callback runs %s", c.ID(), repro(t))
		}
	}
	e.run()
	w.settled()
	if ds := e.d.Drain(); !ds.Done {
		t.Errorf("D-DRAIN-2: Drain after the last callback = %+v %s", ds, repro(t))
	}
}

func testShutdownClean(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{})
	a, b := e.arena("a", 4, 8), e.arena("b", 4, 8)
	ha, hb := e.register(a), e.register(b)
	_, w := e.submit(drivers.Publish, rows(ha, "k0", "k1"))
	e.run()
	w.settled()
	for i := 0; i < 2; i++ {
		if labels := e.d.Shutdown(context.Background()); len(labels) != 0 {
			t.Errorf("D-SHUT-1: clean Shutdown #%d = %v, want none %s", i+1, labels, repro(t))
		}
	}
	if e.live(ha) || e.live(hb) {
		t.Errorf("D-SHUT-1: bindings still live after a clean Shutdown %s", repro(t))
	}
}

func testShutdownUnprovable(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 1, cfg: Config{Faults: FaultMix{NeverEnds: 1}}})
	a, b := e.arena("a", 4, 8), e.arena("b", 4, 8)
	ha, hb := e.register(a), e.register(b)
	c, w := e.submit(drivers.Fetch, rows(ha, "k0", "k1"))
	var hang *sim.HangError
	if err := e.s.RunUntilIdle(100000); !errors.As(err, &hang) || !slices.Equal(hang.Pending, []string{"memdriver: call 1 (FETCH, 2 rows, access PENDING)"}) {
		t.Fatalf("never-ends: RunUntilIdle = %v, want a hang naming call 1 %s", err, repro(t))
	}
	want := []string{"call:1:unprovable", "region:a:retained"}
	labels := e.d.Shutdown(context.Background())
	if !slices.Equal(labels, want) {
		t.Errorf("D-SHUT-1: Shutdown = %v, want %v %s", labels, want, repro(t))
	}
	w.settled() // the changes Shutdown made were told before it returned (D-CB-2, D-CB-5)
	if c.Access() != drivers.AccessUnprovable {
		t.Errorf("D-SHUT-1: pending call is %v after Shutdown, want UNPROVABLE %s", c.Access(), repro(t))
	}
	for i, st := range c.Results() {
		if st != drivers.Fault && st != drivers.Miss {
			t.Errorf("row %d = %v, want FAULT (started, hung) or MISS %s", i, st, repro(t))
		}
	}
	if !e.live(ha) || e.live(hb) {
		t.Errorf("D-SHUT-1: retained a live=%v, b live=%v; want true, false %s", e.live(ha), e.live(hb), repro(t))
	}
	if err := e.d.Unregister(ha); !errors.Is(err, drivers.ErrBusy) {
		t.Errorf("D-REG-6: close of a region an UNPROVABLE call names = %v %s", err, repro(t))
	}
	if again := e.d.Shutdown(context.Background()); !slices.Equal(again, want) {
		t.Errorf("D-SHUT-2: second Shutdown = %v, want %v %s", again, want, repro(t))
	}
	if err := e.s.RunUntilIdle(100000); err != nil {
		t.Errorf("after Shutdown: %v %s", err, repro(t))
	}
	e.noViolations()
}

func testShutdownRetries(t *testing.T, k kind) {
	e := newEnv(t, k, envOpts{seed: 6, cfg: Config{Faults: FaultMix{UnregisterFail: 0.5}}})
	for _, l := range []string{"a", "b", "c", "d"} {
		e.register(e.arena(l, 2, 8))
	}
	prev := 5
	rounds := 0
	for labels := e.d.Shutdown(context.Background()); len(labels) > 0; labels = e.d.Shutdown(context.Background()) {
		rounds++
		for _, l := range labels {
			if !strings.HasPrefix(l, "region:") || !strings.HasSuffix(l, ":unregister-failed") {
				t.Fatalf("D-SHUT-1: label %q, want region:<label>:unregister-failed %s", l, repro(t))
			}
		}
		if len(labels) > prev || rounds > 50 {
			t.Fatalf("D-SHUT-2: retry round %d left %v %s", rounds, labels, repro(t))
		}
		prev = len(labels)
	}
	if rounds == 0 {
		t.Errorf("seed closed everything at once; the test needs a retry %s", repro(t))
	}
}

func testQuarantine(t *testing.T, k kind) {
	if !k.together {
		t.Skip("the plain driver has no in-doubt operation, so it never quarantines")
	}
	for seed := uint64(0); seed < 32; seed++ {
		e := newEnv(t, k, envOpts{seed: seed, cfg: Config{Faults: FaultMix{TogetherFail: 1, RollbackFail: 1}}})
		regions := []drivers.Region{e.arena("a", 2, 8).Region(), e.arena("b", 2, 8).Region(), e.arena("c", 2, 8).Region()}
		hs, err := e.td.RegisterTogether(regions)
		var doubt *drivers.InDoubtError
		if !errors.As(err, &doubt) {
			if !errors.Is(err, drivers.ErrRegistrationRefused) || hs != nil {
				t.Fatalf("D-TOG-1: failure at region 0 = %v, %v %s", hs, err, repro(t))
			}
			continue // failed at region 0: nothing to roll back
		}
		if doubt.Op != "register" || len(doubt.Labels) == 0 || hs != nil {
			t.Fatalf("D-TOG-2: in-doubt error %+v, handles %v %s", doubt, hs, repro(t))
		}
		if _, err := e.d.Register(e.arena("d", 2, 8).Region()); !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Errorf("D-QUAR: Register after an in-doubt rollback = %v %s", err, repro(t))
		}
		if e.d.Quarantined() == "" {
			t.Errorf("D-QUAR: driver not quarantined %s", repro(t))
		}
		var want []string
		for _, l := range doubt.Labels {
			want = append(want, "region:"+l+":in-doubt")
		}
		slices.Sort(want)
		got := e.d.Shutdown(context.Background())
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("D-SHUT-1: Shutdown = %v, want %v %s", got, want, repro(t))
		}
		return
	}
	t.Fatalf("no seed in 0..31 failed past region 0 %s", repro(t))
}

func testTogetherAllOrNothing(t *testing.T, k kind) {
	if !k.together {
		t.Skip("the plain driver does not offer together-registration")
	}
	e := newEnv(t, k, envOpts{})
	as := []*arena.Arena{e.arena("a", 2, 8), e.arena("b", 2, 8), e.arena("c", 2, 8)}
	regions := []drivers.Region{as[0].Region(), as[1].Region(), as[2].Region()}
	hs, err := e.td.RegisterTogether(regions)
	if err != nil || len(hs) != 3 {
		t.Fatalf("D-TOG-1: RegisterTogether = %v, %v %s", hs, err, repro(t))
	}
	for i, h := range hs {
		e.labels[h] = regions[i].Label
		as[i].SetRegistered(true)
		_, w := e.submit(drivers.Publish, []drivers.Row{{Key: regions[i].Label, Handle: h}})
		e.run()
		w.settled()
	}
	if e.store.Len() != 3 {
		t.Errorf("D-TOG-1: handles did not name their regions in order %s", repro(t))
	}

	f := newEnv(t, k, envOpts{cfg: Config{Faults: FaultMix{TogetherFail: 1}}})
	fr := []drivers.Region{f.arena("a", 2, 8).Region(), f.arena("b", 2, 8).Region(), f.arena("c", 2, 8).Region()}
	for i := 0; i < 8; i++ {
		if hs, err := f.td.RegisterTogether(fr); !errors.Is(err, drivers.ErrRegistrationRefused) || hs != nil {
			t.Fatalf("D-TOG-1: failing RegisterTogether = %v, %v %s", hs, err, repro(t))
		}
	}
	for _, r := range fr {
		if _, err := f.d.Register(r); err != nil {
			t.Errorf("D-TOG-1: a failed together-registration left %s registered: %v %s", r.Label, err, repro(t))
		}
	}
}

func testTogetherUnregisterFails(t *testing.T, k kind) {
	if !k.together {
		t.Skip("the plain driver does not offer together-registration")
	}
	e := newEnv(t, k, envOpts{cfg: Config{Faults: FaultMix{UnregisterFail: 1}}})
	hs, err := e.td.RegisterTogether([]drivers.Region{e.arena("a", 2, 8).Region(), e.arena("b", 2, 8).Region()})
	if err != nil {
		t.Fatal(err)
	}
	err = e.td.UnregisterTogether(hs)
	var doubt *drivers.InDoubtError
	if !errors.As(err, &doubt) || !errors.Is(err, drivers.ErrUnregisterFailed) || !slices.Equal(doubt.Labels, []string{"a", "b"}) {
		t.Fatalf("D-TOG-3: UnregisterTogether = %v, want in doubt for [a b] %s", err, repro(t))
	}
	if !e.live(hs[0]) || !e.live(hs[1]) {
		t.Errorf("D-TOG-3: a failed close closed a region %s", repro(t))
	}
}

func testTogetherBusy(t *testing.T, k kind) {
	if !k.together {
		t.Skip("the plain driver does not offer together-registration")
	}
	e := newEnv(t, k, envOpts{})
	as := []*arena.Arena{e.arena("a", 2, 8), e.arena("b", 2, 8), e.arena("c", 2, 8)}
	hs, err := e.td.RegisterTogether([]drivers.Region{as[0].Region(), as[1].Region(), as[2].Region()})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		e.labels[h] = as[i].Label()
		as[i].SetRegistered(true)
	}
	_, w := e.submit(drivers.Publish, rows(hs[1], "k"))
	err = e.td.UnregisterTogether(hs)
	var doubt *drivers.InDoubtError
	if !errors.As(err, &doubt) || !errors.Is(err, drivers.ErrBusy) || !slices.Equal(doubt.Labels, []string{"b"}) {
		t.Fatalf("D-TOG-4: UnregisterTogether with b busy = %v, want only b named %s", err, repro(t))
	}
	if e.live(hs[0]) || !e.live(hs[1]) || e.live(hs[2]) {
		t.Errorf("D-TOG-3: live after = %v %v %v, want false true false %s", e.live(hs[0]), e.live(hs[1]), e.live(hs[2]), repro(t))
	}
	e.run()
	w.settled()
	if err := e.td.UnregisterTogether(hs); err != nil || e.live(hs[1]) {
		t.Errorf("D-TOG-3: retry after the call ended = %v %s", err, repro(t))
	}
	e.noViolations()
}

func testTogetherOneBatch(t *testing.T, k kind) {
	if !k.together {
		t.Skip("the plain driver does not offer together-registration")
	}
	e := newEnv(t, k, envOpts{})
	first := []drivers.Region{e.arena("a", 2, 8).Region(), e.arena("b", 2, 8).Region()}
	second := []drivers.Region{e.arena("c", 2, 8).Region()}
	hs, err := e.td.RegisterTogether(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.td.RegisterTogether(second); !errors.Is(err, drivers.ErrRegistrationRefused) {
		t.Fatalf("second live together-batch = %v, want ErrRegistrationRefused %s", err, repro(t))
	}
	if err := e.d.Unregister(hs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.td.RegisterTogether(second); !errors.Is(err, drivers.ErrRegistrationRefused) {
		t.Fatalf("batch with one handle still live = %v, want ErrRegistrationRefused %s", err, repro(t))
	}
	if err := e.td.UnregisterTogether(hs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.td.RegisterTogether(second); err != nil {
		t.Fatalf("RegisterTogether after the batch closed = %v %s", err, repro(t))
	}
}
