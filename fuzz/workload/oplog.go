// Package workload is the op log: a generated (or hand-written) workload in a
// one-line-per-op text form that prints and parses back.
//
// A run is driven either by a seed (Generate derives the log) or by a saved
// log file; because the log, not the seed, is what a failure folder keeps, a
// failure replays on later commits even when the generator changes (pebble's
// metamorphic test does the same).
//
// # Format
//
//	storesim-oplog v2
//	seed 42
//	store durable
//	endpoint A driver=memory rows=4 absent-is-miss=true inflight=4 queued=16 unprovable=8 regions=r0:8x64,r1:8x64
//	fault A row-fault rate=0.05
//	op at=0us publish A keys=k1,k2 mask=11
//	op at=3us fetch B keys=k1,k3 mask=10
//	op at=5us cancel 0
//	op at=6us quiesce B 1
//	op at=7us fetch A keys=k2 mask=1 bad=outside
//	op at=8us probe A stale-close
//	op at=90us shutdown A
//	op at=95us probe A after-shutdown
//	end
//
// Ops are numbered from 0 in file order; cancel names the op it cancels,
// quiesce the endpoint and the ops whose attempts it asks Backend.Quiesce
// about. bad= makes a publish or fetch view malformed on purpose (see
// [Bad]): the backend must refuse it, or fail the attempt at once for a row
// outside its registrations.
//
// A probe is a driver probe (see [ProbeKind]): the run function puts the
// endpoint's driver, through its contract monitor but past the backend and
// its reference model, in one situation of the driver contract that the
// backend never creates — an overlapping registration, a batch naming one
// key twice, a close of a stale handle, a registration after shutdown, a
// fetch into a slot of another size, a close of a busy region, a fetch of a
// key known absent, two concurrent puts of one key, a key evicted while it
// is read — on memory and keys of its own ("probe-<op>-…" regions,
// "probe/<op>/…" keys), so the monitor and the oracles judge the driver's
// answer and the backend's own registrations and calls are untouched. A
// probe names nothing else, so dropping or keeping it never makes a log
// invalid.
// Blank lines and lines starting with '#' are ignored. Fault lines are
// passed to the endpoint's driver unchanged (for the memory drivers, one
// line of memdriver.FaultMix).
//
// # The end marker
//
// A v2 log (what [Log.String] writes) ends with the line "end" and a final
// newline, and Parse requires both: a log cut at any byte — a copy that
// stopped, a disk that filled up — is an error that says "truncated", never
// a shorter workload that runs. Only comments and blank lines may follow
// "end". A v1 log (header "storesim-oplog v1", written before the marker
// existed) is still accepted as it is, without the marker: failure folders
// and shrunk files saved by older versions keep replaying, but a cut in one
// cannot be told from its end. Printing a parsed v1 log writes v2.
//
// # Limits
//
// Parse refuses a log whose regions or ops exceed the limits in limits.go
// (see [CheckLimits] and docs/FORMATS.md): a region of 3000000000 slots is
// one error line, not an out-of-memory crash.
package workload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the first line of every op log Log.String writes.
const Header = "storesim-oplog v2"

// HeaderV1 is the header of logs written before the end marker: Parse still
// reads them, without requiring "end".
const HeaderV1 = "storesim-oplog v1"

// End is the last line of a v2 log.
const End = "end"

// Log is one workload.
type Log struct {
	Seed      uint64
	Store     string // "durable" or "evicting"
	Endpoints []Endpoint
	Ops       []Op
	// Sched is the schedule section (sched.go): zero for the seed's random
	// policy.
	Sched Sched
}

// Endpoint is one backend with its driver and memory.
type Endpoint struct {
	Name         string
	Driver       string // "memory", "together", "broken:<Name>", "redis://…"
	MaxRows      int
	AbsentIsMiss bool
	InFlight     int
	Queued       int
	Unprovable   int
	// Dirs limits the directions the endpoint's driver supports: "" both,
	// "fetch" or "publish" only (printed as dirs=… only when set).
	Dirs    string
	Regions []RegionSpec
	Faults  []string // one fault line each, without the "fault <endpoint> " prefix
}

// RegionSpec is a region's shape.
type RegionSpec struct {
	Label            string
	Slots, SlotBytes int
}

// Kind is what an op does.
type Kind uint8

const (
	Publish Kind = iota + 1
	Fetch
	Cancel
	Shutdown
	Quiesce
	Probe
)

var kindNames = map[Kind]string{Publish: "publish", Fetch: "fetch", Cancel: "cancel", Shutdown: "shutdown", Quiesce: "quiesce", Probe: "probe"}

// Bad names how a view is made wrong on purpose.
type Bad string

// The bad views. DupSlot, EmptyKey and MaskLength are malformed (refused
// with ErrInvalidSubmission); Outside puts a row at the slot just past its
// region's end (the attempt fails before any store call). The Masked kinds
// spoil a masked-out row the same ways (a view without one gets a
// masked-out row to spoil): such a row takes no part, so the view is well
// formed and must be served like any other.
const (
	DupSlot    Bad = "dup-slot"
	EmptyKey   Bad = "empty-key"
	MaskLength Bad = "mask-length"
	Outside    Bad = "outside"
	// Below puts a row at slot -1, outside its region as Outside does.
	Below Bad = "below"

	MaskedDupSlot  Bad = "masked-dup-slot"
	MaskedEmptyKey Bad = "masked-empty-key"
	MaskedOutside  Bad = "masked-outside"
)

// Bads lists every bad view kind.
var Bads = []Bad{DupSlot, EmptyKey, MaskLength, Outside, MaskedDupSlot, MaskedEmptyKey, MaskedOutside, Below}

// badNames lists the bad view kinds for an error message.
func badNames() string {
	names := make([]string, len(Bads))
	for i, b := range Bads {
		names[i] = string(b)
	}
	return strings.Join(names, ", ")
}

func (k Kind) String() string { return kindNames[k] }

// Op is one step of the workload, issued at virtual time At.
type Op struct {
	At       time.Duration
	Kind     Kind
	Endpoint string    // publish, fetch, shutdown, quiesce, probe
	Keys     []string  // publish, fetch
	Mask     []bool    // publish, fetch; one bit per key
	Target   int       // cancel: the op index to cancel
	Targets  []int     // quiesce: the ops whose attempts it asks about
	Bad      Bad       // publish, fetch: the view is made wrong on purpose
	Probe    ProbeKind // probe: the situation it puts the driver in
}

// maxMicros is the latest op time a log may name: virtual time is a
// time.Duration, so anything later would overflow.
const maxMicros = int64(1<<63-1) / int64(time.Microsecond)

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("op log")

// String prints the log in its text form; Parse reads it back.
func (l *Log) String() string {
	var b strings.Builder
	b.WriteString(Header + "\n")
	fmt.Fprintf(&b, "seed %d\n", l.Seed)
	fmt.Fprintf(&b, "store %s\n", l.Store)
	for _, e := range l.Endpoints {
		regs := make([]string, len(e.Regions))
		for i, r := range e.Regions {
			regs[i] = fmt.Sprintf("%s:%dx%d", r.Label, r.Slots, r.SlotBytes)
		}
		dirs := ""
		if e.Dirs != "" {
			dirs = " dirs=" + e.Dirs
		}
		fmt.Fprintf(&b, "endpoint %s driver=%s rows=%d absent-is-miss=%t inflight=%d queued=%d unprovable=%d%s regions=%s\n",
			e.Name, e.Driver, e.MaxRows, e.AbsentIsMiss, e.InFlight, e.Queued, e.Unprovable, dirs, strings.Join(regs, ","))
		for _, f := range e.Faults {
			fmt.Fprintf(&b, "fault %s %s\n", e.Name, f)
		}
	}
	for _, op := range l.Ops {
		b.WriteString(op.String())
		b.WriteByte('\n')
	}
	l.Sched.write(&b)
	b.WriteString(End + "\n")
	return b.String()
}

// String is the op's line.
func (op Op) String() string {
	at := fmt.Sprintf("op at=%dus %s", op.At/time.Microsecond, op.Kind)
	switch op.Kind {
	case Publish, Fetch:
		mask := make([]byte, len(op.Mask))
		for i, m := range op.Mask {
			mask[i] = '0'
			if m {
				mask[i] = '1'
			}
		}
		line := fmt.Sprintf("%s %s keys=%s mask=%s", at, op.Endpoint, strings.Join(op.Keys, ","), mask)
		if op.Bad != "" {
			line += " bad=" + string(op.Bad)
		}
		return line
	case Cancel:
		return fmt.Sprintf("%s %d", at, op.Target)
	case Quiesce:
		ts := make([]string, len(op.Targets))
		for i, t := range op.Targets {
			ts[i] = strconv.Itoa(t)
		}
		return fmt.Sprintf("%s %s %s", at, op.Endpoint, strings.Join(ts, ","))
	case Shutdown:
		return fmt.Sprintf("%s %s", at, op.Endpoint)
	case Probe:
		return fmt.Sprintf("%s %s %s", at, op.Endpoint, op.Probe)
	}
	return at
}
