package monitor

import "github.com/storesim/storesim/drivers"

// LockProber is an optional interface a driver (or its Call) implements so
// the monitor can detect D-CB-4 without risking a deadlock: Locked reports
// whether the lock that Results/Access take is held right now (typically a
// TryLock that is released at once). It is exact for single-threaded
// simulated drivers, where a held lock inside a callback can only be held by
// the callback's own caller. Concurrent drivers should be probed with
// Options.LockProbe instead, because another goroutine may hold the lock
// legitimately.
type LockProber interface {
	Locked() bool
}

// ResultsAppender is an optional interface of a drivers.Call:
// AppendResults appends what Results would return to dst and returns it.
// The monitor reads a call that has it into a buffer of its own, instead
// of a fresh snapshot per read; the calls the monitor hands out have it
// too, for callers that only look at the results (Results stays the copy
// a caller may keep or change).
type ResultsAppender interface {
	AppendResults(dst []drivers.Status) []drivers.Status
}

// StateAppender is an optional interface of a drivers.Call: AppendState
// is Access and AppendResults(dst) read together, as one snapshot (one
// lock round trip instead of two). The monitor prefers it for the reads it
// makes itself.
type StateAppender interface {
	AppendState(dst []drivers.Status) ([]drivers.Status, drivers.Access)
}

// LiveReporter is an optional interface: Live reports whether h still names a
// live registration of the driver (its own table, not the monitor's). It
// lets the monitor check D-REG-3 (a stale close left the newer registration
// live), D-REG-4 / D-TOG-3 (a failed close did not close, a successful one
// did) and D-SHUT-1 (an unlabelled region was really released).
type LiveReporter interface {
	Live(h drivers.Handle) bool
}

// BoundReporter is an optional interface: Bound reports whether the store's
// transport still has any byte of mem registered, whatever the driver's handle
// table says. It lets the monitor check D-REG-2 / D-TOG-1 (a refused
// registration left nothing behind) and that a reported close really released
// the memory (D-REG-4).
type BoundReporter interface {
	Bound(mem drivers.Memory) bool
}

// ReadVerdict is what a lock probe (Options.LockProbe) concluded about one
// read of a call made from inside the call's own callback (D-CB-4).
type ReadVerdict uint8

const (
	// ReadReturned: the read returned; nothing the callback held stopped it.
	ReadReturned ReadVerdict = iota
	// ReadBlocked: the read cannot return while the callback runs: the
	// driver called back holding a lock (or other resource) the read needs.
	// The monitor reports D-CB-4.
	ReadBlocked
	// ReadUndecided: the probe could not tell either way. Not a violation:
	// the monitor lists it in [Monitor.Undecided], and a certification
	// reports it as something it could not show.
	ReadUndecided
)

// ProbeResult is a lock probe's answer about one read: its verdict and,
// in words for the report, what it observed ("parked in sync.Mutex.Lock
// while the callback ran", "did not return within 100ms, nor within 5s
// more"). The zero value is a read that returned.
type ProbeResult struct {
	Verdict  ReadVerdict
	Observed string
}
