package procdriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Config configures a driver process. Only keyed literals compile.
type Config struct {
	// Command is the driver process's argv (Command[0] is looked up in
	// PATH). Required. ParseCommand splits a command line into it.
	Command []string
	// Dir is the process's working directory ("" : this process's).
	Dir string
	// Env is added to this process's environment for the child.
	Env []string
	// Prefix is handed to the process in hello: a driver over a store of
	// its own namespaces its keys with it (a private in-memory store may
	// ignore it).
	Prefix string
	// Scratch, when set, is handed to the process in hello: a directory
	// shared by every process of one run (storesim run starts one per
	// endpoint, and its model is one store for all of them), where a
	// driver whose store is private to its process keeps it instead.
	Scratch string
	// Caps, when not zero, is handed to the process in hello as the
	// capabilities asked for; the process declares its own, which are what
	// the driver then declares.
	Caps drivers.Capabilities
	// ReplyTimeout bounds the wait for every answer (0: 2 s), and for the
	// process to read what is written to it. Running out is a Hung
	// incident.
	ReplyTimeout time.Duration
	// StartTimeout bounds the wait for the answer to hello (0: 10 s).
	StartTimeout time.Duration
	// ExitTimeout bounds the wait for the process to exit once its stdin
	// closed after shutdown (0: 2 s); running out is a Hung incident.
	ExitTimeout time.Duration
	// MaxLine is the longest line the process may write (0: 1 MiB).
	MaxLine int
	// MaxNotes is the most change notifications one call may get (0: 64 +
	// 16 per row); one more is a Flood incident.
	MaxNotes int
	// MaxRegionBytes is the largest region slot area the driver maps (0:
	// 1 GiB); a larger region is refused without asking the process.
	MaxRegionBytes int
	// MemDir is where the shared mappings' files live (0: /dev/shm when it
	// is writable, else the temporary directory). Each driver makes a
	// private directory there and removes it at Shutdown.
	MemDir string
	// OnIncident, when set, is told once of the incident that ended the
	// process (see Incident). It runs on the goroutine that found it and
	// must return promptly.
	OnIncident func(Incident)
	// Stderr, when set, gets a copy of everything the process writes on its
	// stderr (the last 8 KiB are always kept for incident reports).
	Stderr func([]byte)
	// Name names the driver in messages (default: the command line).
	Name string
	_    struct{}
}

// ErrConfig is wrapped by every refusal of a Config.
var ErrConfig = errors.New("procdriver: bad config")

// ErrGone is wrapped by what an operation answers once the process is
// gone after an incident.
var ErrGone = errors.New("procdriver: the driver process is gone")

// Process is a driver process as a drivers.Driver, with its extras. New
// returns a *Driver, or a *TogetherDriver when the process offers
// together-registration.
type Process interface {
	drivers.Driver
	// Live reports whether h is live in the process's own table (op live,
	// when offered; else what the process answered so far): the contract
	// monitor's LiveReporter.
	Live(h drivers.Handle) bool
	// Delete makes key absent in the process's store (op delete), for the
	// conformance suite's MakeAbsent.
	Delete(ctx context.Context, key string) error
	// Flush drops what the process stored under its prefix (op flush).
	Flush(ctx context.Context) error
	PID() int
	Name() string
	// Incident is the incident that ended the process, or nil.
	Incident() *Incident
	// Findings is what the memory audits found (see the package doc).
	Findings() []rules.Violation
}

// Driver is a driver process. All methods are safe from any goroutine.
type Driver struct {
	cfg      Config
	name     string
	caps     drivers.Capabilities
	together bool
	ops      map[string]bool
	driver   string // what the process calls itself
	p        *proc
	dir      string // private directory of the shared files
	aud      *auditor
	started  bool // hello answered: incidents are reported from now on

	shutMu   sync.Mutex
	shutDone bool
	labels   []string

	mu        sync.Mutex
	nextReq   uint64
	pending   map[uint64]*waiter
	calls     map[drivers.CallID]*call
	nextCall  drivers.CallID
	windows   map[drivers.Handle]*window // live, by handle
	allWins   []*window                  // every window still mapped
	winSeq    int
	dead      bool // an incident ended the process
	expectEOF bool // shutdown answered: the process may exit
	shut      bool // Shutdown is over
	incident  *Incident
	stderr    tail

	// the writer's queue
	wq     [][]byte
	wcond  *sync.Cond
	wclose bool
	// the callback dispatcher's queue
	dq      []*call
	dcond   *sync.Cond
	dclosed bool

	deadCh                             chan struct{}
	readerDone, writerDone, dispatchDn chan struct{}
}

// TogetherDriver is a driver process that offers together-registration
// (hello answered "together": true).
type TogetherDriver struct{ *Driver }

var (
	_ drivers.Driver             = (*Driver)(nil)
	_ drivers.TogetherRegisterer = (*TogetherDriver)(nil)
	_ Process                    = (*Driver)(nil)
	_ Process                    = (*TogetherDriver)(nil)
)

type waiter struct {
	ch        chan *inbound
	what      string
	abandoned bool
}

func (c Config) withDefaults() Config {
	if c.ReplyTimeout <= 0 {
		c.ReplyTimeout = 2 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ExitTimeout <= 0 {
		c.ExitTimeout = 2 * time.Second
	}
	if c.MaxLine <= 0 {
		c.MaxLine = 1 << 20
	}
	if c.MaxRegionBytes <= 0 {
		c.MaxRegionBytes = 1 << 30
	}
	if c.MemDir == "" {
		c.MemDir = os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			if f, err := os.CreateTemp("/dev/shm", "storesim-probe-"); err == nil {
				f.Close()
				os.Remove(f.Name())
				c.MemDir = "/dev/shm"
			}
		}
	}
	if c.Name == "" {
		c.Name = strings.Join(c.Command, " ")
	}
	return c
}

// New starts the driver process, says hello (the protocol version, the
// prefix, the capabilities asked for) and returns the driver it declares.
// A process that cannot start, exits, hangs or answers anything but a
// valid hello is killed, and New returns the error (with the end of its
// stderr).
func New(cfg Config) (Process, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("%w: no command", ErrConfig)
	}
	cfg = cfg.withDefaults()
	dir, err := os.MkdirTemp(cfg.MemDir, "storesim-procdriver-")
	if err != nil {
		return nil, fmt.Errorf("procdriver: shared memory directory: %w", err)
	}
	d := &Driver{
		cfg: cfg, name: cfg.Name, dir: dir, aud: newAuditor(),
		pending: map[uint64]*waiter{}, calls: map[drivers.CallID]*call{}, windows: map[drivers.Handle]*window{},
		deadCh: make(chan struct{}), readerDone: make(chan struct{}), writerDone: make(chan struct{}), dispatchDn: make(chan struct{}),
		stderr: tail{max: 8 << 10},
	}
	d.wcond = sync.NewCond(&d.mu)
	d.dcond = sync.NewCond(&d.mu)
	p, err := startProc(cfg, d.onStderr)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.p = p
	go d.writer()
	go d.reader()
	go d.dispatcher()

	req := request{Op: "hello", Protocol: Protocol, Prefix: &cfg.Prefix, Scratch: cfg.Scratch}
	if cfg.Caps != (drivers.Capabilities{}) {
		req.Caps = capsToWire(cfg.Caps)
	}
	rep, err := d.call(req, cfg.StartTimeout, nil)
	var bad string
	switch {
	case err != nil:
	case !*rep.OK:
		bad = "hello answered an error: " + toError("hello", rep.Error).Error()
	case rep.Protocol != Protocol:
		bad = fmt.Sprintf("speaks protocol %d, this storesim speaks %d (docs/PROTOCOL.md)", rep.Protocol, Protocol)
	case rep.Caps == nil:
		bad = "hello answered no caps"
	default:
		if cerr := rep.Caps.caps().Check(); cerr != nil {
			bad = "hello declared capabilities no backend can use: " + cerr.Error()
		}
	}
	if err == nil && bad != "" {
		d.fail(Garbage, "hello", bad)
	}
	if err != nil || bad != "" {
		d.Shutdown(context.Background())
		if in := d.Incident(); in != nil {
			return nil, fmt.Errorf("procdriver: %w", in)
		}
		return nil, fmt.Errorf("procdriver: %s: %w", cfg.Name, err)
	}
	d.caps = rep.Caps.caps()
	d.together = rep.Together
	d.driver = rep.Driver
	d.ops = map[string]bool{}
	for _, o := range rep.Ops {
		d.ops[o] = true
	}
	d.mu.Lock()
	d.started = true
	d.mu.Unlock()
	if d.together {
		return &TogetherDriver{d}, nil
	}
	return d, nil
}

// ParseCommand splits a command line into argv: words separated by
// spaces, with '…' and "…" quoting (no escapes, no variables, no shell).
func ParseCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w: unterminated %c quote in %q", ErrConfig, quote, s)
	}
	if in {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrConfig)
	}
	return out, nil
}

// Capabilities implements drivers.Driver: what the process declared in
// hello.
func (d *Driver) Capabilities() drivers.Capabilities { return d.caps }

// PID is the process id of the driver process.
func (d *Driver) PID() int { return d.p.pid }

// Name is the driver's name in messages.
func (d *Driver) Name() string { return d.name }

// DriverName is what the process called itself in hello.
func (d *Driver) DriverName() string { return d.driver }

// Incident is the incident that ended the process, or nil.
func (d *Driver) Incident() *Incident {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.incident == nil {
		return nil
	}
	in := *d.incident
	return &in
}

// Findings is what the memory audits found so far: writes into the shared
// mapping of a slot whose call had ENDED (D-ACCESS-END), of a FETCH row
// reported MISS or NOT_ATTEMPTED (D-STATUS), of a region after it was
// unregistered (S-NO-LATE-ACCESS), of a slot no call names (D-SUB-6). The
// same writes reach the caller's memory as touches of the call and row, so
// a caller with memory oracles (the conformance suite, storesim run) sees
// them there too; this list is for callers without.
func (d *Driver) Findings() []rules.Violation {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.aud.found)
}

func (d *Driver) onStderr(b []byte) {
	d.mu.Lock()
	d.stderr.write(b)
	d.mu.Unlock()
	if d.cfg.Stderr != nil {
		d.cfg.Stderr(b)
	}
}

// sendLocked queues one line for the writer.
func (d *Driver) sendLocked(req request) {
	b, _ := json.Marshal(req)
	d.wq = append(d.wq, append(b, '\n'))
	d.wcond.Signal()
}

// call sends req and waits for its answer, up to wait (or ctx). A missing
// answer is a Hung incident.
func (d *Driver) call(req request, wait time.Duration, ctx context.Context) (*inbound, error) {
	d.mu.Lock()
	if d.dead {
		d.mu.Unlock()
		return nil, d.goneErr()
	}
	if d.wclose {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %s after Shutdown", drivers.ErrClosed, req.Op)
	}
	d.nextReq++
	req.ID = d.nextReq
	w := &waiter{ch: make(chan *inbound, 1), what: describe(req)}
	d.pending[req.ID] = w
	d.sendLocked(req)
	d.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case m := <-w.ch:
		if m.OK == nil {
			d.fail(Garbage, "the answer to "+w.what, `the answer has no "ok" field`)
			return nil, d.goneErr()
		}
		return m, nil
	case <-d.deadCh:
		return nil, d.goneErr()
	case <-t.C:
		d.fail(Hung, w.what, fmt.Sprintf("no answer within %v", wait))
		return nil, d.goneErr()
	case <-done:
		d.mu.Lock()
		w.abandoned = true
		d.mu.Unlock()
		return nil, ctx.Err()
	}
}

func describe(req request) string {
	switch {
	case req.Call != 0:
		return fmt.Sprintf("%s (call %d)", req.Op, req.Call)
	case req.Handle != nil:
		return fmt.Sprintf("%s (handle %d)", req.Op, *req.Handle)
	}
	return req.Op
}

func (d *Driver) goneErr() error {
	d.mu.Lock()
	in := d.incident
	d.mu.Unlock()
	if in != nil {
		return fmt.Errorf("%w: %s", ErrGone, in)
	}
	return ErrGone
}

// writer writes queued lines, each batch bounded by ReplyTimeout: a
// process that stops reading its stdin is Hung.
func (d *Driver) writer() {
	defer close(d.writerDone)
	defer d.p.stdin.Close()
	for {
		d.mu.Lock()
		for len(d.wq) == 0 && !d.wclose && !d.dead {
			d.wcond.Wait()
		}
		if d.dead || len(d.wq) == 0 {
			d.mu.Unlock()
			return
		}
		batch := d.wq
		d.wq = nil
		d.mu.Unlock()
		var buf []byte
		if len(batch) == 1 {
			buf = batch[0]
		} else {
			for _, b := range batch {
				buf = append(buf, b...)
			}
		}
		d.p.stdin.SetWriteDeadline(time.Now().Add(d.cfg.ReplyTimeout))
		if _, err := d.p.stdin.Write(buf); err != nil {
			d.mu.Lock()
			quiet := d.expectEOF || d.dead
			d.mu.Unlock()
			if !quiet {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					d.fail(Hung, "a write to its stdin", fmt.Sprintf("it did not read its stdin for %v", d.cfg.ReplyTimeout))
				} else {
					d.fail(Died, "a write to its stdin", err.Error())
				}
			}
			return
		}
	}
}

// reader reads the process's stdout: answers go to their waiters, change
// notifications are applied. Anything else is Garbage; an early end is
// Died.
func (d *Driver) reader() {
	defer close(d.readerDone)
	lr := lineReader{r: bufio.NewReaderSize(d.p.stdout, 64<<10), max: d.cfg.MaxLine}
	for n := 1; ; n++ {
		line, err := lr.next()
		if err != nil {
			d.mu.Lock()
			quiet := d.expectEOF || d.dead
			d.mu.Unlock()
			switch {
			case errors.Is(err, errLineTooLong):
				d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("the line is longer than %d bytes", d.cfg.MaxLine))
			case !quiet:
				d.fail(Died, "", fmt.Sprintf("its stdout closed after %d lines (the process ended) while the driver was in use", n-1))
			}
			return
		}
		if !d.handle(n, line) {
			return
		}
	}
}

// handle dispatches one line; false stops the reader (an incident).
func (d *Driver) handle(n int, line []byte) bool {
	var m inbound
	if err := json.Unmarshal(line, &m); err != nil {
		d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("not a protocol message (%v): %q", err, clip(line)))
		return false
	}
	switch {
	case m.ID != nil:
		return d.answer(n, &m, line)
	case m.Op == "change":
		return d.change(n, &m, line)
	}
	d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("neither an answer (no id) nor a change notification: %q", clip(line)))
	return false
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

func (d *Driver) answer(n int, m *inbound, line []byte) bool {
	d.mu.Lock()
	w := d.pending[*m.ID]
	if w == nil {
		d.mu.Unlock()
		d.fail(Garbage, fmt.Sprintf("line %d", n), fmt.Sprintf("an answer to request %d, which awaits none: %q", *m.ID, clip(line)))
		return false
	}
	delete(d.pending, *m.ID)
	if !w.abandoned {
		w.ch <- m
	}
	d.mu.Unlock()
	return true
}

// change applies one change notification: first the audit (what the
// process wrote into the shared memory before it wrote this line reaches
// the caller's memory), then the call's new state, then — unless
// "signal": false — the call's callback, on the dispatcher (D-CB-1).
func (d *Driver) change(n int, m *inbound, line []byte) bool {
	where := fmt.Sprintf("line %d", n)
	d.mu.Lock()
	c := d.calls[drivers.CallID(m.Call)]
	var bad string
	res := make([]drivers.Status, len(m.Results))
	acc, accOK := accessWire[m.Access]
	switch {
	case c == nil:
		bad = fmt.Sprintf("a change of call %d, which was never accepted: %q", m.Call, clip(line))
	case m.Results == nil:
		bad = fmt.Sprintf(`a change of call %d without "results": %q`, m.Call, clip(line))
	case !accOK:
		bad = fmt.Sprintf("a change of call %d with access %q (want pending, ended or unprovable)", m.Call, m.Access)
	}
	for i, s := range m.Results {
		st, ok := statusWire[s]
		if !ok && bad == "" {
			bad = fmt.Sprintf("a change of call %d with row status %q (want pending, ok, miss, fault or not_attempted)", m.Call, s)
		}
		res[i] = st
	}
	if bad == "" {
		c.notes++
		if c.notes > d.noteLimit(len(c.rows)) {
			d.mu.Unlock()
			d.fail(Flood, where, fmt.Sprintf("call %d (%d rows) got %d change notifications, more than the %d any driver needs", c.id, len(c.rows), c.notes, d.noteLimit(len(c.rows))))
			return false
		}
	}
	if bad != "" {
		d.mu.Unlock()
		d.fail(Garbage, where, bad)
		return false
	}
	d.auditAllLocked()
	old := c.access
	oldRes := c.results
	c.results, c.access = res, acc
	if c.dir == drivers.Fetch {
		for i, st := range res {
			if i >= len(c.wrote) || (i < len(oldRes) && oldRes[i] == st) {
				continue
			}
			switch {
			case st == drivers.OK && !c.wrote[i]:
				d.forceRowLocked(c, i) // its bytes equal what the mapping held: no audit saw them change
			case (st == drivers.Miss || st == drivers.NotAttempted) && c.wrote[i]:
				d.aud.untouchedBroken(c, i, st) // written before it was reported so
			}
		}
	}
	if acc == drivers.AccessEnded && old != drivers.AccessEnded {
		d.canaryCallLocked(c)
	}
	if m.Signal == nil || *m.Signal {
		d.enqueueLocked(c)
	}
	d.mu.Unlock()
	return true
}

func (d *Driver) noteLimit(rows int) int {
	if d.cfg.MaxNotes > 0 {
		return d.cfg.MaxNotes
	}
	return 64 + 16*rows
}

// auditAllLocked audits every slot of every mapped window.
func (d *Driver) auditAllLocked() {
	for _, w := range d.allWins {
		for i := 0; i < w.slots; i++ {
			d.aud.sync(w, i)
		}
	}
}

// forceRowLocked writes row i's slot, as the mapping holds it, into the
// caller's memory: a FETCH row reported OK whose bytes no audit saw change
// (the object equals what the slot held: the canary, or a value written
// before) must still be in the caller's slot when reported.
func (d *Driver) forceRowLocked(c *call, i int) {
	r := c.rows[i]
	w := d.windows[r.Handle]
	if w == nil || r.Slot < 0 || r.Slot >= w.slots || w.owner[r.Slot].c != c || w.owner[r.Slot].row != i {
		return
	}
	d.aud.force(w, r.Slot)
	c.wrote[i] = true
}

// canaryCallLocked fills the slots of c's rows with Canary once c's access
// ENDED: nothing may touch them now.
func (d *Driver) canaryCallLocked(c *call) {
	for i, r := range c.rows {
		if w := d.windows[r.Handle]; w != nil && r.Slot >= 0 && r.Slot < w.slots && w.owner[r.Slot].c == c && w.owner[r.Slot].row == i {
			d.aud.canaryFill(w, r.Slot)
		}
	}
}

// enqueueLocked queues c's callback; one already queued (not yet running)
// will read the newer state, so it is not queued twice (D-CB-2 allows the
// coalescing).
func (d *Driver) enqueueLocked(c *call) {
	if d.dclosed || c.cbQueued {
		return
	}
	c.cbQueued = true
	d.dq = append(d.dq, c)
	d.dcond.Signal()
}

// dispatcher runs the callbacks, one at a time, holding no lock (D-CB-4).
func (d *Driver) dispatcher() {
	defer close(d.dispatchDn)
	for {
		d.mu.Lock()
		for len(d.dq) == 0 && !d.dclosed {
			d.dcond.Wait()
		}
		if len(d.dq) == 0 {
			d.mu.Unlock()
			return
		}
		c := d.dq[0]
		d.dq[0] = nil
		d.dq = d.dq[1:]
		c.cbQueued = false
		c.cbRunning++
		d.mu.Unlock()
		c.onChange()
		d.mu.Lock()
		c.cbRunning--
		d.mu.Unlock()
	}
}

// fail handles an incident: the process is killed by its id (and its
// process group), reaped, every call is ended, and the incident is
// reported once.
func (d *Driver) fail(kind IncidentKind, during, detail string) {
	d.mu.Lock()
	if d.dead {
		d.mu.Unlock()
		return
	}
	d.dead = true
	close(d.deadCh)
	d.wcond.Broadcast()
	report := d.started
	d.mu.Unlock()

	d.p.kill()
	exited := d.p.waitExit(5 * time.Second)
	d.endAllAfterExit()
	// The stderr pipe drains once the process is gone.
	t := time.NewTimer(200 * time.Millisecond)
	select {
	case <-d.p.stderrDone:
	case <-t.C:
	}
	t.Stop()
	in := Incident{Kind: kind, Command: d.name, PID: d.p.pid, During: during, Detail: detail}
	switch {
	case !exited:
		in.Exit = "killed by its pid, but it did not exit within 5s of SIGKILL"
	case kind == Died:
		in.Exit = "it ended with " + d.p.exitString()
	case d.p.killed():
		in.Exit = "killed by its pid (" + d.p.exitString() + ")"
	default:
		in.Exit = "it had exited by itself (" + d.p.exitString() + ")"
	}
	d.mu.Lock()
	in.Stderr = string(d.stderr.b)
	d.incident = &in
	d.mu.Unlock()
	if report && d.cfg.OnIncident != nil {
		d.cfg.OnIncident(in)
	}
}

// endAllAfterExit: the process is gone, so nothing can write the shared
// memory again. What it wrote before it went reaches the caller's memory
// (a last audit); every row without a final result becomes FAULT and every
// call's access ENDED — the process's exit is the evidence — with a
// callback.
func (d *Driver) endAllAfterExit() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.auditAllLocked()
	ids := make([]drivers.CallID, 0, len(d.calls))
	for id := range d.calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := d.calls[id]
		changed := false
		for i, s := range c.results {
			if !s.Final() {
				c.results[i] = drivers.Fault
				changed = true
			}
		}
		if c.access != drivers.AccessEnded {
			c.access = drivers.AccessEnded
			d.canaryCallLocked(c)
			changed = true
		}
		if changed {
			d.enqueueLocked(c)
		}
	}
	for _, w := range d.pending {
		w.abandoned = true
	}
}

// Register implements drivers.Driver: the region's slot area gets a shared
// mapping (filled with Canary), and the process is asked to register it.
func (d *Driver) Register(r drivers.Region) (drivers.Handle, error) {
	hs, err := d.register([]drivers.Region{r}, "register")
	if err != nil {
		return 0, err
	}
	return hs[0], nil
}

// RegisterTogether implements drivers.TogetherRegisterer.
func (d *TogetherDriver) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	return d.register(regions, "register_together")
}

func (d *Driver) register(rs []drivers.Region, op string) ([]drivers.Handle, error) {
	d.mu.Lock()
	if d.dead || d.shut {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %w: %w", drivers.ErrRegistrationRefused, drivers.ErrClosed, d.goneErr())
	}
	wins := make([]*window, len(rs))
	wire := make([]wireRegion, len(rs))
	unmap := func() {
		for _, w := range wins {
			if w != nil {
				w.unmap()
			}
		}
	}
	for i, r := range rs {
		wr := wireRegion{Label: r.Label, SlotBytes: r.SlotBytes, Slots: r.Slots}
		if r.Mem != nil {
			base, _ := r.Mem.Extent()
			wr.Base, wr.Length = uint64(base), r.Mem.Len()
		}
		if r.Mem != nil && r.SlotBytes > 0 && r.Slots > 0 {
			if r.SlotBytes > d.cfg.MaxRegionBytes/r.Slots {
				d.mu.Unlock()
				unmap()
				return nil, fmt.Errorf("%w: region %q: %d slots of %d bytes exceed the %d bytes a driver process may map (Config.MaxRegionBytes)",
					drivers.ErrRegistrationRefused, r.Label, r.Slots, r.SlotBytes, d.cfg.MaxRegionBytes)
			}
			d.winSeq++
			w, err := newWindow(d.dir, d.winSeq, r)
			if err != nil {
				d.mu.Unlock()
				unmap()
				return nil, fmt.Errorf("%w: region %q: the shared mapping could not be made: %w", drivers.ErrRegistrationRefused, r.Label, err)
			}
			d.aud.init(w)
			wins[i] = w
			wr.Path, wr.Size = w.path, len(w.buf)
		}
		wire[i] = wr
	}
	d.mu.Unlock()
	req := request{Op: op}
	if op == "register" {
		req.Region = &wire[0]
	} else {
		req.Regions = wire
	}
	rep, err := d.call(req, d.cfg.ReplyTimeout, nil)
	if err == nil && *rep.OK && op == "register" && rep.Handle == nil {
		d.fail(Garbage, "the answer to register", `it accepted the region without a "handle"`)
		err = d.goneErr()
	}
	if err != nil {
		unmap()
		// The process is gone, and its registrations with it.
		return nil, fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	if !*rep.OK {
		unmap()
		return nil, toError(op, rep.Error)
	}
	var hs []drivers.Handle
	if op == "register" {
		hs = []drivers.Handle{drivers.Handle(*rep.Handle)}
	} else {
		for _, h := range rep.Handles {
			hs = append(hs, drivers.Handle(h))
		}
	}
	d.mu.Lock()
	for i, w := range wins {
		if w == nil {
			continue
		}
		if i < len(hs) {
			w.handle = hs[i]
			if old := d.windows[hs[i]]; old != nil {
				old.closed = true // the process reused a live handle: the old window is orphaned
			}
			d.windows[hs[i]] = w
		}
		// A region without a handle (fewer handles than regions) stays
		// mapped and audited: the process may have registered it anyway.
		d.allWins = append(d.allWins, w)
	}
	d.mu.Unlock()
	return hs, nil
}

// Unregister implements drivers.Driver. Once the process closed it, the
// region's mapping is audited one last time as live, then filled with
// Canary and audited until Shutdown: a later write is S-NO-LATE-ACCESS.
func (d *Driver) Unregister(h drivers.Handle) error {
	hv := uint64(h)
	rep, err := d.call(request{Op: "unregister", Handle: &hv}, d.cfg.ReplyTimeout, nil)
	if err != nil {
		d.mu.Lock()
		dead := d.dead
		d.mu.Unlock()
		if dead { // the process is gone, and its registration with it
			d.closeWindows(map[drivers.Handle]bool{h: true})
			return nil
		}
		return fmt.Errorf("%w: %w", drivers.ErrUnregisterFailed, err)
	}
	if !*rep.OK {
		return toError("unregister", rep.Error)
	}
	d.closeWindows(map[drivers.Handle]bool{h: true})
	return nil
}

// UnregisterTogether implements drivers.TogetherRegisterer.
func (d *TogetherDriver) UnregisterTogether(hs []drivers.Handle) error {
	wire := make([]uint64, len(hs))
	closed := map[drivers.Handle]bool{}
	for i, h := range hs {
		wire[i] = uint64(h)
		closed[h] = true
	}
	rep, err := d.call(request{Op: "unregister_together", Handles: wire}, d.cfg.ReplyTimeout, nil)
	if err != nil {
		d.mu.Lock()
		dead := d.dead
		d.mu.Unlock()
		if dead {
			d.closeWindows(closed)
			return nil
		}
		return &drivers.InDoubtError{Op: "unregister", Labels: d.labelsOf(hs), Err: fmt.Errorf("%w: %w", drivers.ErrUnregisterFailed, err)}
	}
	if *rep.OK {
		d.closeWindows(closed)
		return nil
	}
	e := toError("unregister_together", rep.Error)
	var id *drivers.InDoubtError
	if errors.As(e, &id) {
		// Exactly the regions it names stayed live (D-TOG-3).
		still := map[string]bool{}
		for _, l := range id.Labels {
			still[l] = true
		}
		d.mu.Lock()
		for _, h := range hs {
			if w := d.windows[h]; w != nil && still[w.label] {
				delete(closed, h)
			}
		}
		d.mu.Unlock()
		d.closeWindows(closed)
	}
	return e
}

func (d *Driver) labelsOf(hs []drivers.Handle) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, h := range hs {
		if w := d.windows[h]; w != nil {
			out = append(out, w.label)
		}
	}
	return out
}

// closeWindows audits, canaries and retires the live windows of hs.
func (d *Driver) closeWindows(hs map[drivers.Handle]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for h := range hs {
		w := d.windows[h]
		if w == nil {
			continue
		}
		delete(d.windows, h)
		for i := 0; i < w.slots; i++ {
			d.aud.sync(w, i)
		}
		w.closed = true
		for i := 0; i < w.slots; i++ {
			d.aud.canaryFill(w, i)
		}
	}
}

// Live reports whether h is live in the process's own table.
func (d *Driver) Live(h drivers.Handle) bool {
	d.mu.Lock()
	gone := d.dead || d.shut || d.expectEOF
	_, mine := d.windows[h]
	d.mu.Unlock()
	if gone {
		return false
	}
	if d.ops["live"] {
		hv := uint64(h)
		if rep, err := d.call(request{Op: "live", Handle: &hv}, d.cfg.ReplyTimeout, nil); err == nil && *rep.OK && rep.Live != nil {
			return *rep.Live
		}
	}
	return mine
}

// Contains implements drivers.Driver. The answer is the process's, as it
// gave it (the contract monitor judges its length).
func (d *Driver) Contains(ctx context.Context, keys []string) ([]bool, error) {
	rep, err := d.call(request{Op: "contains", Keys: keys}, d.cfg.ReplyTimeout, ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", drivers.ErrLookupFailed, err)
	}
	if !*rep.OK {
		return nil, toError("contains", rep.Error)
	}
	if rep.Found == nil {
		return []bool{}, nil
	}
	return rep.Found, nil
}

// Submit implements drivers.Driver. The process validates and accepts or
// refuses the batch (the parent checks nothing, so the process's own
// validation is what is certified); once it accepted, the parent copies
// the PUBLISH rows' slots into the shared mapping and tells it to start.
func (d *Driver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	if onChange == nil {
		onChange = func() {}
	}
	d.mu.Lock()
	if d.dead || d.shut {
		d.mu.Unlock()
		return nil, fmt.Errorf("procdriver: submit: %w: %w", drivers.ErrClosed, d.goneErr())
	}
	d.nextCall++
	c := &call{d: d, id: d.nextCall, dir: b.Dir, rows: slices.Clone(b.Rows), onChange: onChange,
		results: make([]drivers.Status, len(b.Rows)), wrote: make([]bool, len(b.Rows))}
	d.calls[c.id] = c
	d.mu.Unlock()
	rows := make([]wireRow, len(b.Rows))
	for i, r := range b.Rows {
		rows[i] = wireRow{Key: r.Key, Handle: uint64(r.Handle), Slot: r.Slot, Position: r.Position}
	}
	rep, err := d.call(request{Op: "submit", Call: uint64(c.id), Dir: dirWire(b.Dir), Rows: rows}, d.cfg.ReplyTimeout, nil)
	if err != nil || !*rep.OK {
		d.mu.Lock()
		delete(d.calls, c.id)
		d.mu.Unlock()
		if err != nil {
			// The request may have reached the process: not one of the
			// errors that prove nothing escaped (D-SUB-2).
			return nil, fmt.Errorf("procdriver: submit of call %d: %w", c.id, err)
		}
		return nil, toError("submit", rep.Error)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead { // gone since it accepted: the call was ended with the rest
		return c, nil
	}
	for i, r := range c.rows {
		w := d.windows[r.Handle]
		if w == nil || r.Slot < 0 || r.Slot >= w.slots {
			continue // a row the process should have refused
		}
		d.aud.sync(w, r.Slot) // a late write of the slot's last owner is that owner's
		w.owner[r.Slot] = owner{c: c, row: i}
		if c.dir == drivers.Publish {
			d.aud.fill(w, r.Slot, drivers.Toucher{Call: c.id, Row: i})
		}
	}
	c.started = true
	d.sendLocked(request{Op: "start", Call: uint64(c.id)})
	return c, nil
}

// Drain implements drivers.Driver: the process's answer, plus the calls
// whose callback this side has not yet run (D-DRAIN-2).
func (d *Driver) Drain() drivers.DrainStatus {
	rep, err := d.call(request{Op: "drain"}, d.cfg.ReplyTimeout, nil)
	if err == nil && !*rep.OK {
		d.fail(Garbage, "the answer to drain", "drain answered an error: "+toError("drain", rep.Error).Error())
		err = d.goneErr()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var mine []drivers.CallID
	for id, c := range d.calls {
		if c.cbQueued || c.cbRunning > 0 || (err != nil && !c.access.Evidenced()) {
			mine = append(mine, id)
		}
	}
	if err != nil {
		slices.Sort(mine)
		return drivers.DrainStatus{Done: len(mine) == 0, Pending: mine}
	}
	st := drivers.DrainStatus{Done: rep.Done}
	for _, id := range rep.Pending {
		st.Pending = append(st.Pending, drivers.CallID(id))
	}
	if len(mine) > 0 {
		st.Done = false
		st.Pending = append(st.Pending, mine...)
		slices.Sort(st.Pending)
		st.Pending = slices.Compact(st.Pending)
	}
	return st
}

// Shutdown implements drivers.Driver: the process's shutdown (bounded by
// ctx), its labels, then its stdin closes and it must exit; a last audit
// of every mapping, every callback still owed, and the mappings are
// released. The process's calls keep the access it last reported: a call
// it labelled stays as it was (its memory retained), though the process is
// gone. A second Shutdown returns the same labels (nothing is left to
// retry). After an incident every call has ended and nothing is held.
func (d *Driver) Shutdown(ctx context.Context) []string {
	d.shutMu.Lock()
	defer d.shutMu.Unlock()
	if d.shutDone {
		return slices.Clone(d.labels)
	}
	var labels []string
	d.mu.Lock()
	dead := d.dead
	d.mu.Unlock()
	if !dead {
		budget := d.cfg.ReplyTimeout
		if dl, ok := ctx.Deadline(); ok {
			budget = max(time.Until(dl), 0)
		}
		ms := budget.Milliseconds()
		rep, err := d.call(request{Op: "shutdown", TimeoutMS: &ms}, budget+d.cfg.ReplyTimeout, nil)
		switch {
		case err != nil: // an incident: every call ended
		case !*rep.OK:
			d.fail(Garbage, "the answer to shutdown", "shutdown answered an error: "+toError("shutdown", rep.Error).Error())
		default:
			labels = rep.Labels
		}
		d.mu.Lock()
		d.expectEOF, d.wclose = true, true
		d.wcond.Broadcast()
		d.mu.Unlock()
		if !d.p.waitExit(d.cfg.ExitTimeout) {
			d.fail(Hung, "the exit after shutdown", fmt.Sprintf("still running %v after its stdin closed", d.cfg.ExitTimeout))
		}
	}
	d.finish()
	d.shutDone = true
	d.labels = labels
	return slices.Clone(labels)
}

// finish, once the process has exited: the pipes drain, a last audit, the
// callbacks still owed run, the mappings go.
func (d *Driver) finish() {
	wait := func(ch chan struct{}, f interface{ Close() error }) {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C: // a grandchild holds the pipe open: stop reading it
			f.Close()
			<-ch
		}
	}
	wait(d.readerDone, d.p.stdout)
	d.mu.Lock()
	d.wclose = true
	d.wcond.Broadcast()
	d.mu.Unlock()
	<-d.writerDone
	wait(d.p.stderrDone, d.p.stderr)
	d.p.stdout.Close()
	d.p.stderr.Close()
	d.mu.Lock()
	d.auditAllLocked()
	d.shut = true
	d.dclosed = true
	d.dcond.Broadcast()
	d.mu.Unlock()
	<-d.dispatchDn
	d.mu.Lock()
	for _, w := range d.allWins {
		w.unmap()
	}
	d.allWins = nil
	d.windows = map[drivers.Handle]*window{}
	d.mu.Unlock()
	os.RemoveAll(d.dir)
}

// Delete implements the conformance suite's MakeAbsent hook (op delete).
func (d *Driver) Delete(ctx context.Context, key string) error {
	return d.admin(ctx, request{Op: "delete", Key: &key})
}

// Flush drops what the process stored under its prefix (op flush).
func (d *Driver) Flush(ctx context.Context) error {
	return d.admin(ctx, request{Op: "flush"})
}

func (d *Driver) admin(ctx context.Context, req request) error {
	if !d.ops[req.Op] {
		return fmt.Errorf("%w: %s", ErrUnsupported, req.Op)
	}
	rep, err := d.call(req, d.cfg.ReplyTimeout, ctx)
	if err != nil {
		return err
	}
	if !*rep.OK {
		return toError(req.Op, rep.Error)
	}
	return nil
}
