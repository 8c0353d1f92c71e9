package procdriver

import (
	"fmt"
	"strings"
)

// IncidentKind says how a driver process failed the protocol.
type IncidentKind string

const (
	// Died: the process exited, or closed its stdout, on its own.
	Died IncidentKind = "died"
	// Hung: the process did not answer a request, did not read its stdin,
	// or did not exit after its stdin closed, within the bound.
	Hung IncidentKind = "hung"
	// Garbage: the process wrote something that is not a protocol message
	// (not JSON, an unknown message, an answer to no request, a change of no
	// call, an unknown status, an over-long line).
	Garbage IncidentKind = "garbage"
	// Flood: the process wrote more change notifications for one call than
	// any driver needs (Config.MaxNotes).
	Flood IncidentKind = "flood"
)

// Incident is a driver process failing the protocol itself (not a contract
// rule: those are judged by the monitor and the oracles). It is reported
// once per driver, through Config.OnIncident and Driver.Incident; the
// process is then killed by its process id (and its process group), every
// call without a final result gets FAULT, every call's access becomes ENDED
// once the process is reaped (nothing is left that could touch the shared
// memory), and the driver refuses new work (ErrClosed) — the run goes on.
type Incident struct {
	Kind    IncidentKind
	Command string // the command line
	PID     int
	// What the driver was doing: "answer to submit (call 4)", "line 17".
	During string
	// Detail says what went wrong, in words.
	Detail string
	// Exit is how the process ended: "killed by its pid (signal:
	// killed)", or "it had exited by itself (exit status 3)".
	Exit string
	// Stderr is the end of what the process wrote on its stderr.
	Stderr string
}

// String is the report line: what, who, during what, how it ended, and the
// end of its stderr.
func (in Incident) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver process %q (pid %d) %s", in.Command, in.PID, in.Kind)
	if in.During != "" {
		fmt.Fprintf(&b, " during %s", in.During)
	}
	if in.Detail != "" {
		fmt.Fprintf(&b, ": %s", in.Detail)
	}
	if in.Exit != "" {
		fmt.Fprintf(&b, "; %s", in.Exit)
	}
	if s := strings.TrimSpace(in.Stderr); s != "" {
		fmt.Fprintf(&b, "; its stderr ends: %q", lastLines(s, 3))
	}
	return b.String()
}

func (in Incident) Error() string { return in.String() }

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tail is a bounded buffer that keeps the last bytes written to it.
type tail struct {
	max int
	b   []byte
}

func (t *tail) write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
}
