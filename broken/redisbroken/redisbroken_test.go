package redisbroken_test

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

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/storesim/storesim/broken/redisbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/redisdriver"
	"github.com/storesim/storesim/sim/arena"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slotBytes = 64

// repro is the suffix of every failure message: the command that reruns t.
func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: scripts/with-redis.sh go test -race ./broken/redisbroken -run '^%s$')",
		strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// redisAddr is the private server of scripts/with-redis.sh. Without it the
// tests skip — unless STORESIM_REDIS_REQUIRED=1 (that script and CI), where
// a missing server is a failure.
func redisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty %s", repro(t))
		}
		t.Skip("STORESIM_REDIS_ADDR is not set: these tests need a redis-server; run them with: scripts/with-redis.sh go test ./broken/redisbroken")
	}
	return addr
}

type wallClock struct{ start time.Time }

func (c wallClock) Now() time.Duration { return time.Since(c.start) }

var prefixSeq atomic.Int64

// rig is one driver under test — the plain Redis driver, or the broken one
// named — plus a raw client for setting keys up behind the driver's back.
type rig struct {
	t      testing.TB
	d      drivers.Driver
	raw    rueidis.Client
	prefix string
	clock  wallClock
}

func newRig(t testing.TB, name redisbroken.Name) *rig {
	t.Helper()
	addr := redisAddr(t)
	cfg := redisdriver.Config{Addr: addr, Prefix: fmt.Sprintf("storesim-test:%d:%d:%s:", os.Getpid(), prefixSeq.Add(1), t.Name())}
	var d drivers.Driver
	var err error
	if name == "" {
		d, err = redisdriver.New(cfg)
	} else {
		d, err = redisbroken.New(name, cfg)
	}
	if err != nil {
		t.Fatalf("New: %v %s", err, repro(t))
	}
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("raw client: %v %s", err, repro(t))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
		keys, err := raw.Do(ctx, raw.B().Keys().Pattern(cfg.Prefix+"*").Build()).AsStrSlice()
		if err != nil {
			t.Errorf("cleanup: KEYS: %v %s", err, repro(t))
		}
		for _, k := range keys {
			raw.Do(ctx, raw.B().Del().Key(k).Build())
		}
		raw.Close()
	})
	return &rig{t: t, d: d, raw: raw, prefix: cfg.Prefix, clock: wallClock{start: time.Now()}}
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

func (r *rig) rawGet(key string) string {
	r.t.Helper()
	v, err := r.raw.Do(context.Background(), r.raw.B().Get().Key(r.prefix+key).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		r.t.Fatalf("raw GET %q: %v %s", key, err, repro(r.t))
	}
	return v
}

func (r *rig) rawSet(key string, val []byte) {
	r.t.Helper()
	if err := r.raw.Do(context.Background(), r.raw.B().Set().Key(r.prefix+key).Value(string(val)).Build()).Error(); err != nil {
		r.t.Fatalf("raw SET %q: %v %s", key, err, repro(r.t))
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

// scenario checks one contract point on a driver; it returns "" when the
// driver behaved correctly, else what it did wrong.
type scenario struct {
	name string
	bug  redisbroken.Name // the broken driver that must break this point (and only this one)
	run  func(t *testing.T, r *rig) string
}

var scenarios = []scenario{
	{"D-SUB-4/first-writer-wins", redisbroken.OverwritesOnPublish, func(t *testing.T, r *rig) string {
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
		case v == string(second):
			return fmt.Sprintf("second PUBLISH (%v) replaced the first object", st[0])
		case v != string(first):
			return "store lost the first object"
		case st[0] != drivers.OK && st[0] != drivers.Miss:
			return fmt.Sprintf("second PUBLISH answered %v, want OK or MISS", st[0])
		}
		return ""
	}},
	{"D-MISS-HONEST/absent-is-miss", redisbroken.MissAsFault, func(t *testing.T, r *rig) string {
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
	{"D-STATUS/no-write-after-report", redisbroken.WritesAfterReport, func(t *testing.T, r *rig) string {
		var (
			mu    sync.Mutex
			call  drivers.Call
			wrong []string
		)
		submitted := make(chan struct{})
		// At every slot touch, ask the call whether the touching row was
		// already reported: a FETCH slot must never be written after that.
		hook := func(tc arena.Touch) {
			<-submitted
			mu.Lock()
			c := call
			mu.Unlock()
			if st := c.Results(); tc.By.Row < len(st) && st[tc.By.Row].Final() {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("row %d written after it was reported %v", tc.By.Row, st[tc.By.Row]))
				mu.Unlock()
			}
		}
		a := arena.New("a", 4, slotBytes, arena.Options{Clock: r.clock, OnTouch: hook})
		h := r.register(a, 4)
		var rows []drivers.Row
		for i := range 4 {
			k := fmt.Sprintf("war/%02d", i)
			r.rawSet(k, content(k, slotBytes))
			rows = append(rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
		}
		c, ch := r.submit(drivers.Fetch, rows...)
		mu.Lock()
		call = c
		mu.Unlock()
		close(submitted)
		await(t, c, ch)
		mu.Lock()
		defer mu.Unlock()
		if len(wrong) > 0 {
			return wrong[0]
		}
		return ""
	}},
}

// TestBroken shows that the plain Redis driver keeps each point and that
// each broken Redis driver breaks exactly its own point and none of the
// others.
func TestBroken(t *testing.T) {
	for _, name := range append([]redisbroken.Name{""}, redisbroken.Names()...) {
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
	for _, n := range redisbroken.Names() {
		if n.Rule() == "" {
			t.Errorf("%s has no rule %s", n, repro(t))
		}
	}
	if _, err := redisbroken.New("Nope", redisdriver.Config{Addr: "127.0.0.1:1"}); !errors.Is(err, redisbroken.ErrUnknown) {
		t.Errorf("New(\"Nope\") = %v, want ErrUnknown %s", err, repro(t))
	}
}
