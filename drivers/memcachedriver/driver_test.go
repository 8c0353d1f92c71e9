package memcachedriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

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
		t.Fatalf("%v %s", err, repro(t))
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
		{"sub-second-ttl", Config{Addr: "x:1", TTL: 500 * time.Millisecond}, ErrConfig},
		{"fractional-ttl", Config{Addr: "x:1", TTL: 1500 * time.Millisecond}, ErrConfig},
		{"ttl-above-30-days", Config{Addr: "x:1", TTL: 31 * 24 * time.Hour}, ErrConfig},
		{"negative-timeout", Config{Addr: "x:1", Timeout: -1}, ErrConfig},
		{"negative-net-timeout", Config{Addr: "x:1", NetTimeout: -1}, ErrConfig},
		{"negative-max-value", Config{Addr: "x:1", MaxValueBytes: -1}, ErrConfig},
		{"prefix-with-space", Config{Addr: "x:1", Prefix: "a b"}, ErrConfig},
		{"prefix-too-long", Config{Addr: "x:1", Prefix: strings.Repeat("p", 186)}, ErrConfig},
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
		if v, ok := r.rawGet(k); !ok || !bytes.Equal(v, content(k, slotBytes)) {
			t.Fatalf("server holds %q=%d bytes (present %v), want the published object %s", k, len(v), ok, repro(t))
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

// TestKeys covers the store layout: keys memcached cannot take are hashed,
// the two forms never meet, and every form round-trips.
func TestKeys(t *testing.T) {
	r := newRig(t, Config{Prefix: "p/"})
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		key    string
		hashed bool
	}{
		{"plain/key", false},
		{"has space", true},
		{"tab\tkey", true},
		{"ctl\x7fkey", true},
		{long, true},
		{strings.Repeat("k", 248), false}, // 2 + 248 = 250 bytes: still legal
		{strings.Repeat("k", 249), true},
		{"#starts-with-hash", true},
		{"ünïcode", false},
	} {
		got := r.d.ItemKey(tc.key)
		if hashed := strings.HasPrefix(got, "p/#"); hashed != tc.hashed || len(got) > maxKey || !legalKey(got) {
			t.Fatalf("ItemKey(%q) = %q: hashed %v, want %v, and a legal key of at most 250 bytes %s", tc.key, got, hashed, tc.hashed, repro(t))
		}
		if !tc.hashed && got != "p/"+tc.key {
			t.Fatalf("ItemKey(%q) = %q, want the prefix and the key %s", tc.key, got, repro(t))
		}
	}
	// A raw key that looks like a hash never meets the hashed key.
	if h := r.d.ItemKey("has space"); r.d.ItemKey(strings.TrimPrefix(h, "p/")) == h {
		t.Fatalf("the key %q maps onto the hashed key of another %s", strings.TrimPrefix(h, "p/"), repro(t))
	}

	keys := []string{"has space", long, "#x", "plain"}
	src, hs := r.arena("src", len(keys), 64)
	_, hd := r.arena("dst", len(keys), 64)
	for i, k := range keys {
		src.Fill(i, content(k, 64))
	}
	t.Cleanup(func() { r.rawDelete(keys...) })
	c, w := r.submit(drivers.Publish, rows(hs, keys...)...)
	wantStatuses(t, "publish of every key form", await(t, c, w), OK)
	c, w = r.submit(drivers.Fetch, rows(hd, keys...)...)
	wantStatuses(t, "fetch of every key form", await(t, c, w), OK)
	if got, err := r.d.Contains(context.Background(), append(keys, "absent key")); err != nil || !slices.Equal(got, []bool{true, true, true, true, false}) {
		t.Fatalf("Contains of every key form = %v, %v %s", got, err, repro(t))
	}
}

// TestPublish covers D-SUB-4 (first writer wins), TTL and the server's
// refusals.
func TestPublish(t *testing.T) {
	t.Run("D-SUB-4/first-writer-wins", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 2, slotBytes)
		a.Fill(0, bytes.Repeat([]byte{'A'}, slotBytes))
		a.Fill(1, bytes.Repeat([]byte{'B'}, slotBytes))
		t.Cleanup(func() { r.rawDelete("k") })
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 0})
		wantStatuses(t, "first publish", await(t, c, w), OK)
		c, w = r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 1})
		wantStatuses(t, "second publish of a present key (already there)", await(t, c, w), OK)
		if v, _ := r.rawGet("k"); !bytes.Equal(v, bytes.Repeat([]byte{'A'}, slotBytes)) {
			t.Fatalf("D-SUB-4: the second PUBLISH replaced the first object %s", repro(t))
		}
	})
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{{"ttl", time.Hour}, {"no-ttl", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{TTL: tc.ttl})
			_, h := r.arena("a", 1, slotBytes)
			t.Cleanup(func() { r.rawDelete("k") })
			start := time.Now()
			c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h})
			wantStatuses(t, "publish", await(t, c, w), OK)
			exp := r.metaExp(r.d.ItemKey("k"))
			switch {
			case tc.ttl == 0 && exp != -1:
				t.Fatalf("item expiry %d, want -1 (never) %s", exp, repro(t))
			case tc.ttl > 0 && (exp < start.Unix() || exp > time.Now().Add(tc.ttl).Unix()+1):
				t.Fatalf("item expiry %d, want about now+%v (%d) %s", exp, tc.ttl, start.Add(tc.ttl).Unix(), repro(t))
			}
		})
	}
	t.Run("D-STATUS/too-large-is-declined", func(t *testing.T) {
		// The driver is told the server takes 2 MB; it takes 1 MB (-I 1m):
		// the server's refusal is a definite "not stored", MISS.
		const big = 1<<20 + 4096
		r := newRig(t, Config{MaxValueBytes: 2 << 20})
		_, h := r.arena("a", 1, big)
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "big", Handle: h})
		wantStatuses(t, "publish larger than the server's item limit", await(t, c, w), Miss)
		if _, ok := r.rawGet("big"); ok {
			t.Fatalf("a declined object is in the store %s", repro(t))
		}
		// The driver keeps working: the refusal cost it a connection, not
		// the call after it.
		_, h2 := r.arena("b", 1, slotBytes)
		c, w = r.submit(drivers.Publish, drivers.Row{Key: "after-big", Handle: h2})
		wantStatuses(t, "publish after a refusal", await(t, c, w), OK)
		r.rawDelete("after-big")
	})
	t.Run("largest-slot", func(t *testing.T) {
		// DefaultMaxValueBytes under the longest legal key is stored by a
		// default server (-I 1m); one byte more is refused at Register.
		r := newRig(t, Config{Prefix: "p/"})
		if _, err := r.d.Register(drivers.Region{Label: "over", SlotBytes: DefaultMaxValueBytes + 1, Slots: 1, Mem: make(drivers.Bytes, DefaultMaxValueBytes+1)}); !errors.Is(err, drivers.ErrRegistrationRefused) {
			t.Fatalf("Register of slots above MaxValueBytes: %v, want ErrRegistrationRefused %s", err, repro(t))
		}
		src, hs := r.arena("src", 1, DefaultMaxValueBytes)
		dst, hd := r.arena("dst", 1, DefaultMaxValueBytes)
		key := strings.Repeat("L", maxKey-2)
		src.Fill(0, content(key, DefaultMaxValueBytes))
		t.Cleanup(func() { r.rawDelete(key) })
		c, w := r.submit(drivers.Publish, drivers.Row{Key: key, Handle: hs})
		wantStatuses(t, "publish of the largest slot", await(t, c, w), OK)
		c, w = r.submit(drivers.Fetch, drivers.Row{Key: key, Handle: hd})
		wantStatuses(t, "fetch of the largest slot", await(t, c, w), OK)
		if !bytes.Equal(dst.Peek(0), content(key, DefaultMaxValueBytes)) {
			t.Fatalf("the largest slot did not round-trip %s", repro(t))
		}
	})
	t.Run("D-STATUS/outage-stops", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		_, h := r.arena("a", 3, slotBytes)
		p.setDown(true)
		c, w := r.submit(drivers.Publish, rows(h, keyset("down", 3)...)...)
		wantStatuses(t, "publish during an outage", await(t, c, w), Fault, NotAttempted, NotAttempted)
		if c.Access() != drivers.AccessEnded {
			t.Fatalf("access %v, want ENDED (the slots were copied before sending) %s", c.Access(), repro(t))
		}
	})
}

// metaExp is the expiry (Unix seconds, -1 for never) of item k as the
// server's key dump reports it.
func (r *rig) metaExp(item string) int64 {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 50 {
		lines, err := r.d.rawCommand(ctx, "lru_crawler metadump all", 10_000_000)
		if err != nil && strings.Contains(err.Error(), "BUSY") {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			r.t.Fatalf("metadump: %v %s", err, repro(r.t))
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 || !strings.HasPrefix(f[1], "exp=") {
				continue
			}
			if k, err := url.PathUnescape(strings.TrimPrefix(f[0], "key=")); err != nil || k != item {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimPrefix(f[1], "exp="), 10, 64)
			if err != nil {
				r.t.Fatalf("metadump line %q: %v %s", l, err, repro(r.t))
			}
			return n
		}
		r.t.Fatalf("metadump does not list %q %s", item, repro(r.t))
	}
	r.t.Fatalf("metadump stayed BUSY %s", repro(r.t))
	return 0
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
				t.Cleanup(func() { r.rawDelete("k") })
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
		t.Cleanup(func() { r.rawDelete("k0") })
		p.setDown(true)
		c, w := r.submit(drivers.Fetch, rows(h, "k0", "k1")...)
		wantStatuses(t, "fetch during an outage", await(t, c, w), Fault)
		if got := touchesBy(a, c.ID()); len(got) != 0 || c.Access() != drivers.AccessEnded {
			t.Fatalf("fetch during an outage touched memory (%v) or did not end (%v) %s", got, c.Access(), repro(t))
		}
		p.setDown(false)
		c, w = r.submit(drivers.Fetch, rows(h, "k0", "k1")...)
		wantStatuses(t, "fetch after the outage", await(t, c, w), OK, Miss)
	})
	t.Run("D-MISS-HONEST/broken-mid-answer", func(t *testing.T) {
		// The connection dies while the server's answer is on its way: the
		// answer never completes, every row is FAULT (a missing item is not a
		// miss then), no slot is touched and access ends provably.
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		a, h := r.arena("a", 2, slotBytes)
		r.rawSet("m0", content("m0", slotBytes))
		t.Cleanup(func() { r.rawDelete("m0") })
		p.hold(true)
		c, w := r.submit(drivers.Fetch, rows(h, "m0", "m1")...)
		p.awaitHeld(t, "gets ")
		p.setDown(true)
		wantStatuses(t, "fetch whose connection broke", await(t, c, w), Fault)
		if got := touchesBy(a, c.ID()); len(got) != 0 || c.Access() != drivers.AccessEnded {
			t.Fatalf("touches %v access %v, want none and ENDED %s", got, c.Access(), repro(t))
		}
	})
	t.Run("mixed", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 4, slotBytes)
		r.rawSet("ok", content("ok", slotBytes))
		r.rawSet("short", []byte("x"))
		t.Cleanup(func() { r.rawDelete("ok", "short") })
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
		t.Cleanup(func() { r.rawDelete(keys...) })
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
		t.Cleanup(func() { r.rawDelete("k") })
		p.setDown(true)
		got, err := r.d.Contains(context.Background(), []string{"k", "j"})
		if !errors.Is(err, drivers.ErrLookupFailed) || got != nil {
			t.Fatalf("lookup during an outage = %v, %v; want ErrLookupFailed, never absent %s", got, err, repro(t))
		}
		p.setDown(false)
		got, err = r.d.Contains(context.Background(), []string{"k", "j"})
		if err != nil || !slices.Equal(got, []bool{true, false}) {
			t.Fatalf("lookup after the outage = %v, %v %s", got, err, repro(t))
		}
	})
	t.Run("D-LOOK-2/stalled", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr(), NetTimeout: 100 * time.Millisecond})
		p.hold(true)
		got, err := r.d.Contains(context.Background(), []string{"k"})
		p.hold(false)
		if !errors.Is(err, drivers.ErrLookupFailed) || got != nil {
			t.Fatalf("lookup of a stalled server = %v, %v; want ErrLookupFailed, never absent %s", got, err, repro(t))
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
			t.Fatalf("%v %s", err, repro(t))
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
			t.Fatalf("%v %s", err, repro(t))
		}
		if err := r.d.Unregister(h1); err != nil {
			t.Fatalf("close: %v %s", err, repro(t))
		}
		h2, err := r.d.Register(region("m", mem))
		if err != nil {
			t.Fatalf("%v %s", err, repro(t))
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
			t.Fatalf("%v %s", err, repro(t))
		}
		t.Cleanup(func() { r.rawDelete("k") })
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
			t.Fatalf("%v %s", err, repro(t))
		}
		r.rawSet("k", content("k", slotBytes))
		t.Cleanup(func() { r.rawDelete("k") })
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

func TestCancel(t *testing.T) {
	t.Run("D-CAN-2/publish-in-flight-completes", func(t *testing.T) {
		// The add of row 0 is on the wire when the cancel comes: it runs to
		// its reply (OK), and the rows never sent are NOT_ATTEMPTED.
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr()})
		a, h := r.arena("a", 4, slotBytes)
		keys := keyset("amb", 4)
		for i, k := range keys {
			a.Fill(i, content(k, slotBytes))
		}
		t.Cleanup(func() { r.rawDelete(keys...) })
		p.hold(true)
		c, w := r.submit(drivers.Publish, rows(h, keys...)...)
		p.awaitHeld(t, "add ") // row 0's add left the client; the server has not seen it
		if got := c.Cancel(); got != drivers.CancelRequested {
			t.Fatalf("Cancel = %v, want REQUESTED %s", got, repro(t))
		}
		if got := c.Access(); got != drivers.AccessEnded {
			t.Fatalf("access %v, want ENDED (the slots were copied before sending) %s", got, repro(t))
		}
		p.hold(false)
		wantStatuses(t, "cancelled in-flight publish", await(t, c, w), OK, NotAttempted, NotAttempted, NotAttempted)
		for i, k := range keys {
			if _, ok := r.rawGet(k); ok != (i == 0) {
				t.Fatalf("key %q present=%v after the cancel, want only row 0 stored %s", k, ok, repro(t))
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
		t.Cleanup(func() { r.rawDelete(keys...) })
		p.hold(true)
		c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
		p.awaitHeld(t, "gets ")
		c.Cancel()
		p.hold(false)
		wantStatuses(t, "cancelled in-flight fetch", await(t, c, w), NotAttempted)
		if got := touchesBy(a, c.ID()); len(got) != 0 {
			t.Fatalf("NOT_ATTEMPTED rows touched their slots: %v %s", got, repro(t))
		}
	})
	t.Run("D-CAN-2/publish-before-send", func(t *testing.T) {
		r := newRig(t, Config{})
		g := newGateMem(2 * slotBytes)
		h, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 2, Mem: g})
		if err != nil {
			t.Fatalf("%v %s", err, repro(t))
		}
		c, w := r.submit(drivers.Publish, rows(h, "p0", "p1")...)
		<-g.entered // copying row 0
		c.Cancel()
		close(g.release)
		wantStatuses(t, "publish cancelled before its adds", await(t, c, w), NotAttempted)
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
			t.Fatalf("%v %s", err, repro(t))
		}
		keys := keyset("w", 3)
		for _, k := range keys {
			r.rawSet(k, content(k, slotBytes))
		}
		t.Cleanup(func() { r.rawDelete(keys...) })
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
		t.Cleanup(func() { r.rawDelete("k", "g") })
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
		t.Cleanup(func() { r.rawDelete("g") })
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "g", Handle: h})
		<-g.entered
		if got := c.Cancel(); got != drivers.CancelUnsupported {
			t.Fatalf("Cancel with CanCancel=false = %v, want UNSUPPORTED %s", got, repro(t))
		}
		close(g.release)
		wantStatuses(t, "uncancellable publish", await(t, c, w), OK)
	})
}

// TestTimeout covers the two clocks: the client's socket timeout (the worker
// gets an error and returns: FAULT, and access ENDED on that proof) and the
// call's deadline (the driver stops waiting for a worker still inside the
// transfer: FAULT, and access UNPROVABLE until the worker returns — never
// ENDED on the deadline alone, D-ACCESS).
func TestTimeout(t *testing.T) {
	t.Run("net-timeout", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr(), NetTimeout: 100 * time.Millisecond})
		a, h := r.arena("a", 2, slotBytes)
		p.hold(true)
		c, w := r.submit(drivers.Publish, rows(h, "p0", "p1")...)
		wantStatuses(t, "publish past the socket timeout", await(t, c, w), Fault, NotAttempted)
		c, w = r.submit(drivers.Fetch, rows(h, "f")...)
		wantStatuses(t, "fetch past the socket timeout", await(t, c, w), Fault)
		if c.Access() != drivers.AccessEnded || len(touchesBy(a, c.ID())) != 0 {
			t.Fatalf("fetch past the socket timeout: access %v touches %v, want ENDED and none %s", c.Access(), touchesBy(a, c.ID()), repro(t))
		}
		p.hold(false)
		r.rawDelete("p0")
	})
	t.Run("D-ACCESS/deadline-in-transfer-is-unprovable", func(t *testing.T) {
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr(), Timeout: 50 * time.Millisecond, NetTimeout: 10 * time.Second})
		a, h := r.arena("a", 2, slotBytes)
		r.rawSet("d0", content("d0", slotBytes))
		t.Cleanup(func() { r.rawDelete("d0") })
		p.hold(true)
		c, w := r.submit(drivers.Fetch, rows(h, "d0", "d1")...)
		p.awaitHeld(t, "gets ")
		awaitWhen(t, c, w, "the deadline", settledCall)
		wantStatuses(t, "fetch past its deadline", c.Results(), Fault)
		if got := c.Access(); got != drivers.AccessUnprovable {
			t.Fatalf("access %v past the deadline while the worker waits on the server, want UNPROVABLE %s", got, repro(t))
		}
		if st := r.d.Drain(); st.Done {
			t.Fatalf("Drain = %+v with a worker still running, want pending %s", st, repro(t))
		}
		p.hold(false) // the answer arrives: the worker writes nothing and returns
		awaitEnded(t, c, w)
		wantStatuses(t, "fetch past its deadline, after the worker returned", c.Results(), Fault)
		if got := touchesBy(a, c.ID()); len(got) != 0 {
			t.Fatalf("the worker wrote slots of rows reported FAULT at the deadline: %v %s", got, repro(t))
		}
	})
	t.Run("D-ACCESS/deadline-in-slot-write", func(t *testing.T) {
		r := newRig(t, Config{Timeout: 50 * time.Millisecond})
		g := newGateMem(2 * slotBytes)
		h, err := r.d.Register(drivers.Region{Label: "gated", SlotBytes: slotBytes, Slots: 2, Mem: g})
		if err != nil {
			t.Fatalf("%v %s", err, repro(t))
		}
		keys := keyset("sw", 2)
		for _, k := range keys {
			r.rawSet(k, content(k, slotBytes))
		}
		t.Cleanup(func() { r.rawDelete(keys...) })
		c, w := r.submit(drivers.Fetch, rows(h, keys...)...)
		<-g.entered // the worker is inside row 0's slot write
		awaitWhen(t, c, w, "the deadline", settledCall)
		wantStatuses(t, "fetch whose deadline passed in a slot write", c.Results(), Fault)
		if got := c.Access(); got != drivers.AccessUnprovable {
			t.Fatalf("access %v with a slot write in progress, want UNPROVABLE %s", got, repro(t))
		}
		if labels := r.d.Unregister(h); !errors.Is(labels, drivers.ErrBusy) {
			t.Fatalf("Unregister with an UNPROVABLE call: %v, want ErrBusy %s", labels, repro(t))
		}
		close(g.release)
		awaitEnded(t, c, w)
		if n := len(g.entered); n != 0 {
			t.Fatalf("%d slot writes started after the deadline %s", n, repro(t))
		}
		wantStatuses(t, "results never change (D-CB-3)", c.Results(), Fault)
	})
	t.Run("publish-deadline", func(t *testing.T) {
		// A PUBLISH's access ended with its copy; its deadline only answers
		// the rows: the add on the wire FAULT (it may land), the rest
		// NOT_ATTEMPTED.
		p := startProxy(t)
		r := newRig(t, Config{Addr: p.addr(), Timeout: 50 * time.Millisecond, NetTimeout: 10 * time.Second})
		_, h := r.arena("a", 3, slotBytes)
		keys := keyset("pd", 3)
		t.Cleanup(func() { r.rawDelete(keys...) })
		p.hold(true)
		c, w := r.submit(drivers.Publish, rows(h, keys...)...)
		p.awaitHeld(t, "add ")
		wantStatuses(t, "publish past its deadline", await(t, c, w), Fault, NotAttempted, NotAttempted)
		if c.Access() != drivers.AccessEnded {
			t.Fatalf("access %v, want ENDED (copied before sending) %s", c.Access(), repro(t))
		}
		p.hold(false)
		for range 1000 {
			if st := r.d.Drain(); st.Done {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if st := r.d.Drain(); !st.Done {
			t.Fatalf("Drain = %+v after the worker returned, want done %s", st, repro(t))
		}
		for i, k := range keys {
			if _, ok := r.rawGet(k); ok != (i == 0) {
				t.Fatalf("key %q present=%v; want only the add that was on the wire applied %s", k, ok, repro(t))
			}
		}
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
			t.Fatalf("%v %s", err, repro(t))
		}
		c, w := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: hg})
		<-g.entered // the worker is stuck copying the slot
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
		wantStatuses(t, "abandoned call (its add never sent)", c.Results(), NotAttempted)
		calls := w.n.Load()
		close(g.release)
		<-c.(*call).done
		if n := w.n.Load(); n != calls {
			t.Fatalf("D-CB-5: %d callbacks after Shutdown returned %s", n-calls, repro(t))
		}
		if c.Access() != drivers.AccessEnded {
			t.Fatalf("access %v after the worker ended, want ENDED (new evidence) %s", c.Access(), repro(t))
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
			t.Fatalf("%v %s", err, repro(t))
		}
		r.rawSet("k", content("k", slotBytes))
		t.Cleanup(func() { r.rawDelete("k") })
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
			for n := 0; n < 5000; n++ {
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
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d2, err := New(Config{Addr: r.d.cfg.Addr, Prefix: r.prefix})
	if err != nil {
		t.Fatalf("round %d: cleanup driver: %v %s", round, err, repro(t))
	}
	defer d2.Shutdown(ctx)
	if err := d2.Flush(ctx); err != nil {
		t.Fatalf("round %d: flush: %v %s", round, err, repro(t))
	}
}

// TestFlushDeleteStats covers the conformance suite's hooks and the
// statistics the eviction certification reads.
func TestFlushDeleteStats(t *testing.T) {
	r := newRig(t, Config{})
	keys := keyset("fd", 3)
	for _, k := range keys {
		r.rawSet(k, []byte("v"))
	}
	other := "storesim-test-other:" + r.prefix
	if err := r.raw.Set(&memcache.Item{Key: other, Value: []byte("v")}); err != nil {
		t.Fatalf("%v %s", err, repro(t))
	}
	defer r.raw.Delete(other)
	if err := r.d.Delete(context.Background(), keys[0]); err != nil {
		t.Fatalf("%v %s", err, repro(t))
	}
	if err := r.d.Delete(context.Background(), keys[0]); err != nil {
		t.Fatalf("Delete of an absent key: %v, want nil %s", err, repro(t))
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
	if _, err := r.raw.Get(other); err != nil {
		t.Fatalf("Flush deleted a key outside its prefix (%v) %s", err, repro(t))
	}
	st, err := r.d.Stats(context.Background())
	if err != nil || st["version"] == "" || st["limit_maxbytes"] == "" {
		t.Fatalf("Stats = %v, %v; want version and limit_maxbytes %s", st, err, repro(t))
	}
	if _, err := r.d.Evictions(context.Background()); err != nil {
		t.Fatalf("Evictions: %v %s", err, repro(t))
	}
	noPrefix, err := New(Config{Addr: r.d.cfg.Addr})
	if err != nil {
		t.Fatalf("%v %s", err, repro(t))
	}
	defer noPrefix.Shutdown(context.Background())
	if err := noPrefix.Flush(context.Background()); !errors.Is(err, ErrConfig) {
		t.Fatalf("Flush without a prefix: %v, want ErrConfig %s", err, repro(t))
	}
}
