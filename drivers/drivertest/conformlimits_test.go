package drivertest_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
)

// Four more conforming drivers, each with a limit the contract allows and
// the suite once refused them for (a conforming-driver audit wrote them
// first, from the contract alone). They are the fifo driver with one
// limit each.

// oneAtATime holds at most one call: a Submit while another call is not
// done (results final, access ENDED and its last callback returned) is
// refused as back-pressure (ErrRejected, nothing escaped). Two of its calls
// are never in flight together, so no key of one can race a submit of the
// same key: the suite must excuse that race pair, not call it a gap.
type oneAtATime struct{ *fifo }

func newOneAtATime(env drivertest.Env) drivers.Driver {
	return &oneAtATime{&fifo{core: newCore(env, "one-at-a-time", allCaps)}}
}

func (d *oneAtATime) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	return d.pushBack(b, onChange, func(x *xcall) error {
		return fmt.Errorf("one-at-a-time: call %d in flight: %w", x.id, drivers.ErrRejected)
	})
}

// pushBack submits b unless busy refuses it for a call still live (not
// made inert by Shutdown); a draining or shut driver leaves the refusal to
// fifo.Submit (Closed comes first).
func (f *fifo) pushBack(b drivers.RowBatch, onChange func(), busy func(x *xcall) error) (drivers.Call, error) {
	f.mu.Lock()
	if !f.draining && !f.shut {
		for _, x := range f.callsLocked() {
			if err := busy(x); !x.dead && err != nil {
				f.mu.Unlock()
				return nil, err
			}
		}
	}
	f.mu.Unlock()
	return f.Submit(b, onChange)
}

// perKey serializes by key: a Submit naming a key of a call not yet done
// is refused as back-pressure; calls on other keys run side by side. No
// two of its calls ever race on a key, so the suite must excuse that pair.
type perKey struct{ *fifo }

func newPerKey(env drivertest.Env) drivers.Driver {
	return &perKey{&fifo{core: newCore(env, "per-key", allCaps)}}
}

func (d *perKey) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	return d.pushBack(b, onChange, func(x *xcall) error {
		for _, r := range x.rows {
			if slices.ContainsFunc(b.Rows, func(n drivers.Row) bool { return n.Key == r.Key }) {
				return fmt.Errorf("per-key: key %q is in flight in call %d: %w", r.Key, x.id, drivers.ErrRejected)
			}
		}
		return nil
	})
}

// closeRetry's transport fails the first close of every handle
// (ErrUnregisterFailed); the binding stays live and the next close
// succeeds (D-REG-4).
type closeRetry struct {
	*fifo
	failed map[drivers.Handle]bool
}

func newCloseRetry(env drivertest.Env) drivers.Driver {
	return &closeRetry{fifo: &fifo{core: newCore(env, "close-retry", allCaps)}, failed: map[drivers.Handle]bool{}}
}

func (d *closeRetry) Unregister(h drivers.Handle) error {
	d.mu.Lock()
	_, live := d.regs[h]
	first := live && !d.failed[h]
	if first {
		d.failed[h] = true
	}
	d.mu.Unlock()
	if first {
		return fmt.Errorf("close-retry: handle %d: connection reset: %w", h, drivers.ErrUnregisterFailed)
	}
	return d.fifo.Unregister(h)
}

// boundedTogether offers together-registration on a store that holds at
// most togetherRoom live registrations: a registration over the bound is
// refused, together or alone, and a refused together-registration leaves
// nothing registered.
type boundedTogether struct{ *fifo }

const togetherRoom = 2

var _ drivers.TogetherRegisterer = (*boundedTogether)(nil)

func newBoundedTogether(env drivertest.Env) drivers.Driver {
	return &boundedTogether{&fifo{core: newCore(env, "bounded-together", allCaps)}}
}

// roomFor refuses a registration of rs over the bound. Bad geometry is
// refused first, as such (D-GEOM), whatever the room.
func (d *boundedTogether) roomFor(rs ...drivers.Region) error {
	if err := drivers.CheckGeometry(rs...); err != nil {
		return fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	n := len(rs)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.regs)+n > togetherRoom {
		return fmt.Errorf("%w: bounded-together: %d live registrations, room for %d", drivers.ErrRegistrationRefused, len(d.regs), togetherRoom)
	}
	return nil
}

func (d *boundedTogether) Register(r drivers.Region) (drivers.Handle, error) {
	if err := d.roomFor(r); err != nil {
		return 0, err
	}
	return d.fifo.Register(r)
}

func (d *boundedTogether) RegisterTogether(rs []drivers.Region) ([]drivers.Handle, error) {
	if err := d.roomFor(rs...); err != nil {
		return nil, err
	}
	hs := make([]drivers.Handle, 0, len(rs))
	for _, r := range rs {
		h, err := d.fifo.Register(r)
		if err != nil {
			for _, h := range hs {
				_ = d.fifo.Unregister(h) // idle and fresh: cannot fail
			}
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func (d *boundedTogether) UnregisterTogether(hs []drivers.Handle) error {
	var stayed []string
	var errs []error
	for _, h := range hs {
		d.mu.Lock()
		r, live := d.regs[h]
		d.mu.Unlock()
		if err := d.fifo.Unregister(h); err != nil && live {
			stayed = append(stayed, r.Label)
			errs = append(errs, err)
		}
	}
	if stayed == nil {
		return nil
	}
	return &drivers.InDoubtError{Op: "unregister", Labels: stayed, Err: errors.Join(errs...)}
}
