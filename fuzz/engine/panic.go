package engine

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/storesim/storesim/sim"
)

// panicError is a panic raised inside a scheduled event (the backend, a
// driver, the lender): the run stops, and it is reported as a failure of
// the seed, not a crash of the swarm, so it can be replayed and shrunk.
type panicError struct {
	value any
	where string // the first frame outside the runtime and this package
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v (at %s)", e.value, e.where) }

// runToIdle runs the scheduler to quiescence, turning a panic into an error.
func (r *run) runToIdle() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, where: panicSite(string(debug.Stack()))}
		}
	}()
	start := r.s.Steps()
	for more := true; more; more = r.retryShutdowns() {
		for r.s.Step() {
			r.afterStep()
			if err := r.s.Flood(); err != nil {
				return err
			}
			if r.s.Steps()-start >= r.maxSteps {
				return &StepCapError{What: "the run", Steps: r.maxSteps, At: r.s.Now(), Last: r.s.LastLabel()}
			}
		}
	}
	if err := r.s.Flood(); err != nil {
		return err
	}
	if p := r.s.Pending(); len(p) > 0 {
		return &sim.HangError{At: r.s.Now(), Pending: p}
	}
	return nil
}

// panicSite picks the function that panicked out of a stack dump.
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	seen := false
	for i := 0; i+1 < len(lines); i++ {
		fn := lines[i]
		if strings.HasPrefix(fn, "panic(") {
			seen = true
			continue
		}
		if seen && !strings.HasPrefix(fn, "\t") && !strings.HasPrefix(fn, "runtime.") {
			return strings.TrimSpace(fn) + " " + strings.TrimSpace(lines[i+1])
		}
	}
	return "unknown"
}
