package redisdriver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// TestMain checks that no goroutine outlives the tests, but one: when
// rueidis.NewClient fails to dial (TestConfig's unreachable address) it
// schedules a delayed retry of its own (singleflight DelayDo) on a client it
// never returns, so nothing can stop it; it sleeps ~0.7 s and ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

const runCmd = "scripts/with-redis.sh go test -race ./drivers/redisdriver"

// repro is the suffix of every failure message: the command that reruns t.
func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: scripts/with-redis.sh go test -race ./drivers/redisdriver -run '^%s$')",
		strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// redisAddr is the private server started by scripts/with-redis.sh. Without
// it the tests skip — unless STORESIM_REDIS_REQUIRED=1 (set by that script
// and CI), where a missing server is a failure, never a silent skip.
func redisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty (repro: %s)", runCmd)
		}
		t.Skipf("STORESIM_REDIS_ADDR is not set: these tests need a redis-server; run them with: scripts/with-redis.sh go test ./drivers/redisdriver")
	}
	return addr
}

type wallClock struct{ start time.Time }

func (c wallClock) Now() time.Duration { return time.Since(c.start) }

var prefixSeq atomic.Int64

// rig is one driver under test plus a separate raw client to the real
// server, for setting keys up and inspecting them behind the driver's back.
type rig struct {
	t      testing.TB
	d      *Driver
	raw    rueidis.Client
	prefix string
	clock  wallClock
}

// newRig builds a driver on cfg (Addr defaults to the test server, Prefix to
// a unique one) and shuts it down at cleanup, checking no label is left.
func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	addr := redisAddr(t)
	if cfg.Addr == "" {
		cfg.Addr = addr
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("storesim-test:%d:%d:%s:", os.Getpid(), prefixSeq.Add(1), t.Name())
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v %s", err, repro(t))
	}
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("raw client: %v %s", err, repro(t))
	}
	r := &rig{t: t, d: d, raw: raw, prefix: cfg.Prefix, clock: wallClock{start: time.Now()}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
		// The raw client removes what the test stored (the driver's own
		// Flush is tested on its own, and the driver may be cut off here).
		keys, err := raw.Do(ctx, raw.B().Keys().Pattern(globEscape(cfg.Prefix)+"*").Build()).AsStrSlice()
		if err != nil {
			t.Errorf("cleanup: KEYS: %v %s", err, repro(t))
		}
		for _, k := range keys {
			raw.Do(ctx, raw.B().Del().Key(k).Build())
		}
		raw.Close()
	})
	return r
}

// arena registers an arena region of slots×slotBytes with every slot lent.
func (r *rig) arena(label string, slots, slotBytes int) (*arena.Arena, drivers.Handle) {
	r.t.Helper()
	a := arena.New(label, slots, slotBytes, arena.Options{Clock: r.clock, Log: true})
	h, err := r.d.Register(a.Region())
	if err != nil {
		r.t.Fatalf("register %s: %v %s", label, err, repro(r.t))
	}
	a.SetRegistered(true)
	for s := range slots {
		a.Lend(s, 1)
	}
	return a, h
}

// watcher is a change callback that counts calls and wakes one waiter.
type watcher struct {
	n  atomic.Int64
	ch chan struct{}
}

func newWatcher() *watcher { return &watcher{ch: make(chan struct{}, 1)} }

func (w *watcher) onChange() {
	w.n.Add(1)
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (r *rig) submit(dir drivers.Direction, rows ...drivers.Row) (drivers.Call, *watcher) {
	r.t.Helper()
	w := newWatcher()
	c, err := r.d.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, w.onChange)
	if err != nil {
		r.t.Fatalf("submit %v: %v %s", dir, err, repro(r.t))
	}
	return c, w
}

// settledCall: every row final and access evidenced.
func settledCall(c drivers.Call) bool {
	for _, st := range c.Results() {
		if !st.Final() {
			return false
		}
	}
	return c.Access().Evidenced()
}

// await waits for c to settle, checking the state only after a callback:
// if the last change were not followed by a callback (D-CB-2) it times out.
func await(t testing.TB, c drivers.Call, w *watcher) []drivers.Status {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case <-w.ch:
			if settledCall(c) {
				return c.Results()
			}
		case <-deadline.C:
			t.Fatalf("D-CB-2: call %d not settled 10s after submit, or its last change had no callback: results %v access %v %s",
				c.ID(), c.Results(), c.Access(), repro(t))
		}
	}
}

func rows(h drivers.Handle, keys ...string) []drivers.Row {
	rs := make([]drivers.Row, len(keys))
	for i, k := range keys {
		rs[i] = drivers.Row{Key: k, Handle: h, Slot: i, Position: i}
	}
	return rs
}

func keyset(name string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s/%02d", name, i)
	}
	return ks
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

func touchesBy(a *arena.Arena, id drivers.CallID) []arena.Touch {
	var out []arena.Touch
	for _, tc := range a.Touches() {
		if tc.By.Call == id {
			out = append(out, tc)
		}
	}
	return out
}

func wantStatuses(t testing.TB, what string, got []drivers.Status, want ...drivers.Status) {
	t.Helper()
	if len(want) == 1 && len(got) > 1 {
		for range len(got) - 1 {
			want = append(want, want[0])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: results %v, want %v %s", what, got, want, repro(t))
	}
}

func (r *rig) rawGet(key string) (string, bool) {
	r.t.Helper()
	v, err := r.raw.Do(context.Background(), r.raw.B().Get().Key(r.prefix+key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	if err != nil {
		r.t.Fatalf("raw GET %q: %v %s", key, err, repro(r.t))
	}
	return v, true
}

func (r *rig) rawSet(key string, val []byte) {
	r.t.Helper()
	if err := r.raw.Do(context.Background(), r.raw.B().Set().Key(r.prefix+key).Value(string(val)).Build()).Error(); err != nil {
		r.t.Fatalf("raw SET %q: %v %s", key, err, repro(r.t))
	}
}

// gateMem is drivers.Bytes whose Read and Write wait at a gate, so a test
// can hold a call's goroutine inside a memory touch.
type gateMem struct {
	drivers.Bytes
	entered chan struct{} // receives once per touch that reached the gate
	release chan struct{} // closed to let every touch through
	panics  bool          // Write panics instead (a broken transfer)
}

func newGateMem(n int) *gateMem {
	return &gateMem{Bytes: make(drivers.Bytes, n), entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (g *gateMem) Read(by drivers.Toucher, off int, p []byte) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Bytes.Read(by, off, p)
}

func (g *gateMem) Write(by drivers.Toucher, off int, p []byte) error {
	if g.panics {
		panic("gateMem: a panic in a slot write")
	}
	g.entered <- struct{}{}
	<-g.release
	return g.Bytes.Write(by, off, p)
}

// proxy is a TCP relay between the driver and the server that a test can
// hold (bytes from the client wait at the proxy, as on a stalled network) or
// take down (connections dropped, new ones refused: an outage).
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	heldLog [][]byte // client→server chunks that had to wait at the hold
	down    bool
	record  bool
	chunks  [][]byte // client→server chunks seen while record is on
	closed  bool
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

func startProxy(t testing.TB) *proxy {
	t.Helper()
	target := redisAddr(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v %s", err, repro(t))
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = true, true
		p.wg.Add(2)
		go p.pipe(c, s, true)
		go p.pipe(s, c, false)
		p.mu.Unlock()
	}
}

func (p *proxy) pipe(src, dst net.Conn, holdable bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if holdable {
				p.mu.Lock()
				if p.record {
					p.chunks = append(p.chunks, append([]byte(nil), buf[:n]...))
				}
				if p.held {
					p.heldLog = append(p.heldLog, append([]byte(nil), buf[:n]...))
				}
				for p.held && !p.closed {
					p.cond.Wait()
				}
				p.mu.Unlock()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// awaitHeld waits until a command named cmd is held at the proxy: the
// client has sent it and the server has not seen it.
func (p *proxy) awaitHeld(t testing.TB, cmd string) {
	t.Helper()
	needle := []byte(fmt.Sprintf("$%d\r\n%s\r\n", len(cmd), cmd))
	for range 1000 {
		p.mu.Lock()
		for _, c := range p.heldLog {
			if bytes.Contains(c, needle) {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s reached the held proxy within 5s %s", cmd, repro(t))
}

// recorded returns the client→server chunks seen since recording began.
func (p *proxy) startRecording() {
	p.mu.Lock()
	p.record, p.chunks = true, nil
	p.mu.Unlock()
}

func (p *proxy) recorded() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.chunks...)
}

func (p *proxy) hold(on bool) {
	p.mu.Lock()
	p.held, p.heldLog = on, nil
	p.cond.Broadcast()
	p.mu.Unlock()
}

// setDown drops every connection and refuses new ones (on) or accepts them
// again (off).
func (p *proxy) setDown(on bool) {
	p.mu.Lock()
	p.down = on
	if on {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
