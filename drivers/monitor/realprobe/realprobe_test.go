package realprobe_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/drivers/redisdriver"
	"github.com/storesim/storesim/drivers/rules"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goDriver is a concurrent driver: every call completes on its own
// goroutine and calls back from there, possibly before Submit returns.
type goDriver struct {
	underLock bool // bug: call back while holding mu (D-CB-4)
	blocking  bool // bug: Cancel waits for the transfer (D-CAN-1)
	// slowCancel: Cancel takes this long and then leaves the call to run
	// (best effort): slow, but it waits for nothing of the transfer.
	slowCancel time.Duration
	// eagerCancel: the slow Cancel then marks every row NOT_ATTEMPTED itself
	// (the rows never started) and ends access.
	eagerCancel bool
	work        time.Duration

	mu     sync.Mutex
	wg     sync.WaitGroup
	nextID drivers.CallID
	nextH  drivers.Handle
	live   map[drivers.Handle]drivers.Region
	calls  []*goCall
	closed bool
}

type goCall struct {
	d        *goDriver
	id       drivers.CallID
	res      []drivers.Status
	acc      drivers.Access
	cancel   chan struct{}
	done     chan struct{}
	onChange func()
}

func newGoDriver() *goDriver { return &goDriver{live: map[drivers.Handle]drivers.Region{}} }

func (d *goDriver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}
}

func (d *goDriver) Register(r drivers.Region) (drivers.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextH++
	d.live[d.nextH] = r
	return d.nextH, nil
}

func (d *goDriver) Unregister(h drivers.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.live, h)
	return nil
}

func (d *goDriver) Contains(_ context.Context, keys []string) ([]bool, error) {
	return make([]bool, len(keys)), nil
}

func (d *goDriver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, drivers.ErrClosed
	}
	if err := b.Validate(d.Capabilities(), func(h drivers.Handle) (drivers.Region, bool) { r, ok := d.live[h]; return r, ok }); err != nil {
		return nil, err
	}
	d.nextID++
	c := &goCall{d: d, id: d.nextID, res: make([]drivers.Status, len(b.Rows)),
		cancel: make(chan struct{}), done: make(chan struct{}), onChange: onChange}
	d.calls = append(d.calls, c)
	d.wg.Add(1)
	go c.run()
	return c, nil
}

func (c *goCall) run() {
	defer c.d.wg.Done()
	defer close(c.done)
	outcome := drivers.Miss
	select {
	case <-time.After(c.d.work):
	case <-c.cancel:
		outcome = drivers.NotAttempted
	}
	c.d.mu.Lock()
	if c.acc == drivers.AccessEnded { // an eager cancel ended it
		c.d.mu.Unlock()
		c.onChange()
		return
	}
	for i := range c.res {
		c.res[i] = outcome
	}
	c.acc = drivers.AccessEnded
	if c.d.underLock {
		c.onChange()
		c.d.mu.Unlock()
		return
	}
	c.d.mu.Unlock()
	c.onChange()
}

func (c *goCall) ID() drivers.CallID { return c.id }

func (c *goCall) Results() []drivers.Status {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return slices.Clone(c.res)
}

func (c *goCall) Access() drivers.Access {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.acc
}

func (c *goCall) Cancel() drivers.CancelResult {
	c.d.mu.Lock()
	if c.acc == drivers.AccessEnded {
		c.d.mu.Unlock()
		return drivers.CancelAlreadyDone
	}
	c.d.mu.Unlock()
	if c.d.slowCancel > 0 {
		time.Sleep(c.d.slowCancel)
		if c.d.eagerCancel {
			c.d.mu.Lock()
			for i := range c.res {
				c.res[i] = drivers.NotAttempted
			}
			c.acc = drivers.AccessEnded
			c.d.mu.Unlock()
			close(c.cancel)
		}
		return drivers.CancelRequested
	}
	if c.d.blocking {
		<-c.done
		return drivers.CancelRequested
	}
	select {
	case <-c.cancel:
	default:
		close(c.cancel)
	}
	return drivers.CancelRequested
}

func (d *goDriver) Drain() drivers.DrainStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var pending []drivers.CallID
	for _, c := range d.calls {
		select {
		case <-c.done:
		default:
			pending = append(pending, c.id)
		}
	}
	return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
}

func (d *goDriver) Shutdown(context.Context) []string {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait() // every callback has returned (D-CB-5)
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.live)
	return nil
}

func monitored(d *goDriver, bound time.Duration) *monitor.Monitor {
	return monitor.Wrap(d, monitor.Options{Seed: 1,
		LockProbe: realprobe.LockProbeRecheck(bound, 4*bound), CancelBound: realprobe.Stopwatch(bound)})
}

func hasRule(vs []rules.Violation, rule rules.ID) bool {
	return slices.ContainsFunc(vs, func(v rules.Violation) bool { return v.Rule == rule })
}

// TestConcurrentConforming: many goroutines submit, cancel, read and drain
// through one monitor around a driver that calls back from its own
// goroutines; the monitor is race-free (go test -race) and flags nothing.
func TestConcurrentConforming(t *testing.T) {
	const repro = "(repro: go test -race ./drivers/monitor/realprobe -run TestConcurrentConforming)"
	d := newGoDriver()
	d.work = 200 * time.Microsecond
	m := monitored(d, time.Second)
	md := m.Driver()
	h, err := md.Register(drivers.Region{Label: "r", Slots: 64, SlotBytes: 8, Mem: make(drivers.Bytes, 512)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				b := drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{
					{Key: fmt.Sprintf("k/%d/%d/a", g, i), Handle: h, Slot: 2 * g},
					{Key: fmt.Sprintf("k/%d/%d/b", g, i), Handle: h, Slot: 2*g + 1, Position: 1},
				}}
				c, err := md.Submit(b, func() {})
				if err != nil {
					t.Errorf("submit: %v %s", err, repro)
					return
				}
				if i%3 == 0 {
					c.Cancel()
				}
				c.Results()
				c.Access()
			}
		}()
	}
	wg.Wait()
	for !md.Drain().Done {
		time.Sleep(time.Millisecond)
	}
	if labels := md.Shutdown(context.Background()); len(labels) > 0 {
		t.Fatalf("labels %v %s", labels, repro)
	}
	if vs := m.Finish(); len(vs) > 0 {
		t.Fatalf("conforming concurrent driver flagged: %v %s", vs, repro)
	}
}

// TestProbesCatch: the wall-clock probes catch the two rules the
// simulator cannot time.
func TestProbesCatch(t *testing.T) {
	cases := []struct {
		name string
		rule rules.ID
		bug  func(*goDriver)
	}{
		{"SignalUnderLock", rules.DCB4, func(d *goDriver) { d.underLock = true }},
		{"BlockingCancel", rules.DCan1, func(d *goDriver) { d.blocking = true; d.work = 100 * time.Millisecond }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newGoDriver()
			d.work = time.Millisecond
			tc.bug(d)
			if vs := cancelOne(t, d, 20*time.Millisecond); !hasRule(vs, tc.rule) {
				t.Fatalf("want %s, got %v (repro: go test ./drivers/monitor/realprobe -run 'TestProbesCatch/%s')", tc.rule, vs, tc.name)
			}
		})
	}
}

// cancelOne submits one fetch through the probes (bound), cancels it,
// shuts the driver down and returns what the monitor found.
func cancelOne(t *testing.T, d *goDriver, bound time.Duration) []rules.Violation {
	t.Helper()
	m := monitored(d, bound)
	md := m.Driver()
	h, _ := md.Register(drivers.Region{Label: "r", Slots: 1, SlotBytes: 8, Mem: make(drivers.Bytes, 8)})
	c, err := md.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "k", Handle: h}}}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	c.Cancel()
	md.Shutdown(context.Background())
	return m.Finish()
}

// TestSlowCancelNotBlocking: a cancel that overruns the stopwatch but
// returns with the transfer still running did not wait for it — on a loaded
// machine any cancel can overrun — so it is not D-CAN-1.
func TestSlowCancelNotBlocking(t *testing.T) {
	d := newGoDriver()
	d.work = 2 * time.Second // far longer than the cancel: the transfer cannot end inside it
	d.slowCancel = 40 * time.Millisecond
	if vs := cancelOne(t, d, 10*time.Millisecond); hasRule(vs, rules.DCan1) {
		t.Fatalf("a slow cancel that left the transfer running was called blocking: %v (repro: go test ./drivers/monitor/realprobe -run TestSlowCancelNotBlocking)", vs)
	}
}

// TestSlowEagerCancelNotBlocking: a cancel that overruns the stopwatch and
// marks the rows NOT_ATTEMPTED itself (they never started) finished no
// transfer: not D-CAN-1.
func TestSlowEagerCancelNotBlocking(t *testing.T) {
	d := newGoDriver()
	d.work = 2 * time.Second
	d.slowCancel, d.eagerCancel = 40*time.Millisecond, true
	if vs := cancelOne(t, d, 10*time.Millisecond); hasRule(vs, rules.DCan1) {
		t.Fatalf("a slow cancel that answered its unstarted rows NOT_ATTEMPTED was called blocking: %v (repro: go test ./drivers/monitor/realprobe -run TestSlowEagerCancelNotBlocking)", vs)
	}
}

// TestStopwatchExcusesStalls: the whole process stopped (SIGSTOP, as a
// loaded machine deschedules it) while the op ran is not the op blocking;
// the op parked for as long, with the process running, is.
func TestStopwatchExcusesStalls(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor/realprobe -run TestStopwatchExcusesStalls)"
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	watch := realprobe.Stopwatch(100 * time.Millisecond)
	run := func(script string) func() {
		return func() {
			if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
				t.Errorf("sh -c %q: %v %s %s", script, err, out, repro)
			}
		}
	}
	// The child stops its parent (this test) for 400 ms, then resumes it.
	if !watch(run("kill -STOP $PPID; sleep 0.4; kill -CONT $PPID")) {
		t.Fatalf("a 400 ms stop of the whole process was called blocking %s", repro)
	}
	if watch(run("sleep 0.4")) {
		t.Fatalf("an op that waited 400 ms with the process running was not called blocking %s", repro)
	}
}

func TestProbes(t *testing.T) {
	const repro = "(repro: go test ./drivers/monitor/realprobe -run TestProbes)"
	var mu sync.Mutex
	// A long re-check for the reads that return (so load cannot flip them),
	// a short one for the read that never does.
	probe := realprobe.LockProbeRecheck(10*time.Millisecond, 10*time.Second)
	short := realprobe.LockProbeRecheck(10*time.Millisecond, 30*time.Millisecond)
	if r := probe(func() { mu.Lock(); mu.Unlock() }); r.Verdict != monitor.ReadReturned {
		t.Fatalf("a free lock was reported %v (%s) %s", r.Verdict, r.Observed, repro)
	}
	mu.Lock()
	if r := short(func() { mu.Lock(); mu.Unlock() }); r.Verdict != monitor.ReadBlocked || !strings.Contains(r.Observed, "re-check") {
		t.Fatalf("a held lock was reported %v (%s), want blocked after the re-check %s", r.Verdict, r.Observed, repro)
	}
	mu.Unlock() // the abandoned read finishes now; goleak checks it ends
	// A read that misses the bound but returns during the re-check is late,
	// not blocked (a loaded machine), and says so.
	if r := probe(func() { time.Sleep(20 * time.Millisecond) }); r.Verdict != monitor.ReadReturned || !strings.Contains(r.Observed, "late") {
		t.Fatalf("a late read was reported %v (%s), want returned and late %s", r.Verdict, r.Observed, repro)
	}
	watch := realprobe.Stopwatch(10 * time.Millisecond)
	if !watch(func() {}) || watch(func() { time.Sleep(30 * time.Millisecond) }) {
		t.Fatalf("stopwatch misjudged %s", repro)
	}
}

// TestRedisConforms: the monitor with both wall-clock probes around the
// Redis driver under concurrent publishes, fetches, cancels and lookups
// flags nothing. It needs a server: scripts/with-redis.sh sets
// STORESIM_REDIS_ADDR; without it the test skips (fails when
// STORESIM_REDIS_REQUIRED=1).
func TestRedisConforms(t *testing.T) {
	const repro = "(repro: scripts/with-redis.sh go test ./drivers/monitor/realprobe -run TestRedisConforms)"
	addr := os.Getenv("STORESIM_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("STORESIM_REDIS_REQUIRED") == "1" {
			t.Fatalf("STORESIM_REDIS_REQUIRED=1 but STORESIM_REDIS_ADDR is empty %s", repro)
		}
		t.Skipf("STORESIM_REDIS_ADDR is not set %s", repro)
	}
	rd, err := redisdriver.New(redisdriver.Config{Addr: addr, Prefix: fmt.Sprintf("monitor-test/%d/", time.Now().UnixNano())})
	if err != nil {
		t.Fatalf("redisdriver.New: %v %s", err, repro)
	}
	m := monitor.Wrap(rd, monitor.Options{Seed: 1,
		LockProbe: realprobe.LockProbe(realprobe.DefaultBound), CancelBound: realprobe.Stopwatch(realprobe.DefaultBound)})
	md := m.Driver()
	const slots, slotBytes = 64, 32
	mem := make(drivers.Bytes, slots*slotBytes)
	h, err := md.Register(drivers.Region{Label: "r", Slots: slots, SlotBytes: slotBytes, Mem: mem})
	if err != nil {
		t.Fatalf("register: %v %s", err, repro)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				dir := drivers.Direction(1 + i%2)
				b := drivers.RowBatch{Dir: dir}
				for r := range 3 {
					b.Rows = append(b.Rows, drivers.Row{Key: fmt.Sprintf("k/%d/%d", g, (i/2+r)%7), Handle: h, Slot: 12*g + 3*(i%4) + r, Position: r})
				}
				done := make(chan struct{}, 64)
				c, err := md.Submit(b, func() { done <- struct{}{} })
				if err != nil {
					t.Errorf("submit: %v %s", err, repro)
					return
				}
				if i%5 == 0 {
					c.Cancel()
				}
				for c.Access() == drivers.AccessPending {
					<-done
				}
				c.Results()
				if _, err := md.Contains(context.Background(), []string{b.Rows[0].Key, b.Rows[1].Key}); err != nil {
					t.Errorf("contains: %v %s", err, repro)
				}
			}
		}()
	}
	wg.Wait()
	for !md.Drain().Done {
		time.Sleep(time.Millisecond)
	}
	if labels := md.Shutdown(context.Background()); len(labels) > 0 {
		t.Fatalf("labels %v %s", labels, repro)
	}
	if vs := m.Finish(); len(vs) > 0 {
		t.Fatalf("the Redis driver was flagged: %v %s", vs, repro)
	}
}
