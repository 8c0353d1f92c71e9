package procdriver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/procdriver"
	"github.com/storesim/storesim/sim/arena"
)

// python is the interpreter the tests run the Python drivers with, or a
// skip naming why there is none.
func python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("STORESIM_PYTHON_REQUIRED") == "1" {
			t.Fatalf("STORESIM_PYTHON_REQUIRED=1 but python3 is not on PATH: %v %s", err, repro(t))
		}
		t.Skipf("python3 is not on PATH (%v): the Python drivers cannot run; install python3 (>= 3.10) %s", err, repro(t))
	}
	return p
}

// script is a Python driver script of the repository's python/ folder.
func script(name string) string {
	p, _ := filepath.Abs(filepath.Join("..", "..", "python", name))
	return p
}

func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: go test ./drivers/procdriver -run '^%s$' -v)", strings.SplitN(t.Name(), "/", 2)[0])
}

// refCmd is the reference driver's command line.
func refCmd(t testing.TB, args ...string) []string {
	return append([]string{python(t), script("reference_driver.py")}, args...)
}

func brokenCmd(t testing.TB, name string, args ...string) []string {
	return append([]string{python(t), script("broken_driver.py"), name}, args...)
}

// incidents collects what the drivers report.
type incidents struct {
	mu  sync.Mutex
	all []procdriver.Incident
}

func (in *incidents) add(i procdriver.Incident) {
	in.mu.Lock()
	in.all = append(in.all, i)
	in.mu.Unlock()
}

func (in *incidents) list() []procdriver.Incident {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]procdriver.Incident(nil), in.all...)
}

func start(t testing.TB, cmd []string, in *incidents) procdriver.Process {
	t.Helper()
	cfg := procdriver.Config{Command: cmd}
	if in != nil {
		cfg.OnIncident = in.add
	}
	d, err := procdriver.New(cfg)
	if err != nil {
		t.Fatalf("start %v: %v %s", cmd, err, repro(t))
	}
	return d
}

func shutdown(t testing.TB, d drivers.Driver) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Shutdown(ctx)
}

// lent is an arena with every slot lent and the region registered in the
// arena's eyes (the tests call the driver directly, without the monitor),
// in the shared memory sh (nil: Go heap memory, which the driver mirrors
// into mappings of its own).
func lent(sh *arena.Shared, label string, slots, slotBytes int, log bool) *arena.Arena {
	a := arena.New(label, slots, slotBytes, arena.Options{Log: log, Shared: sh})
	if sh != nil {
		if _, _, ok := a.SharedFile(); !ok {
			panic(fmt.Sprintf("arena %s is not in shared memory: %v (repro: go test ./drivers/procdriver)", label, sh.Err()))
		}
	}
	for i := range slots {
		a.Lend(i, 1)
	}
	a.SetRegistered(true)
	return a
}

// waitFor waits for a callback count to reach n, bounded by a generous
// hang guard.
type signal struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{}, 1)} }

func (s *signal) fire() {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// until waits (hang guard: 20 s) until cond holds, re-checking on every
// callback.
func until(t testing.TB, s *signal, what string, cond func() bool) {
	t.Helper()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	for !cond() {
		select {
		case <-s.ch:
		case <-time.After(5 * time.Millisecond):
		case <-guard.C:
			t.Fatalf("hang guard: %s never happened %s", what, repro(t))
		}
	}
}

// children lists the live processes whose parent is this test process.
func children() []string {
	me := strconv.Itoa(os.Getpid())
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me {
			out = append(out, e.Name()+" ("+f[0]+") "+s[:i+1])
		}
	}
	return out
}

// shared is shared memory for one test, closed (and checked gone) at its
// end.
func shared(t testing.TB) *arena.Shared {
	t.Helper()
	sh, err := arena.NewShared("")
	if err != nil {
		t.Fatalf("shared memory: %v %s", err, repro(t))
	}
	t.Cleanup(func() {
		if err := sh.Close(); err != nil {
			t.Errorf("close shared memory: %v %s", err, repro(t))
		}
		if _, err := os.Stat(sh.Dir()); !os.IsNotExist(err) {
			t.Errorf("shared memory directory %s left behind (%v) %s", sh.Dir(), err, repro(t))
		}
	})
	return sh
}

// memModes are the two ways a region reaches the process: the caller's
// memory itself, shared (arena.Shared), and Go heap memory the driver
// mirrors into a mapping of its own.
var memModes = []struct {
	name string
	sh   func(t testing.TB) *arena.Shared
}{
	{"shared", shared},
	{"mirrored", func(testing.TB) *arena.Shared { return nil }},
}
