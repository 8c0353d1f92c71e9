package memcachedriver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storesim/storesim/broken/memcachedbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memcachedriver"
)

// certifyRepro is the repro suffix of the certification tests.
func certifyRepro(t *testing.T) string {
	return fmt.Sprintf("(repro: scripts/with-memcached.sh go test ./drivers/memcachedriver -run '^%s$' -v)", t.Name())
}

// certAddr is a private server of scripts/with-memcached.sh, named by the
// environment variable env; without it the test skips, unless
// STORESIM_MEMCACHED_REQUIRED=1.
func certAddr(t *testing.T, env string) string {
	addr := os.Getenv(env)
	if addr == "" {
		if os.Getenv("STORESIM_MEMCACHED_REQUIRED") == "1" {
			t.Fatalf("STORESIM_MEMCACHED_REQUIRED=1 but %s is empty %s", env, certifyRepro(t))
		}
		t.Skipf("%s is not set %s", env, certifyRepro(t))
	}
	return addr
}

// certRig is what a certification of a memcached driver needs: a fresh key
// prefix, an admin driver on it (MakeAbsent deletes through it; cleanup
// flushes the prefix) and a count of the keys made absent.
type certRig struct {
	addr, prefix string
	admin        *memcachedriver.Driver
	made         atomic.Int64
}

func newCertRig(t *testing.T, env, tag string) *certRig {
	t.Helper()
	addr := certAddr(t, env)
	r := &certRig{addr: addr, prefix: fmt.Sprintf("storesim-certify-%d-%s/", os.Getpid(), tag)}
	var err error
	if r.admin, err = memcachedriver.New(memcachedriver.Config{Addr: addr, Prefix: r.prefix}); err != nil {
		t.Fatalf("admin driver: %v %s", err, certifyRepro(t))
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.admin.Flush(c)
		r.admin.Shutdown(c)
	})
	return r
}

// harness certifies the driver newDriver builds on the rig's prefix.
func (r *certRig) harness(name string, evicting bool, newDriver func(memcachedriver.Config) (drivers.Driver, error)) drivertest.Harness {
	return drivertest.Harness{
		Name: name, RealTime: true, ExternalStore: true, Evicting: evicting,
		New: func(env drivertest.Env) (drivers.Driver, error) {
			return newDriver(memcachedriver.Config{Addr: r.addr, Prefix: r.prefix, Caps: env.Caps})
		},
		MakeAbsent: func(key string) error {
			r.made.Add(1)
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return r.admin.Delete(c, key)
		},
	}
}

func realDriver(cfg memcachedriver.Config) (drivers.Driver, error) { return memcachedriver.New(cfg) }

func certOptions() drivertest.Options {
	if os.Getenv("STORESIM_DRIVERTEST_FULL") == "1" {
		return drivertest.Options{} // the CLI's default: 12 seeds per case in real time
	}
	return drivertest.Options{Short: true}
}

func tally(rep drivertest.Report) (passed, skipped int) {
	for _, rr := range rep.Rules {
		switch rr.Verdict {
		case drivertest.Pass:
			passed++
		case drivertest.Skip:
			skipped++
		}
	}
	return passed, skipped
}

// TestCertify certifies the memcached driver in real time against the real
// server, on the durable store model: nothing else fills the server while
// it runs, so nothing is evicted (TestCertifyEvicting runs the evicting
// model while the server evicts). STORESIM_DRIVERTEST_FULL=1 runs the
// CLI's default scale instead of -short's.
func TestCertify(t *testing.T) {
	r := newCertRig(t, "STORESIM_MEMCACHED_ADDR", "durable")
	start := time.Now()
	rep := drivertest.Certify(r.harness("memcached", false, realDriver), certOptions())
	passed, skipped := tally(rep)
	t.Logf("\n%s", rep.Table())
	t.Logf("certified=%v in %v: %d rule groups passed, %d skipped, %d failed; %d keys made absent",
		rep.Certified, time.Since(start).Round(time.Millisecond), passed, skipped, len(rep.Failed()), r.made.Load())
	if !rep.Certified || r.made.Load() == 0 {
		t.Fatalf("memcached in real time: not certified: failed %v, gaps %v, %d keys made absent:\n%s%s",
			rep.Failed(), rep.Gaps, r.made.Load(), rep.Table(), certifyRepro(t))
	}
}

// TestBrokenCertify shows that certification fails each broken memcached
// driver (package broken/memcachedbroken) on its rule, in real time.
func TestBrokenCertify(t *testing.T) {
	for _, bug := range memcachedbroken.Names() {
		t.Run(string(bug), func(t *testing.T) {
			r := newCertRig(t, "STORESIM_MEMCACHED_ADDR", string(bug))
			rule := bug.Rule()
			rep := drivertest.Certify(r.harness("memcached:"+string(bug), false, func(cfg memcachedriver.Config) (drivers.Driver, error) {
				return memcachedbroken.New(bug, cfg)
			}), drivertest.Options{Short: true, Rules: []string{rule}})
			rr, _ := rep.Rule(rule)
			t.Logf("%s: %s %s, %d violation(s); first: %s", bug, rule, rr.Verdict, rr.Found, strings.Join(rr.Violations[:min(1, len(rr.Violations))], ""))
			if !slices.Contains(rep.Failed(), rule) {
				t.Fatalf("broken memcached driver %s: want %s failed, got failed %v:\n%s%s", bug, rule, rep.Failed(), rep.Table(), certifyRepro(t))
			}
		})
	}
}

// TestCertifyEvicting runs the certification in real time against a real
// server under the evicting store model while the server really evicts.
// The server runs with -m 8 (scripts/with-memcached.sh); the test pins the
// certification's slab class to one page (the slab mover off, the rest of
// the memory taken by large items) and, after every 4th PUBLISH, writes
// twice that class's capacity of items of its size before the suite hears
// of the PUBLISH (see observed), so the objects just stored are evicted by
// the server's LRU before the suite fetches them. It asserts that no rule
// failed — the evicting model accepted every history —, that the server's
// evictions counter grew, in total and in the certification's slab class,
// and that FETCHes of the certification met evicted keys (MISS for a key a
// PUBLISH had stored).
// And it asserts the certificate: a key a PUBLISH stored counts as in
// place under Harness.Evicting too (an eviction later is what the
// evicting model allows for), so the cases that need objects in place run
// and no race pair is left a gap.
func TestCertifyEvicting(t *testing.T) {
	// A prefix long enough to put the certification's objects (32-byte
	// slots under keys like storesim-drivertest/<seed>/k<N>) in a slab class
	// of their own.
	// It runs on the second server of scripts/with-memcached.sh: the one
	// no other test uses, since filling it would starve their writes.
	r := newCertRig(t, "STORESIM_MEMCACHED_EVICT_ADDR", "evicting"+strings.Repeat("-", 80))
	// While the test runs, pages stay with the class that has them: the
	// certification's class keeps the one page it gets below, so a burst of
	// a few thousand items turns it over.
	rawLines(t, r.addr, "slabs automove 0", "OK")
	t.Cleanup(func() { rawLines(t, r.addr, "slabs automove 1", "OK") })
	// Store one such object the driver's way and ask the server which slab
	// class holds it.
	probe := "storesim-drivertest/0000000000000000/k10"
	cls := probeClass(t, r.admin, r.addr, probe, 32)
	// Then take the rest of the memory with a class of large items: the
	// certification's class gets no page more.
	limit, _ := strconv.Atoi(stat(t, r.admin, "limit_maxbytes"))
	if err := newBurster(t, r.addr, "hog", 40, 900).burst(2 * limit / 900); err != nil {
		t.Fatalf("hog: %v %s", err, certifyRepro(t))
	}
	pages, _ := strconv.Atoi(slabStat(t, r.addr, cls, "total_pages"))
	perPage, _ := strconv.Atoi(slabStat(t, r.addr, cls, "chunks_per_page"))
	capacity := max(1, pages) * perPage
	before := evictions(t, r.admin, r.addr, cls)

	b := newBurster(t, r.addr, "cert", len(r.prefix+probe), 32)
	obs := &observed{pubDone: map[string]time.Time{}, burst: func() error { return b.burst(2 * capacity) }}
	start := time.Now()
	rep := drivertest.Certify(r.harness("memcached", true, obs.driver), certOptions())
	took := time.Since(start)
	after := evictions(t, r.admin, r.addr, cls)
	seen, chances := obs.evictedBeforeFetch()
	obs.mu.Lock()
	bursts, berr := obs.bursts, obs.err
	obs.mu.Unlock()
	if berr != nil {
		t.Fatalf("eviction burst: %v %s", berr, certifyRepro(t))
	}

	passed, skipped := tally(rep)
	t.Logf("\n%s", rep.Table())
	t.Logf("evicting model: certified=%v in %v: %d rule groups passed, %d skipped, %d failed, gaps %v; %d keys made absent; "+
		"%d eviction bursts (%d items) into slab class %d (%d page(s), %d items); evictions %d → %d (class %d: %d → %d); "+
		"of %d FETCH rows of a key published OK before, %d answered MISS (evicted)",
		rep.Certified, took.Round(time.Millisecond), passed, skipped, len(rep.Failed()), rep.Gaps, r.made.Load(),
		bursts, b.count(), cls, pages, capacity, before.total, after.total, cls, before.class, after.class, chances, seen)
	switch {
	case len(rep.Failed()) > 0 || passed == 0 || !rep.Certified:
		t.Fatalf("memcached under the evicting model: not certified: failed %v, gaps %v (%d passed):\n%s%s", rep.Failed(), rep.Gaps, passed, rep.Table(), certifyRepro(t))
	case r.made.Load() == 0:
		t.Fatalf("the certification never made a key absent: MakeAbsent unused %s", certifyRepro(t))
	case after.total <= before.total:
		t.Fatalf("the server evicted nothing during the certification (evictions %d → %d, %d bursts): is it running with a small -m? %s",
			before.total, after.total, bursts, certifyRepro(t))
	case after.class <= before.class:
		t.Fatalf("nothing was evicted from slab class %d, the certification's objects' (%d → %d) %s", cls, before.class, after.class, certifyRepro(t))
	case seen == 0:
		t.Fatalf("no FETCH of the certification met an evicted key (%d chances, %d bursts): the evicting model was never put to the test %s", chances, bursts, certifyRepro(t))
	}
}

// observed wraps every driver of the evicting certification. It sees,
// after the fact, which FETCH rows met an eviction: a MISS for a key that a
// PUBLISH had stored (OK) before the FETCH was submitted — the suite makes
// every key absent once, before its first use, so only the server can have
// dropped it. And it makes such evictions happen: after every 4th PUBLISH
// call with an OK row it writes a burst of evict.items items of the
// certification's slab class (burst) before the suite's callback hears of
// it, so the objects just stored are the least recently used and are
// evicted, for real, by the server. Submit passes through to the real
// driver (its probes, Live and Locked, are the embedded driver's); only the
// callback is delayed, which the contract allows.
type observed struct {
	burst func() error // evicts the certification's slab class

	mu      sync.Mutex
	pubDone map[string]time.Time // key → when a PUBLISH of it was seen OK
	fetches []fetchRec
	pubs    int   // PUBLISH calls seen settled with an OK row
	bursts  int   // eviction bursts written
	err     error // the first burst that failed
}

type fetchRec struct {
	c    drivers.Call
	keys []string
	at   time.Time
}

func (o *observed) driver(cfg memcachedriver.Config) (drivers.Driver, error) {
	d, err := memcachedriver.New(cfg)
	if err != nil {
		return nil, err
	}
	return &observer{Driver: d, o: o}, nil
}

type observer struct {
	*memcachedriver.Driver
	o *observed
}

func (w *observer) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	keys := make([]string, len(b.Rows))
	for i, r := range b.Rows {
		keys[i] = r.Key
	}
	at := time.Now()
	var mu sync.Mutex
	var c drivers.Call
	counted := false
	// published stamps the OK rows of a settled PUBLISH and says whether
	// this one should be evicted now.
	published := func() bool {
		mu.Lock()
		cc := c
		mu.Unlock()
		if cc == nil || b.Dir != drivers.Publish {
			return false
		}
		res := cc.Results()
		now := time.Now()
		w.o.mu.Lock()
		defer w.o.mu.Unlock()
		ok := false
		for i, st := range res {
			if st == drivers.OK {
				ok = true
				if _, seen := w.o.pubDone[keys[i]]; !seen {
					w.o.pubDone[keys[i]] = now
				}
			}
		}
		if !ok || counted || slices.Contains(res, drivers.Pending) {
			return false
		}
		counted = true
		w.o.pubs++
		return w.o.pubs%4 == 0
	}
	if onChange == nil {
		onChange = func() {}
	}
	in, err := w.Driver.Submit(b, func() {
		if published() {
			err := w.o.burst()
			w.o.mu.Lock()
			w.o.bursts++
			if err != nil && w.o.err == nil {
				w.o.err = err
			}
			w.o.mu.Unlock()
		}
		onChange()
	})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	c = in
	mu.Unlock()
	published() // already settled before Submit returned: stamped, not evicted
	if b.Dir == drivers.Fetch {
		w.o.mu.Lock()
		w.o.fetches = append(w.o.fetches, fetchRec{c: in, keys: keys, at: at})
		w.o.mu.Unlock()
	}
	return in, nil
}

// evictedBeforeFetch counts the FETCH rows of a key a PUBLISH had stored
// before the FETCH was submitted (chances), and those of them that answered
// MISS (evicted).
func (o *observed) evictedBeforeFetch() (evicted, chances int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.fetches {
		for i, st := range f.c.Results() {
			if done, ok := o.pubDone[f.keys[i]]; ok && done.Before(f.at) {
				chances++
				if st == drivers.Miss {
					evicted++
				}
			}
		}
	}
	return evicted, chances
}

// burster writes bursts of items (keys of keyLen bytes, values of valLen
// bytes) with `set … noreply` on one connection, each burst ended by a
// `version` round trip, one burst at a time.
type burster struct {
	mu             sync.Mutex
	nc             net.Conn
	w              *bufio.Writer
	r              *bufio.Reader
	tag            string
	keyLen, valLen int
	next, written  int
}

func newBurster(t *testing.T, addr, tag string, keyLen, valLen int) *burster {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("burster: %v %s", err, certifyRepro(t))
	}
	t.Cleanup(func() { nc.Close() })
	return &burster{nc: nc, w: bufio.NewWriterSize(nc, 256<<10), r: bufio.NewReader(nc), tag: tag, keyLen: keyLen, valLen: valLen}
}

func (b *burster) burst(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	val := strings.Repeat("f", b.valLen)
	for range n {
		k := fmt.Sprintf("storesim-fill/%s/%d/", b.tag, b.next)
		if len(k) < b.keyLen {
			k += strings.Repeat("x", b.keyLen-len(k))
		}
		fmt.Fprintf(b.w, "set %s 0 0 %d noreply\r\n%s\r\n", k, b.valLen, val)
		b.next++
	}
	fmt.Fprintf(b.w, "version\r\n")
	b.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := b.w.Flush(); err != nil {
		return err
	}
	if l, err := b.r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "VERSION") {
		return fmt.Errorf("burst answered %q, %v", l, err)
	}
	b.written += n
	return nil
}

func (b *burster) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.written
}

// stat is one field of the server's `stats`.
func stat(t *testing.T, admin *memcachedriver.Driver, name string) string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := admin.Stats(c)
	if err != nil || st[name] == "" {
		t.Fatalf("stats %s: %q, %v %s", name, st[name], err, certifyRepro(t))
	}
	return st[name]
}

// slabStat is field name of slab class cls (`stats slabs`: <cls>:<name>).
func slabStat(t *testing.T, addr string, cls int, name string) string {
	t.Helper()
	for _, l := range rawLines(t, addr, "stats slabs") {
		if f := strings.Fields(l); len(f) == 3 && f[1] == fmt.Sprintf("%d:%s", cls, name) {
			return f[2]
		}
	}
	t.Fatalf("stats slabs has no %d:%s %s", cls, name, certifyRepro(t))
	return ""
}

type evictionCount struct{ total, class uint64 }

// evictions reads the server's evictions counter and slab class cls's
// (`stats items`: items:<cls>:evicted).
func evictions(t *testing.T, admin *memcachedriver.Driver, addr string, cls int) evictionCount {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	total, err := admin.Evictions(c)
	if err != nil {
		t.Fatalf("stats: %v %s", err, certifyRepro(t))
	}
	var n uint64
	for _, l := range rawLines(t, addr, "stats items") {
		f := strings.Fields(l)
		if len(f) == 3 && f[1] == fmt.Sprintf("items:%d:evicted", cls) {
			if n, err = strconv.ParseUint(f[2], 10, 64); err != nil {
				t.Fatalf("stats items line %q: %v %s", l, err, certifyRepro(t))
			}
		}
	}
	return evictionCount{total: total, class: n}
}

// probeClass publishes one object of size bytes under key through d (as a
// certification case would) and returns the slab class the server put it
// in (`lru_crawler metadump`'s cls).
func probeClass(t *testing.T, d *memcachedriver.Driver, addr, key string, size int) int {
	t.Helper()
	mem := make(drivers.Bytes, size)
	h, err := d.Register(drivers.Region{Label: "probe", SlotBytes: size, Slots: 1, Mem: mem})
	if err != nil {
		t.Fatalf("probe register: %v %s", err, certifyRepro(t))
	}
	defer d.Unregister(h)
	done := make(chan struct{}, 1)
	c, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h}}}, func() {
		select {
		case done <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("probe publish: %v %s", err, certifyRepro(t))
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for c.Access() != drivers.AccessEnded || c.Results()[0] == drivers.Pending {
		select {
		case <-done:
		case <-timeout.C:
			t.Fatalf("probe publish did not settle: %v %v %s", c.Results(), c.Access(), certifyRepro(t))
		}
	}
	if st := c.Results()[0]; st != drivers.OK {
		t.Fatalf("probe publish: %v %s", st, certifyRepro(t))
	}
	item := d.ItemKey(key)
	for range 50 {
		for _, l := range rawLines(t, addr, "lru_crawler metadump all") {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			if k, _ := url.PathUnescape(strings.TrimPrefix(f[0], "key=")); k != item {
				continue
			}
			for _, kv := range f {
				if v, ok := strings.CutPrefix(kv, "cls="); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("metadump line %q: %v %s", l, err, certifyRepro(t))
					}
					return n
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("metadump never listed the probe %q %s", item, certifyRepro(t))
	return 0
}

// rawLines sends one administrative command on a connection of its own
// and returns the answer's lines up to the terminating line (END unless
// end says otherwise; "BUSY" is retried, bounded).
func rawLines(t *testing.T, addr, cmd string, end ...string) []string {
	term := "END"
	if len(end) > 0 {
		term = end[0]
	}
	t.Helper()
	for range 50 {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v %s", cmd, err, certifyRepro(t))
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(nc, "%s\r\n", cmd)
		r := bufio.NewReader(nc)
		var lines []string
		busy := false
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				nc.Close()
				t.Fatalf("%s: %v %s", cmd, err, certifyRepro(t))
			}
			l = strings.TrimRight(l, "\r\n")
			if l == term {
				break
			}
			if strings.HasPrefix(l, "BUSY") {
				busy = true
				break
			}
			if l == "ERROR" || strings.HasPrefix(l, "CLIENT_ERROR") || strings.HasPrefix(l, "SERVER_ERROR") {
				nc.Close()
				t.Fatalf("%s: server answered %q %s", cmd, l, certifyRepro(t))
			}
			lines = append(lines, l)
		}
		nc.Close()
		if !busy {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: the server stayed BUSY %s", cmd, certifyRepro(t))
	return nil
}
