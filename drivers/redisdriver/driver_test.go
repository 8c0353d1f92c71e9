package redisdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

const slotBytes = 256

var (
	OK, Miss, Fault, NotAttempted = drivers.OK, drivers.Miss, drivers.Fault, drivers.NotAttempted
)

func TestConfig(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"empty-addr", Config{}, ErrConfig},
		{"negative-ttl", Config{Addr: "x:1", TTL: -time.Second}, ErrConfig},
		{"sub-ms-ttl", Config{Addr: "x:1", TTL: time.Microsecond}, ErrConfig},
		{"negative-timeout", Config{Addr: "x:1", Timeout: -1}, ErrConfig},
		{"bad-caps", Config{Addr: "x:1", Caps: drivers.Capabilities{CanFetch: true}}, drivers.ErrInvalidCapabilities},
		{"unreachable", Config{Addr: closedAddr}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.cfg)
			if err == nil {
				d.Shutdown(context.Background())
				t.Fatalf("New(%+v) succeeded, want an error %s", tc.cfg, repro(t))
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want it to wrap %v %s", err, tc.want, repro(t))
			}
		})
	}
}

// TestRoundTrip publishes 16 rows from an arena and fetches them back into
// another arena and into plain drivers.Bytes.
func TestRoundTrip(t *testing.T) {
	r := newRig(t, Config{})
	src, hs := r.arena("src", 16, slotBytes)
	dst, hd := r.arena("dst", 16, slotBytes)
	plain := make(drivers.Bytes, 16*slotBytes)
	hp, err := r.d.Register(drivers.Region{Label: "plain", SlotBytes: slotBytes, Slots: 16, Mem: plain})
	if err != nil {
		t.Fatalf("register plain: %v %s", err, repro(t))
	}
	keys := keyset("rt", 16)
	for i, k := range keys {
		src.Fill(i, content(k, slotBytes))
	}

	pub, w := r.submit(drivers.Publish, rows(hs, keys...)...)
	wantStatuses(t, "publish", await(t, pub, w), OK)
	if got := pub.Access(); got != drivers.AccessEnded {
		t.Fatalf("publish access %v, want ENDED %s", got, repro(t))
	}
	for _, k := range keys {
		if v, ok := r.rawGet(k); !ok || v != string(content(k, slotBytes)) {
			t.Fatalf("server holds %q=%v (present %v), want the published object %s", k, len(v), ok, repro(t))
		}
	}
	for _, tgt := range []struct {
		name string
		h    drivers.Handle
		peek func(i int) []byte
	}{
		{"arena", hd, dst.Peek},
		{"bytes", hp, func(i int) []byte { return plain[i*slotBytes : (i+1)*slotBytes] }},
	} {
		t.Run(tgt.name, func(t *testing.T) {
			f, w := r.submit(drivers.Fetch, rows(tgt.h, keys...)...)
			wantStatuses(t, "fetch", await(t, f, w), OK)
			if got := f.Access(); got != drivers.AccessEnded {
				t.Fatalf("fetch access %v, want ENDED %s", got, repro(t))
			}
			for i, k := range keys {
				if !bytes.Equal(tgt.peek(i), content(k, slotBytes)) {
					t.Fatalf("slot %d does not hold %q after FETCH OK %s", i, k, repro(t))
				}
			}
		})
	}
	for _, a := range []*arena.Arena{src, dst} {
		if v := a.Violations(); len(v) != 0 {
			t.Fatalf("arena %s: violations %v %s", a.Label(), v, repro(t))
		}
	}
	// Every touch names the right call and row, inside the row's slot (D-SUB-6).
	for _, tc := range dst.Touches() {
		if tc.Op != arena.Write || tc.Slot != tc.By.Row || tc.N != slotBytes {
			t.Fatalf("unexpected fetch touch %v %s", tc, repro(t))
		}
	}
}

// TestPublish covers D-SUB-4 (first writer wins), TTL and OOM refusals.
func TestPublish(t *testing.T) {
	t.Run("D-SUB-4/first-writer-wins", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 2, slotBytes)
		a.Fill(0, bytes.Repeat([]byte{'A'}, slotBytes))
		a.Fill(1, bytes.Repeat([]byte{'B'}, slotBytes))
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 0})
		wantStatuses(t, "first publish", await(t, c, w), OK)
		c, w = r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 1})
		wantStatuses(t, "second publish of a present key (already there)", await(t, c, w), OK)
		if v, _ := r.rawGet("k"); v != string(bytes.Repeat([]byte{'A'}, slotBytes)) {
			t.Fatalf("D-SUB-4: the second PUBLISH replaced the first object %s", repro(t))
		}
	})
	t.Run("ttl", func(t *testing.T) {
		r := newRig(t, Config{TTL: time.Minute})
		_, h := r.arena("a", 1, slotBytes)
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h})
		wantStatuses(t, "publish", await(t, c, w), OK)
		ms, err := r.raw.Do(context.Background(), r.raw.B().Pttl().Key(r.prefix+"k").Build()).AsInt64()
		if err != nil || ms <= 0 || ms > time.Minute.Milliseconds() {
			t.Fatalf("PTTL %d (%v), want in (0, 60000] %s", ms, err, repro(t))
		}
	})
	t.Run("no-ttl", func(t *testing.T) {
		r := newRig(t, Config{})
		_, h := r.arena("a", 1, slotBytes)
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h})
		wantStatuses(t, "publish", await(t, c, w), OK)
		ms, err := r.raw.Do(context.Background(), r.raw.B().Pttl().Key(r.prefix+"k").Build()).AsInt64()
		if err != nil || ms != -1 {
			t.Fatalf("PTTL %d (%v), want -1 (no expiry) %s", ms, err, repro(t))
		}
	})
}

// TestFetch covers the FETCH row results of D-STATUS and D-MISS-HONEST.
func TestFetch(t *testing.T) {
	pattern := bytes.Repeat([]byte{0x5A}, slotBytes)
	for _, tc := range []struct {
		name  string
		store []byte // nil: key absent
		want  drivers.Status
	}{
		{"D-MISS-HONEST/absent-is-miss", nil, Miss},
		{"D-STATUS/short-is-fault", make([]byte, slotBytes-1), Fault},
		{"D-STATUS/long-is-fault", make([]byte, slotBytes+1), Fault},
		{"D-STATUS/empty-is-fault", []byte{}, Fault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{})
			a, h := r.arena("a", 1, slotBytes)
			a.Fill(0, pattern)
			if tc.store != nil {
				r.rawSet("k", tc.store)
			}
			c, w := r.submit(drivers.Fetch, drivers.Row{Key: "k", Handle: h})
			wantStatuses(t, "fetch", await(t, c, w), tc.want)
			if got := touchesBy(a, c.ID()); len(got) != 0 {
				t.Fatalf("%v row touched its slot: %v %s", tc.want, got, repro(t))
			}
			if !bytes.Equal(a.Peek(0), pattern) {
				t.Fatalf("%v row changed its slot %s", tc.want, repro(t))
			}
		})
	}
	t.Run("D-MISS-HONEST/outage-is-fault", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		a, h := r.arena("a", 2, slotBytes)
		a.Fill(0, pattern)
		r.rawSet("k0", content("k0", slotBytes))
		p.setDown(true)
		c, w := r.submit(drivers.Fetch, rows(h, "k0", "k1")...)
		wantStatuses(t, "fetch during an outage", await(t, c, w), Fault)
		if got := touchesBy(a, c.ID()); len(got) != 0 {
			t.Fatalf("fetch during an outage touched memory: %v %s", got, repro(t))
		}
		p.setDown(false)
		var st []drivers.Status
		for try := 0; try < 50; try++ { // the client may need a command to reconnect
			c, w = r.submit(drivers.Fetch, rows(h, "k0", "k1")...)
			if st = await(t, c, w); st[0] != Fault {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantStatuses(t, "fetch after the outage", st, OK, Miss)
	})
	t.Run("mixed", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 4, slotBytes)
		r.rawSet("ok", content("ok", slotBytes))
		r.rawSet("short", []byte("x"))
		c, w := r.submit(drivers.Fetch, rows(h, "miss", "ok", "short", "ok2")...)
		wantStatuses(t, "fetch", await(t, c, w), Miss, OK, Fault, Miss)
		if !bytes.Equal(a.Peek(1), content("ok", slotBytes)) {
			t.Fatalf("OK row's slot does not hold the object %s", repro(t))
		}
		for _, tc := range touchesBy(a, c.ID()) {
			if tc.By.Row != 1 {
				t.Fatalf("row %d touched memory though it was not OK: %v %s", tc.By.Row, tc, repro(t))
			}
		}
	})
}

func TestContains(t *testing.T) {
	t.Run("D-LOOK-1/order", func(t *testing.T) {
		r := newRig(t, Config{})
		keys := keyset("look", 16)
		want := make([]bool, len(keys))
		for i, k := range keys {
			if i%3 == 0 {
				r.rawSet(k, []byte("v"))
				want[i] = true
			}
		}
		got, err := r.d.Contains(context.Background(), keys)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Contains = %v, %v; want %v %s", got, err, want, repro(t))
		}
		if got, err := r.d.Contains(context.Background(), nil); err != nil || len(got) != 0 {
			t.Fatalf("Contains(nil) = %v, %v; want [] %s", got, err, repro(t))
		}
	})
	t.Run("D-LOOK-1/too-many", func(t *testing.T) {
		r := newRig(t, Config{})
		if _, err := r.d.Contains(context.Background(), keyset("x", 17)); !errors.Is(err, drivers.ErrInvalidSubmission) {
			t.Fatalf("17 keys with MaxRowsPerOp 16: %v, want ErrInvalidSubmission %s", err, repro(t))
		}
	})
	t.Run("D-LOOK-2/outage", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		r.rawSet("k", []byte("v"))
		p.setDown(true)
		got, err := r.d.Contains(context.Background(), []string{"k", "j"})
		if !errors.Is(err, drivers.ErrLookupFailed) || got != nil {
			t.Fatalf("lookup during an outage = %v, %v; want ErrLookupFailed, never absent %s", got, err, repro(t))
		}
		p.setDown(false)
		// The client may spend a command or two noticing its connection died;
		// then the driver must recover.
		for try := 0; ; try++ {
			got, err = r.d.Contains(context.Background(), []string{"k", "j"})
			if err == nil || try == 50 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil || !slices.Equal(got, []bool{true, false}) {
			t.Fatalf("lookup after the outage = %v, %v %s", got, err, repro(t))
		}
	})
	t.Run("D-LOOK-2/cancelled", func(t *testing.T) {
		r := newRig(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.d.Contains(ctx, []string{"k"}); !errors.Is(err, drivers.ErrLookupFailed) {
			t.Fatalf("lookup with a cancelled context: %v, want ErrLookupFailed %s", err, repro(t))
		}
	})
}

// TestPipelining proves, from the bytes on the wire, that lookups, publishes
// and fetches send one single-key command per key in a pipeline (fewer
// writes than commands) and never a multi-key command (PERF-NOTES).
func TestPipelining(t *testing.T) {
	p := startProxy(t)
	r := newRig(t, Config{Addr: p.addr()})
	_, h := r.arena("a", 16, slotBytes)
	keys := keyset("pipe", 16)
	for _, tc := range []struct {
		cmd string
		run func()
	}{
		{"EXISTS", func() {
			if _, err := r.d.Contains(context.Background(), keys); err != nil {
				t.Fatalf("Contains: %v %s", err, repro(t))
			}
		}},
		{"SET", func() {
			c, w := r.submit(drivers.Publish, rows(h, keys...)...)
			wantStatuses(t, "publish", await(t, c, w), OK)
		}},
		{"GET", func() {
			c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
			wantStatuses(t, "fetch", await(t, c, w), OK)
		}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			p.startRecording()
			tc.run()
			chunks, n := 0, 0
			needle := []byte(fmt.Sprintf("$%d\r\n%s\r\n", len(tc.cmd), tc.cmd))
			for _, c := range p.recorded() {
				for _, bad := range []string{"MGET", "MSET", "MSETNX"} {
					if bytes.Contains(c, []byte("\r\n"+bad+"\r\n")) {
						t.Fatalf("multi-key %s on the wire %s", bad, repro(t))
					}
				}
				if k := bytes.Count(c, needle); k > 0 {
					chunks++
					n += k
				}
			}
			if n != len(keys) || chunks >= n {
				t.Fatalf("%d %s commands in %d writes; want %d commands pipelined in fewer writes %s",
					n, tc.cmd, chunks, len(keys), repro(t))
			}
		})
	}
}

// TestRegistration covers D-REG-1..3, 5, 6 on the local handle table.
func TestRegistration(t *testing.T) {
	region := func(label string, mem drivers.Bytes) drivers.Region {
		return drivers.Region{Label: label, SlotBytes: 16, Slots: len(mem) / 16, Mem: mem}
	}
	t.Run("D-REG-1/geometry", func(t *testing.T) {
		r := newRig(t, Config{})
		bad := drivers.Region{Label: "bad", SlotBytes: 0, Slots: 1, Mem: make(drivers.Bytes, 16)}
		_, err := r.d.Register(bad)
		if !errors.Is(err, drivers.ErrRegistrationRefused) || !errors.Is(err, drivers.ErrBadGeometry) {
			t.Fatalf("bad geometry: %v, want ErrRegistrationRefused and ErrBadGeometry %s", err, repro(t))
		}
		if n := len(r.d.regions); n != 0 {
			t.Fatalf("D-REG-2: %d regions registered after a refusal %s", n, repro(t))
		}
	})
	t.Run("D-REG-1/overlap", func(t *testing.T) {
		r := newRig(t, Config{})
		buf := make(drivers.Bytes, 64)
		if _, err := r.d.Register(region("lo", buf[:32])); err != nil {
			t.Fatalf("register lo: %v %s", err, repro(t))
		}
		_, err := r.d.Register(region("mid", buf[16:48]))
		if !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Fatalf("overlapping registration: %v, want ErrRegistrationRefused %s", err, repro(t))
		}
		if _, err := r.d.Register(region("hi", buf[32:])); err != nil {
			t.Fatalf("adjacent, disjoint registration refused: %v %s", err, repro(t))
		}
		if n := len(r.d.regions); n != 2 {
			t.Fatalf("D-REG-2: %d regions registered, want 2 %s", n, repro(t))
		}
	})
	t.Run("D-REG-1/label", func(t *testing.T) {
		r := newRig(t, Config{})
		if _, err := r.d.Register(region("x", make(drivers.Bytes, 16))); err != nil {
			t.Fatal(err)
		}
		if _, err := r.d.Register(region("x", make(drivers.Bytes, 16))); !errors.Is(err, drivers.ErrBadGeometry) {
			t.Fatalf("duplicate label: %v, want ErrBadGeometry %s", err, repro(t))
		}
	})
	t.Run("D-REG-3/stale-close", func(t *testing.T) {
		r := newRig(t, Config{})
		mem := make(drivers.Bytes, 32)
		h1, err := r.d.Register(region("m", mem))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.d.Unregister(h1); err != nil {
			t.Fatalf("close: %v %s", err, repro(t))
		}
		h2, err := r.d.Register(region("m", mem))
		if err != nil {
			t.Fatal(err)
		}
		if h2 == h1 {
			t.Fatalf("handle %d reused %s", h1, repro(t))
		}
		for range 2 {
			if err := r.d.Unregister(h1); err != nil {
				t.Fatalf("stale close: %v, want a no-op %s", err, repro(t))
			}
		}
		if !r.d.Live(h2) || r.d.Live(h1) {
			t.Fatalf("after a stale close: Live(new)=%v Live(stale)=%v, want true, false %s", r.d.Live(h2), r.d.Live(h1), repro(t))
		}
	})
	t.Run("D-REG-5/after-shutdown", func(t *testing.T) {
		r := newRig(t, Config{})
		if labels := r.d.Shutdown(context.Background()); len(labels) != 0 {
			t.Fatalf("labels %v %s", labels, repro(t))
		}
		if _, err := r.d.Register(region("late", make(drivers.Bytes, 16))); !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Fatalf("registration after shutdown: %v, want ErrRegistrationRefused %s", err, repro(t))
		}
	})
	t.Run("D-REG-6/busy", func(t *testing.T) {
		r := newRig(t, Config{})
		g := newGateMem(slotBytes)
		h, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 1, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h})
		<-g.entered // the call is copying the slot: access PENDING
		if err := r.d.Unregister(h); !errors.Is(err, drivers.ErrBusy) || !r.d.Live(h) {
			t.Fatalf("close of a busy region: %v live=%v, want ErrBusy and still live %s", err, r.d.Live(h), repro(t))
		}
		close(g.release)
		await(t, c, w)
		if err := r.d.Unregister(h); err != nil || r.d.Live(h) {
			t.Fatalf("close after the call ENDED: %v live=%v %s", err, r.d.Live(h), repro(t))
		}
	})
}

// TestSubmit covers D-SUB-1 (validation before any access) and admission.
func TestSubmit(t *testing.T) {
	r := newRig(t, Config{Caps: drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true}})
	a, h := r.arena("a", 8, slotBytes)
	for _, tc := range []struct {
		name string
		b    drivers.RowBatch
	}{
		{"D-BATCH-KEYS/repeated-key", drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k", Handle: h, Slot: 0}, {Key: "k", Handle: h, Slot: 1}}}},
		{"same-slot", drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "a", Handle: h, Slot: 0}, {Key: "b", Handle: h, Slot: 0}}}},
		{"too-many-rows", drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, keyset("x", 5)...)}},
		{"empty", drivers.RowBatch{Dir: drivers.Fetch}},
		{"unsupported-direction", drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "k")}},
		{"stale-handle", drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h+99, "k")}},
		{"slot-outside", drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k", Handle: h, Slot: 8}}}},
	} {
		t.Run("D-SUB-1/"+tc.name, func(t *testing.T) {
			w := newWatcher()
			c, err := r.d.Submit(tc.b, w.onChange)
			if !errors.Is(err, drivers.ErrInvalidSubmission) || c != nil {
				t.Fatalf("Submit = %v, %v; want ErrInvalidSubmission %s", c, err, repro(t))
			}
			if n := len(a.Touches()); n != 0 || w.n.Load() != 0 {
				t.Fatalf("refused submit touched memory (%d) or called back (%d) %s", n, w.n.Load(), repro(t))
			}
		})
	}
	t.Run("D-DRAIN-1", func(t *testing.T) {
		g := newGateMem(slotBytes)
		hg, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 1, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		r.rawSet("k", content("k", slotBytes))
		c, w := r.submit(drivers.Fetch, drivers.Row{Key: "k", Handle: hg})
		<-g.entered // writing the slot
		st := r.d.Drain()
		if st.Done || !slices.Equal(st.Pending, []drivers.CallID{c.ID()}) {
			t.Fatalf("Drain with a call in a slot write = %+v, want pending [%d] %s", st, c.ID(), repro(t))
		}
		if _, err := r.d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, "k")}, nil); !errors.Is(err, drivers.ErrClosed) {
			t.Fatalf("Submit while draining: %v, want ErrClosed %s", err, repro(t))
		}
		close(g.release)
		wantStatuses(t, "drained fetch", await(t, c, w), OK)
		for range 1000 { // the callback that woke await may still be returning
			if st = r.d.Drain(); st.Done {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !st.Done || len(st.Pending) != 0 {
			t.Fatalf("Drain after the call ended = %+v, want done %s", st, repro(t))
		}
	})
}

// TestCancel covers D-CAN-1/2 and the ambiguity of a cancelled PUBLISH.
func TestCancel(t *testing.T) {
	t.Run("D-CAN-2/publish-in-flight-is-fault", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		a, h := r.arena("a", 4, slotBytes)
		keys := keyset("amb", 4)
		for i, k := range keys {
			a.Fill(i, content(k, slotBytes))
		}
		r.warmUp(keys)
		p.hold(true)
		c, w := r.submit(drivers.Publish, rows(h, keys...)...)
		p.awaitHeld(t, "SET") // the SETs left the client; the server has not seen them
		if got := c.Cancel(); got != drivers.CancelRequested {
			t.Fatalf("Cancel = %v, want REQUESTED %s", got, repro(t))
		}
		wantStatuses(t, "cancelled in-flight publish", await(t, c, w), Fault)
		if got := c.Access(); got != drivers.AccessEnded {
			t.Fatalf("access %v, want ENDED (the slots were copied before sending) %s", got, repro(t))
		}
		p.hold(false)
		// The server applies the SETs the client reported cancelled: that is
		// why FAULT, not NOT_ATTEMPTED, is the honest answer.
		deadline := time.Now().Add(5 * time.Second)
		for _, k := range keys {
			for {
				if _, ok := r.rawGet(k); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("key %q never appeared, but the SET was on the wire when cancelled %s", k, repro(t))
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
	t.Run("D-CAN-2/fetch-in-flight-not-attempted", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		a, h := r.arena("a", 4, slotBytes)
		keys := keyset("f", 4)
		for _, k := range keys {
			r.rawSet(k, content(k, slotBytes))
		}
		r.warmUp(keys)
		p.hold(true)
		c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
		p.awaitHeld(t, "GET")
		c.Cancel()
		wantStatuses(t, "cancelled in-flight fetch", await(t, c, w), NotAttempted)
		p.hold(false)
		if got := touchesBy(a, c.ID()); len(got) != 0 {
			t.Fatalf("NOT_ATTEMPTED rows touched their slots: %v %s", got, repro(t))
		}
	})
	t.Run("D-CAN-2/publish-before-send", func(t *testing.T) {
		r := newRig(t, Config{})
		g := newGateMem(2 * slotBytes)
		h, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 2, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		c, w := r.submit(drivers.Publish, rows(h, "p0", "p1")...)
		<-g.entered // copying row 0
		c.Cancel()
		close(g.release)
		wantStatuses(t, "publish cancelled before its SETs", await(t, c, w), NotAttempted)
		for _, k := range []string{"p0", "p1"} {
			if _, ok := r.rawGet(k); ok {
				t.Fatalf("NOT_ATTEMPTED row %q reached the store %s", k, repro(t))
			}
		}
	})
	t.Run("D-CAN-2/fetch-mid-write", func(t *testing.T) {
		r := newRig(t, Config{})
		g := newGateMem(3 * slotBytes)
		h, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 3, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		keys := keyset("w", 3)
		for _, k := range keys {
			r.rawSet(k, content(k, slotBytes))
		}
		c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
		<-g.entered // row 0's slot write has begun: completion wins for it
		c.Cancel()
		close(g.release)
		wantStatuses(t, "fetch cancelled during row 0's write", await(t, c, w), OK, NotAttempted, NotAttempted)
		if n := len(g.entered); n != 0 {
			t.Fatalf("%d more slot writes after the cancel was seen %s", n, repro(t))
		}
		if !bytes.Equal(g.Bytes[:slotBytes], content(keys[0], slotBytes)) {
			t.Fatalf("row 0 OK but its slot does not hold the object %s", repro(t))
		}
	})
	t.Run("D-CAN-1/answers", func(t *testing.T) {
		r := newRig(t, Config{})
		_, h := r.arena("a", 1, slotBytes)
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h})
		await(t, c, w)
		for range 2 {
			if got := c.Cancel(); got != drivers.CancelAlreadyDone {
				t.Fatalf("Cancel of a finished call = %v, want ALREADY_DONE %s", got, repro(t))
			}
		}
		g := newGateMem(slotBytes)
		hg, _ := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 1, Mem: g})
		c, w = r.submit(drivers.Publish, drivers.Row{Key: "g", Handle: hg})
		<-g.entered
		for range 2 { // idempotent
			if got := c.Cancel(); got != drivers.CancelRequested {
				t.Fatalf("Cancel = %v, want REQUESTED %s", got, repro(t))
			}
		}
		close(g.release)
		await(t, c, w)
	})
	t.Run("D-CAN-1/unsupported", func(t *testing.T) {
		caps := DefaultCaps
		caps.CanCancel = false
		r := newRig(t, Config{Caps: caps})
		g := newGateMem(slotBytes)
		h, _ := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 1, Mem: g})
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "g", Handle: h})
		<-g.entered
		if got := c.Cancel(); got != drivers.CancelUnsupported {
			t.Fatalf("Cancel with CanCancel=false = %v, want UNSUPPORTED %s", got, repro(t))
		}
		close(g.release)
		wantStatuses(t, "uncancellable publish", await(t, c, w), OK)
	})
	t.Run("timeout", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr(), Timeout: 100 * time.Millisecond})
		_, h := r.arena("a", 2, slotBytes)
		r.rawSet("f", content("f", slotBytes))
		p.hold(true)
		c, w := r.submit(drivers.Publish, rows(h, "p0", "p1")...)
		wantStatuses(t, "publish past its timeout", await(t, c, w), Fault)
		c, w = r.submit(drivers.Fetch, rows(h, "f")...)
		wantStatuses(t, "fetch past its timeout", await(t, c, w), Fault)
		p.hold(false)
	})
}

// TestShutdown covers D-SHUT-1/2 and D-CB-5.
func TestShutdown(t *testing.T) {
	t.Run("D-SHUT-1/labels", func(t *testing.T) {
		r := newRig(t, Config{})
		_, hf := r.arena("free", 1, slotBytes)
		g := newGateMem(slotBytes)
		hg, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 1, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: hg})
		<-g.entered // the goroutine is stuck copying the slot
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		labels := r.d.Shutdown(ctx)
		cancel()
		want := []string{fmt.Sprintf("call:%d:unprovable", c.ID()), "region:gated:retained"}
		if !slices.Equal(labels, want) {
			t.Fatalf("Shutdown labels %v, want %v %s", labels, want, repro(t))
		}
		if !r.d.Live(hg) || r.d.Live(hf) {
			t.Fatalf("after Shutdown: Live(gated)=%v Live(free)=%v, want true, false %s", r.d.Live(hg), r.d.Live(hf), repro(t))
		}
		if c.Access() != drivers.AccessUnprovable {
			t.Fatalf("abandoned call access %v, want UNPROVABLE %s", c.Access(), repro(t))
		}
		wantStatuses(t, "abandoned call", c.Results(), Fault)
		calls := w.n.Load()
		close(g.release)
		<-c.(*call).done
		if n := w.n.Load(); n != calls {
			t.Fatalf("D-CB-5: %d callbacks after Shutdown returned %s", n-calls, repro(t))
		}
		if c.Access() != drivers.AccessEnded {
			t.Fatalf("access %v after the goroutine ended, want ENDED (new evidence) %s", c.Access(), repro(t))
		}
		if _, ok := r.rawGet("k"); ok {
			t.Fatalf("the abandoned publish reached the store after Shutdown %s", repro(t))
		}
		if labels := r.d.Shutdown(context.Background()); len(labels) != 0 || r.d.Live(hg) {
			t.Fatalf("D-SHUT-2: second Shutdown labels %v live=%v, want none %s", labels, r.d.Live(hg), repro(t))
		}
	})
	t.Run("D-ACCESS/panic-is-unprovable", func(t *testing.T) {
		r := newRig(t, Config{})
		g := newGateMem(slotBytes)
		g.panics = true
		h, err := r.d.Register(drivers.Region{Label: "panicky", SlotBytes: slotBytes, Slots: 1, Mem: g})
		if err != nil {
			t.Fatal(err)
		}
		r.rawSet("k", content("k", slotBytes))
		c, w := r.submit(drivers.Fetch, drivers.Row{Key: "k", Handle: h})
		wantStatuses(t, "fetch whose slot write panicked", await(t, c, w), Fault)
		if c.Access() != drivers.AccessUnprovable {
			t.Fatalf("access after a panic %v, want UNPROVABLE %s", c.Access(), repro(t))
		}
		want := []string{fmt.Sprintf("call:%d:unprovable", c.ID()), "region:panicky:retained"}
		for range 2 { // D-SHUT-2: still held the second time
			if labels := r.d.Shutdown(context.Background()); !slices.Equal(labels, want) {
				t.Fatalf("Shutdown labels %v, want %v %s", labels, want, repro(t))
			}
		}
	})
	t.Run("D-CB-5/no-callback-after-shutdown", func(t *testing.T) {
		for round := range 5 {
			shutdownRaceRound(t, round)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		r := newRig(t, Config{})
		_, h := r.arena("a", 1, slotBytes)
		r.d.Shutdown(context.Background())
		if _, err := r.d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, "k")}, nil); !errors.Is(err, drivers.ErrClosed) {
			t.Fatalf("Submit after Shutdown: %v, want ErrClosed %s", err, repro(t))
		}
		if _, err := r.d.Contains(context.Background(), []string{"k"}); !errors.Is(err, drivers.ErrLookupFailed) || !errors.Is(err, drivers.ErrClosed) {
			t.Fatalf("Contains after Shutdown: %v, want ErrLookupFailed+ErrClosed %s", err, repro(t))
		}
		if st := r.d.Drain(); !st.Done {
			t.Fatalf("Drain after Shutdown = %+v, want done %s", st, repro(t))
		}
	})
}

// shutdownRaceRound runs workers that submit until admission closes, shuts
// the driver down under them and checks no callback runs after Shutdown
// returned (D-CB-5) and every call settled honestly.
func shutdownRaceRound(t *testing.T, round int) {
	r := newRig(t, Config{})
	const workers = 4
	var returned, late, bad = make(chan struct{}), make(chan string, 100), make(chan string, 100)
	subs := make(chan drivers.Call, 10000)
	done := make(chan struct{})
	hs := make([]drivers.Handle, workers)
	for i := range hs {
		_, hs[i] = r.arena(fmt.Sprintf("w%d", i), 4, slotBytes)
	}
	for i := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for n := 0; ; n++ {
				dir := drivers.Publish
				if n%2 == 1 {
					dir = drivers.Fetch
				}
				keys := keyset(fmt.Sprintf("r%d/w%d/%d", round, i, n/2), 4)
				c, err := r.d.Submit(drivers.RowBatch{Dir: dir, Rows: rows(hs[i], keys...)}, func() {
					select {
					case <-returned:
						select {
						case late <- "callback after Shutdown returned":
						default:
						}
					default:
					}
				})
				if errors.Is(err, drivers.ErrClosed) {
					return
				}
				if err != nil {
					bad <- err.Error()
					return
				}
				subs <- c
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(30 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	labels := r.d.Shutdown(ctx)
	cancel()
	close(returned)
	for range workers {
		<-done
	}
	time.Sleep(20 * time.Millisecond)
	close(subs)
	if len(labels) != 0 {
		t.Fatalf("round %d: Shutdown labels %v, want none %s", round, labels, repro(t))
	}
	select {
	case msg := <-late:
		t.Fatalf("D-CB-5: round %d: %s %s", round, msg, repro(t))
	case msg := <-bad:
		t.Fatalf("round %d: submit: %s %s", round, msg, repro(t))
	default:
	}
	n := 0
	for c := range subs {
		n++
		if !settledCall(c) || c.Access() != drivers.AccessEnded {
			t.Fatalf("round %d: call %d after Shutdown: results %v access %v, want final and ENDED %s",
				round, c.ID(), c.Results(), c.Access(), repro(t))
		}
	}
	if n == 0 {
		t.Fatalf("round %d: no call was submitted before Shutdown %s", round, repro(t))
	}
}

// TestFlushDelete covers the conformance suite's hooks.
func TestFlushDelete(t *testing.T) {
	r := newRig(t, Config{})
	keys := keyset("fd", 3)
	for _, k := range keys {
		r.rawSet(k, []byte("v"))
	}
	other := "storesim-test-other:" + r.prefix
	if err := r.raw.Do(context.Background(), r.raw.B().Set().Key(other).Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	defer r.raw.Do(context.Background(), r.raw.B().Del().Key(other).Build())
	if err := r.d.Delete(context.Background(), keys[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.d.Contains(context.Background(), keys); !slices.Equal(got, []bool{false, true, true}) {
		t.Fatalf("after Delete: %v %s", got, repro(t))
	}
	if err := r.d.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v %s", err, repro(t))
	}
	if got, _ := r.d.Contains(context.Background(), keys); !slices.Equal(got, []bool{false, false, false}) {
		t.Fatalf("after Flush: %v %s", got, repro(t))
	}
	if n, _ := r.raw.Do(context.Background(), r.raw.B().Exists().Key(other).Build()).AsInt64(); n != 1 {
		t.Fatalf("Flush deleted a key outside its prefix %s", repro(t))
	}
}

// warmUp connects every pipelined connection of the client (rueidis picks
// one at random per pipeline and dials it lazily), so a held proxy catches
// the commands themselves rather than a connection handshake.
func (r *rig) warmUp(keys []string) {
	r.t.Helper()
	for range 64 {
		if _, err := r.d.Contains(context.Background(), keys); err != nil {
			r.t.Fatalf("warm-up lookup: %v %s", err, repro(r.t))
		}
	}
}
