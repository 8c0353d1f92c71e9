// Package simprobe holds the contract monitor's D-CB-4 probe for simulated
// drivers that do not implement monitor.LockProber: it decides, without a
// clock, whether a read of a call made from inside the call's callback
// could return.
//
// On the simulator a driver does all its work, callbacks included, on the
// scheduler's one goroutine. The probe runs the read on a fresh goroutine
// and waits until that goroutine has either returned or parked on a
// synchronisation primitive (a mutex, an RWMutex, a condition variable, a
// channel, a WaitGroup), as the Go runtime reports its state. A parked read
// can only be waiting for what the callback's goroutine holds — nothing else
// runs in a simulated world — and that goroutine is the one waiting for the
// probe, so the read would never return: D-CB-4. A correct driver's read
// returns, however loaded the machine is; a driver that calls back under a
// non-reentrant lock parks the read, however fast the machine is. Either
// way the verdict is the same for the same seed: the probe waits for an
// event, never for a duration.
//
// Only a read that neither returns nor parks (it spins, sleeps or waits on
// I/O) for a long safety bound of wall time is answered "undecided", which
// the monitor reports as something it could not show, never as a
// violation.
//
// It lives apart from package monitor because it starts goroutines; use
// realprobe for concurrent (real) drivers, whose reads may legitimately
// wait for another goroutine of the driver.
package simprobe

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/monitor"
)

// UndecidedAfter is the safety bound: a read that has neither returned nor
// parked after this much wall time is answered "undecided".
const UndecidedAfter = 30 * time.Second

// spinsBeforeLooking is how many times the probe yields before it first
// reads the runtime's goroutine states (a read that returns does so within
// a few yields; reading the states stops the world).
const spinsBeforeLooking = 64

// parked lists the goroutine wait states of a read that waits for another
// goroutine to release or send something.
var parked = []string{
	"sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock", "sync.Cond.Wait",
	"sync.WaitGroup.Wait", "semacquire", "chan receive", "chan send",
	"chan receive (nil chan)", "chan send (nil chan)", "select", "select (no cases)",
}

// LockProbe returns a monitor.Options.LockProbe for simulated drivers.
func LockProbe() func(read func()) monitor.ProbeResult {
	return func(read func()) monitor.ProbeResult { return probe(read, UndecidedAfter) }
}

func probe(read func(), undecidedAfter time.Duration) monitor.ProbeResult {
	done := make(chan struct{})
	ids := make(chan uint64, 1)
	go func() {
		defer close(done)
		ids <- goroutineID()
		read()
	}()
	id := <-ids
	var buf []byte
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case <-done:
			return monitor.ProbeResult{}
		default:
		}
		if i >= spinsBeforeLooking && i%8 == 0 {
			var state, frame string
			state, frame, buf = stateOf(id, buf)
			if isParked(state, frame) {
				select {
				case <-done: // it returned after all (the state was read before)
					return monitor.ProbeResult{}
				default:
				}
				return monitor.ProbeResult{Verdict: monitor.ReadBlocked,
					Observed: fmt.Sprintf("parked in %s on the goroutine the probe ran it on, while the callback held the simulator's only goroutine: it cannot return before the callback does", state)}
			}
			if i%1024 == 0 && time.Since(start) > undecidedAfter {
				return monitor.ProbeResult{Verdict: monitor.ReadUndecided,
					Observed: fmt.Sprintf("the read neither returned nor parked on a lock within %v (last state %q)", undecidedAfter, state)}
			}
		}
		runtime.Gosched()
	}
}

// isParked: the read waits for another goroutine. frame is the innermost
// function the traceback shows: a bare "semacquire" whose innermost frame
// is not a synchronisation primitive's (sync., internal/poll.) is the
// runtime's own wait — a goroutine that allocates while the world is being
// stopped (a GC starting, or the probe's own runtime.Stack) waits on a
// runtime semaphore with the runtime frames hidden — and passes at once:
// not parked.
func isParked(state, frame string) bool {
	if state == "semacquire" && !strings.HasPrefix(frame, "sync.") && !strings.HasPrefix(frame, "internal/poll.") {
		return false
	}
	for _, p := range parked {
		if state == p {
			return true
		}
	}
	return false
}

// goroutineID is the calling goroutine's id, from its stack header
// ("goroutine 17 [running]:").
func goroutineID() uint64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := bytes.Fields(b[:n])
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(string(f[1]), 10, 64)
	return id
}

// stateOf is goroutine id's wait state as the runtime prints it
// ("sync.Mutex.Lock", "runnable", …), without the "N minutes" and "locked
// to thread" notes, and the innermost function of its traceback; "" when it
// is not listed (it has exited). buf is reused.
func stateOf(id uint64, buf []byte) (state, frame string, _ []byte) {
	if len(buf) == 0 {
		buf = make([]byte, 64<<10)
	}
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:cap(buf)]
			head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
			for _, block := range bytes.Split(buf[:n], []byte("\n\n")) {
				if rest, ok := bytes.CutPrefix(block, head); ok {
					state, tb, _ := strings.Cut(string(rest), "]")
					state, _, _ = strings.Cut(state, ",")
					_, tb, _ = strings.Cut(tb, "\n")
					frame, _, _ = strings.Cut(tb, "\n")
					return state, frame, buf
				}
			}
			return "", "", buf
		}
		buf = make([]byte, 2*len(buf))
	}
}
