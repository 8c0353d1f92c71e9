package procdriver_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/procdriver"
)

// TestIncidents: a driver process that writes garbage, hangs, dies or
// floods notifications is reported once, with a message that says what
// happened, by whom and how it ended; it is killed by its process id and
// reaped; the call it had in flight ends (FAULT, access ENDED: the process
// is gone), with a callback; the driver then refuses new work and shuts
// down holding nothing. Each is driven by counts of requests (the faulty
// process misbehaves at its n-th request), not by time; the one bound is
// the reply timeout that defines a hang.
func TestIncidents(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		kind procdriver.IncidentKind
		want []string // in the report line
	}{
		// Requests: hello, register, submit, start, then drain (the 5th).
		{"Garbage", []string{"--after", "5", "--latency-ms", "60000"}, procdriver.Garbage, []string{"not a protocol message", `this is not JSON`, "killed by its pid (signal: killed)"}},
		{"Hang", []string{"--after", "5", "--latency-ms", "60000"}, procdriver.Hung, []string{"during drain", "no answer within", "killed by its pid (signal: killed)", "stops answering"}},
		{"Die", []string{"--after", "5", "--latency-ms", "60000"}, procdriver.Died, []string{"stdout closed", "it ended with exit status 3", "exits at request 5"}},
		// The 3rd request (submit) arms it; the fetch then floods.
		{"Flood", []string{"--after", "3", "--latency-ms", "0"}, procdriver.Flood, []string{"change notifications", "more than the", "killed by its pid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got incidents
			d, err := procdriver.New(procdriver.Config{Command: brokenCmd(t, tc.name, tc.args...), OnIncident: got.add, ReplyTimeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatalf("start: %v %s", err, repro(t))
			}
			pid := d.PID()
			a := lent(shared(t), "r0", 4, 32, false)
			h, err := d.Register(a.Region())
			if err != nil {
				t.Fatalf("register: %v %s", err, repro(t))
			}
			s := newSignal()
			c, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "a", Handle: h, Slot: 0}, {Key: "b", Handle: h, Slot: 1, Position: 1}}}, s.fire)
			if err != nil {
				t.Fatalf("submit: %v %s", err, repro(t))
			}
			if tc.name != "Flood" {
				d.Drain()
			}
			until(t, s, "the call in flight ending", func() bool { return c.Access() == drivers.AccessEnded && len(got.list()) == 1 })
			in := got.list()[0]
			line := in.String()
			t.Logf("reported: %s", line)
			if in.Kind != tc.kind || in.PID != pid || !strings.Contains(line, "driver process") {
				t.Errorf("incident %+v: want kind %s of pid %d %s", in, tc.kind, pid, repro(t))
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("the report does not say %q: %s %s", w, line, repro(t))
				}
			}
			if d.Incident() == nil || d.Incident().String() != line {
				t.Errorf("Incident() = %v, want the reported one %s", d.Incident(), repro(t))
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists after the incident (kill 0: %v) %s", pid, err, repro(t))
			}
			if tc.name != "Flood" {
				for i, st := range c.Results() {
					if st != drivers.Fault {
						t.Errorf("row %d of the call in flight is %v, want FAULT (the process went away mid-call) %s", i, st, repro(t))
					}
				}
			}
			if _, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "c", Handle: h, Slot: 2}}}, nil); !errors.Is(err, drivers.ErrClosed) {
				t.Errorf("Submit after the incident: %v, want ErrClosed %s", err, repro(t))
			}
			// Done once the callback of the ended call has returned (D-DRAIN-2).
			until(t, s, "Drain done after the incident", func() bool { return d.Drain().Done })
			if labels := shutdown(t, d); len(labels) != 0 {
				t.Errorf("Shutdown after the incident returned %v, want nothing held %s", labels, repro(t))
			}
			if n := len(got.list()); n != 1 {
				t.Errorf("%d incidents reported, want exactly 1: %v %s", n, got.list(), repro(t))
			}
		})
	}
}

// TestStartFailures: a command that cannot start, exits at once or answers
// hello with garbage is an error of New, naming what happened, and leaves
// no process.
func TestStartFailures(t *testing.T) {
	py := python(t)
	for _, tc := range []struct {
		name string
		cmd  []string
		want string
	}{
		{"missing", []string{"storesim-no-such-driver-binary"}, "executable file not found"},
		{"exits", []string{py, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(7)"}, "exit status 7"},
		{"garbage", []string{py, "-c", "print('hello there'); import sys; sys.stdin.read()"}, "not a protocol message"},
		{"old protocol", []string{py, "-c", `import sys,json; sys.stdin.readline(); print(json.dumps({"id":1,"ok":True,"protocol":0,"caps":{"max_rows":1,"fetch":True}}), flush=True); sys.stdin.read()`}, "speaks protocol 0"},
		// A Python client of protocol 1 (its adapter refuses hello, naming its version).
		{"protocol 1 adapter", []string{py, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import storesim_driver.adapter as a; from storesim_driver.reference import MemoryDriver; a.PROTOCOL = 1; a.serve(MemoryDriver())", script("")},
			"it speaks another protocol version (the parent speaks protocol 2, this adapter speaks protocol 1), and this storesim only protocol 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := procdriver.New(procdriver.Config{Command: tc.cmd})
			if err == nil {
				shutdown(t, d)
				t.Fatalf("New(%v) succeeded %s", tc.cmd, repro(t))
			}
			t.Logf("New: %v", err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%v): %v, want it to say %q %s", tc.cmd, err, tc.want, repro(t))
			}
			if left := children(); len(left) > 0 {
				t.Errorf("processes left behind: %v %s", left, repro(t))
			}
		})
	}
}
