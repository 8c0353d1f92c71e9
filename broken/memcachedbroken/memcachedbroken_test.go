package memcachedbroken_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.uber.org/goleak"

	"github.com/storesim/storesim/broken/memcachedbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memcachedriver"
	"github.com/storesim/storesim/sim/arena"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slotBytes = 64

// repro is the suffix of every failure message: the command that reruns t.
func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: scripts/with-memcached.sh go test -race ./broken/memcachedbroken -run '^%s$')",
		strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// memcachedAddr is the private server of scripts/with-memcached.sh. Without
// it the tests skip — unless STORESIM_MEMCACHED_REQUIRED=1 (that script and
// CI), where a missing server is a failure.
func memcachedAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("STORESIM_MEMCACHED_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_MEMCACHED_REQUIRED") == "1" {
			t.Fatalf("STORESIM_MEMCACHED_REQUIRED=1 but STORESIM_MEMCACHED_ADDR is empty %s", repro(t))
		}
		t.Skip("STORESIM_MEMCACHED_ADDR is not set: these tests need a memcached; run them with: scripts/with-memcached.sh go test ./broken/memcachedbroken")
	}
	return addr
}

type wallClock struct{ start time.Time }

func (c wallClock) Now() time.Duration { return time.Since(c.start) }

var prefixSeq atomic.Int64

// rig is one driver under test — the plain memcached driver, or the broken
// one named — plus a raw client for setting keys up behind the driver's
// back.
type rig struct {
	t     testing.TB
	d     drivers.Driver
	keyOf func(string) string // row key → memcached key
	raw   *memcache.Client
	clock wallClock
}

func newRig(t testing.TB, name memcachedbroken.Name) *rig {
	t.Helper()
	addr := memcachedAddr(t)
	cfg := memcachedriver.Config{Addr: addr, Prefix: fmt.Sprintf("storesim-test:%d:%d:", os.Getpid(), prefixSeq.Add(1))}
	var d drivers.Driver
	var err error
	if name == "" {
		d, err = memcachedriver.New(cfg)
	} else {
		d, err = memcachedbroken.New(name, cfg)
	}
	if err != nil {
		t.Fatalf("New: %v %s", err, repro(t))
	}
	keys, err := memcachedriver.New(cfg) // only for ItemKey and Flush
	if err != nil {
		t.Fatalf("New: %v %s", err, repro(t))
	}
	raw := memcache.New(addr)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
		if err := keys.Flush(ctx); err != nil {
			t.Errorf("cleanup: flush: %v %s", err, repro(t))
		}
		keys.Shutdown(ctx)
		raw.Close()
	})
	return &rig{t: t, d: d, keyOf: keys.ItemKey, raw: raw, clock: wallClock{start: time.Now()}}
}

// register registers a, every slot lent.
func (r *rig) register(a *arena.Arena, slots int) drivers.Handle {
	r.t.Helper()
	h, err := r.d.Register(a.Region())
	if err != nil {
		r.t.Fatalf("register: %v %s", err, repro(r.t))
	}
	a.SetRegistered(true)
	for s := range slots {
		a.Lend(s, 1)
	}
	return h
}

// submit submits a batch; the channel receives (without blocking) on every
// callback.
func (r *rig) submit(dir drivers.Direction, rows ...drivers.Row) (drivers.Call, chan struct{}) {
	r.t.Helper()
	ch := make(chan struct{}, 1)
	c, err := r.d.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if err != nil {
		r.t.Fatalf("submit %v: %v %s", dir, err, repro(r.t))
	}
	return c, ch
}

// await waits for c to settle, checking the state only after a callback:
// if the last change were not followed by a callback (D-CB-2) it gives up.
func await(t testing.TB, c drivers.Call, ch chan struct{}) []drivers.Status {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case <-ch:
			res := c.Results()
			final := c.Access().Evidenced()
			for _, st := range res {
				final = final && st.Final()
			}
			if final {
				return res
			}
		case <-deadline.C:
			t.Fatalf("D-CB-2: call %d not settled 10s after submit, or its last change had no callback: results %v access %v %s",
				c.ID(), c.Results(), c.Access(), repro(t))
		}
	}
}

func (r *rig) rawGet(key string) []byte {
	r.t.Helper()
	it, err := r.raw.Get(r.keyOf(key))
	if errors.Is(err, memcache.ErrCacheMiss) {
		return nil
	}
	if err != nil {
		r.t.Fatalf("raw get %q: %v %s", key, err, repro(r.t))
	}
	return it.Value
}

func (r *rig) rawSet(key string, val []byte) {
	r.t.Helper()
	if err := r.raw.Set(&memcache.Item{Key: r.keyOf(key), Value: val}); err != nil {
		r.t.Fatalf("raw set %q: %v %s", key, err, repro(r.t))
	}
}

// content is the deterministic object stored under key (n bytes).
func content(key string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	seed := sha256.Sum256([]byte(key))
	for len(out) < n {
		out = append(out, seed[:]...)
		seed = sha256.Sum256(seed[:])
	}
	return out[:n]
}

// lateWrites fetches four present keys and records, at every slot write,
// whether the call already said ENDED, and returns those writes' rows with
// the results the call ended with.
func lateWrites(t *testing.T, r *rig) (late []int, res []drivers.Status) {
	var (
		mu   sync.Mutex
		call drivers.Call
	)
	submitted := make(chan struct{})
	hook := func(tc arena.Touch) {
		if tc.Op != arena.Write {
			return
		}
		<-submitted
		mu.Lock()
		c := call
		mu.Unlock()
		if c.Access() == drivers.AccessEnded {
			mu.Lock()
			late = append(late, tc.By.Row)
			mu.Unlock()
		}
	}
	a := arena.New("a", 4, slotBytes, arena.Options{Clock: r.clock, OnTouch: hook})
	h := r.register(a, 4)
	var rows []drivers.Row
	for i := range 4 {
		k := fmt.Sprintf("late/%02d", i)
		r.rawSet(k, content(k, slotBytes))
		rows = append(rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
	}
	c, ch := r.submit(drivers.Fetch, rows...)
	mu.Lock()
	call = c
	mu.Unlock()
	close(submitted)
	res = await(t, c, ch)
	// A lying call may look settled while its transfer still runs: wait
	// until the driver itself is drained (every worker done).
	for i := 0; !r.d.Drain().Done; i++ {
		if i == 1000 {
			t.Fatalf("the driver did not drain within 10s %s", repro(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]int(nil), late...), res
}

// scenario checks one contract point on a driver; it returns "" when the
// driver behaved correctly, else what it did wrong.
type scenario struct {
	name string
	bug  memcachedbroken.Name // the broken driver that must break this point (and only this one)
	run  func(t *testing.T, r *rig) string
}

var scenarios = []scenario{
	{"D-SUB-4/first-writer-wins", memcachedbroken.OverwritesOnPublish, func(t *testing.T, r *rig) string {
		a := arena.New("a", 2, slotBytes, arena.Options{Clock: r.clock})
		h := r.register(a, 2)
		first, second := bytes.Repeat([]byte{'A'}, slotBytes), bytes.Repeat([]byte{'B'}, slotBytes)
		a.Fill(0, first)
		a.Fill(1, second)
		c, ch := r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 0})
		await(t, c, ch)
		c, ch = r.submit(drivers.Publish, drivers.Row{Key: "k", Handle: h, Slot: 1})
		st := await(t, c, ch)
		switch v := r.rawGet("k"); {
		case bytes.Equal(v, second):
			return fmt.Sprintf("second PUBLISH (%v) replaced the first object", st[0])
		case !bytes.Equal(v, first):
			return "store lost the first object"
		case st[0] != drivers.OK && st[0] != drivers.Miss:
			return fmt.Sprintf("second PUBLISH answered %v, want OK or MISS", st[0])
		}
		return ""
	}},
	{"D-MISS-HONEST/absent-is-miss", memcachedbroken.MissAsFault, func(t *testing.T, r *rig) string {
		a := arena.New("a", 1, slotBytes, arena.Options{Clock: r.clock, Log: true})
		h := r.register(a, 1)
		c, ch := r.submit(drivers.Fetch, drivers.Row{Key: "absent", Handle: h})
		st := await(t, c, ch)
		for _, tc := range a.Touches() {
			if tc.By.Call == c.ID() {
				return fmt.Sprintf("%v row touched its slot", st[0])
			}
		}
		if st[0] != drivers.Miss {
			return fmt.Sprintf("absent key answered %v", st[0])
		}
		return ""
	}},
	{"D-ACCESS-END/no-write-after-ended", memcachedbroken.EndsBeforeWrite, func(t *testing.T, r *rig) string {
		// A call that ends well (no FAULT row) must not write after ENDED.
		late, res := lateWrites(t, r)
		if len(late) > 0 && !containsFault(res) {
			return fmt.Sprintf("rows %v written after the call said ENDED (results %v)", late, res)
		}
		return ""
	}},
	{"D-ACCESS/no-end-claimed-on-timeout", memcachedbroken.TimeoutClaimsEnded, func(t *testing.T, r *rig) string {
		// A call that failed (FAULT rows) and said ENDED must not write
		// afterwards: it stopped waiting, so its access was UNPROVABLE.
		late, res := lateWrites(t, r)
		if len(late) > 0 && containsFault(res) {
			return fmt.Sprintf("rows %v written after the call answered %v with access ENDED", late, res)
		}
		return ""
	}},
}

func containsFault(res []drivers.Status) bool {
	for _, s := range res {
		if s == drivers.Fault {
			return true
		}
	}
	return false
}

// TestBroken shows that the plain memcached driver keeps each point and
// that each broken memcached driver breaks exactly its own point and none
// of the others.
func TestBroken(t *testing.T) {
	for _, name := range append([]memcachedbroken.Name{""}, memcachedbroken.Names()...) {
		label := string(name)
		if label == "" {
			label = "plain"
		}
		t.Run(label, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					got := sc.run(t, newRig(t, name))
					switch {
					case sc.bug == name && got == "":
						t.Fatalf("%s did not break %s %s", name, sc.name, repro(t))
					case sc.bug != name && got != "":
						t.Fatalf("driver %q broke %s: %s %s", label, sc.name, got, repro(t))
					}
				})
			}
		})
	}
}

// TestNames: every name has its rule, and New refuses an unknown name
// before connecting.
func TestNames(t *testing.T) {
	for _, n := range memcachedbroken.Names() {
		if n.Rule() == "" {
			t.Errorf("%s has no rule %s", n, repro(t))
		}
	}
	if _, err := memcachedbroken.New("Nope", memcachedriver.Config{Addr: "127.0.0.1:1"}); !errors.Is(err, memcachedbroken.ErrUnknown) {
		t.Errorf("New(\"Nope\") = %v, want ErrUnknown %s", err, repro(t))
	}
}
