// Package realwait is the blocking side of the backend for real use: enter
// the backend on its runtime's executor and wait, with a context, for an
// outcome, for quiescence or for shutdown.
//
// The backend itself never blocks and is not safe for concurrent use (B-DET):
// with sim/realtime every backend call must run on the runtime's executor.
// These helpers do that through [Executor] (realtime.Runtime.Do) and wait on
// notifications from Config.OnChange ([Waiter.Notify]). Goroutines, channels
// and blocking live here, outside the simulated core; the package is never
// used under the simulator.
//
// Never call these helpers from inside a runtime event: Do would wait for
// the executor that is running the caller.
package realwait

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
)

// Executor runs fn on the runtime's executor and waits for it; it may skip
// fn when the runtime is closed. *realtime.Runtime implements it.
type Executor interface{ Do(fn func()) }

// Errors.
var (
	// ErrStopped: the executor did not run the request (runtime closed).
	ErrStopped = errors.New("realwait: runtime stopped")
	// ErrUnprovable: an attempt's access is UNPROVABLE, so waiting for it to
	// end may never return; its memory must stay retained (B-ACCESS).
	ErrUnprovable = errors.New("realwait: access unprovable")
)

// Waiter turns backend notifications into wake-ups for blocked callers.
type Waiter struct {
	ex Executor
	mu sync.Mutex
	ch chan struct{} // closed and replaced at every notification
}

// New returns a Waiter entering the backend through ex. Chain its Notify
// into the backend's Config.OnChange.
func New(ex Executor) *Waiter { return &Waiter{ex: ex, ch: make(chan struct{})} }

// Notify wakes every waiter so it re-checks; call it from Config.OnChange.
func (w *Waiter) Notify(*backend.Attempt) {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

func (w *Waiter) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// do runs fn on the executor and reports whether it ran.
func do(ex Executor, fn func()) error {
	ran := false
	ex.Do(func() { fn(); ran = true })
	if !ran {
		return ErrStopped
	}
	return nil
}

// wait re-checks cond on the executor after every notification until it
// reports done or an error, or ctx ends.
func (w *Waiter) wait(ctx context.Context, cond func() (bool, error)) error {
	for {
		ch := w.changed() // before the check, so no notification is lost
		var ok bool
		var cerr error
		if err := do(w.ex, func() { ok, cerr = cond() }); err != nil {
			return err
		}
		if ok || cerr != nil {
			return cerr
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Fetch admits v for FETCH on the executor.
func Fetch(ex Executor, b *backend.Backend, v drivers.View) (a *backend.Attempt, err error) {
	if derr := do(ex, func() { a, err = b.Fetch(v) }); derr != nil {
		return nil, derr
	}
	return a, err
}

// Publish admits v for PUBLISH on the executor.
func Publish(ex Executor, b *backend.Backend, v drivers.View) (a *backend.Attempt, err error) {
	if derr := do(ex, func() { a, err = b.Publish(v) }); derr != nil {
		return nil, derr
	}
	return a, err
}

// Outcome waits until a's outcome is committed.
func (w *Waiter) Outcome(ctx context.Context, a *backend.Attempt) (backend.Outcome, error) {
	var o backend.Outcome
	err := w.wait(ctx, func() (bool, error) {
		o = a.Outcome()
		return o.State != backend.Pending, nil
	})
	return o, err
}

// Quiesce waits until every attempt's access is ENDED (b.Quiesce). It
// returns ErrUnprovable as soon as one is UNPROVABLE rather than wait for
// proof that may never come.
func (w *Waiter) Quiesce(ctx context.Context, b *backend.Backend, attempts ...*backend.Attempt) error {
	return w.wait(ctx, func() (bool, error) {
		for _, a := range attempts {
			if a.Access() == drivers.AccessUnprovable {
				return false, fmt.Errorf("%w: attempt %d", ErrUnprovable, a.ID())
			}
		}
		return b.Quiesce(attempts...), nil
	})
}

// Shutdown runs b.Shutdown on the executor and waits for its labels.
func Shutdown(ctx context.Context, ex Executor, b *backend.Backend) ([]string, error) {
	done := make(chan []string, 1)
	if err := do(ex, func() { b.Shutdown(func(l []string) { done <- l }) }); err != nil {
		return nil, err
	}
	select {
	case l := <-done:
		return l, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
