package procdriver

import (
	"context"
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
	// ReplyTimeout bounds the wait for every answer (0: 10 s), and for the
	// process to read what is written to it. Running out is a Hung
	// incident, which refuses the driver: the default is far above what a
	// loaded machine makes of a millisecond answer (a hung process costs
	// it once — the driver then refuses new work).
	ReplyTimeout time.Duration
	// StartTimeout bounds the wait for the answer to hello (0: 10 s).
	StartTimeout time.Duration
	// ExitTimeout bounds the wait for the process to exit once its stdin
	// closed after shutdown (0: 10 s); running out is a Hung incident.
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
		c.ReplyTimeout = 10 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ExitTimeout <= 0 {
		c.ExitTimeout = 10 * time.Second
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
	case !*rep.OK && rep.Error != nil && rep.Error.Kind == "protocol":
		bad = fmt.Sprintf("it speaks another protocol version (%s), and this storesim only protocol %d (docs/PROTOCOL.md, Versioning)", rep.Error.Message, Protocol)
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
