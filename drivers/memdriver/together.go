package memdriver

import (
	"fmt"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

// TogetherDriver is the TogetherMemoryDriver: a [Driver] that also registers
// regions together (drivers.TogetherRegisterer, D-TOG-1..4).
//
// Decision: at most one together-batch of registrations is live at a time.
// While any handle of the last successful RegisterTogether is still live, a
// second RegisterTogether is refused with drivers.ErrRegistrationRefused
// (nothing registered); single Register calls are not affected. This models
// stores whose transport registers one memory pool per client.
type TogetherDriver struct {
	*Driver
}

var (
	_ drivers.Driver             = (*TogetherDriver)(nil)
	_ drivers.TogetherRegisterer = (*TogetherDriver)(nil)
)

// NewTogether returns a TogetherDriver; see [New].
func NewTogether(rt sim.Runtime, store *Store, cfg Config) *TogetherDriver {
	return &TogetherDriver{New(rt, store, cfg)}
}

// RegisterTogether implements drivers.TogetherRegisterer: all or nothing
// (D-TOG-1). On a failure at region k the pieces before it are closed again;
// if one of those closes fails, the error is a *drivers.InDoubtError naming
// every region that may still be registered (D-TOG-2), those regions stay
// held (Shutdown labels them region:<label>:in-doubt unless a retry closes
// them) and the driver quarantines itself (D-QUAR).
func (t *TogetherDriver) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	d := t.Driver
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.refuseRegistration(); err != nil {
		return nil, err
	}
	if len(regions) == 0 {
		return nil, refused("no regions to register together")
	}
	if err := drivers.CheckGeometry(regions...); err != nil {
		return nil, fmt.Errorf("%w: %w", drivers.ErrRegistrationRefused, err)
	}
	if err := d.checkOverlap(regions...); err != nil {
		return nil, err
	}
	for _, h := range d.together {
		if b := d.bindings[h]; b != nil && b.state == bindLive {
			return nil, refused("a together-batch (region %q, …) is still live: one live batch at a time", b.region.Label)
		}
	}
	failAt := -1
	if d.rReg.Chance(d.mix.TogetherFail) {
		failAt = d.rReg.Intn(len(regions))
	}
	failAt = d.injectedFailAt(regions, failAt) // scenario one-shot (inject.go)
	var pieces []*binding
	for k, r := range regions {
		if k == failAt || d.rReg.Chance(d.mix.RegisterRefused) {
			return nil, d.rollback(pieces, r.Label)
		}
		b := d.reserve(r)
		b.stuck = d.rReg.Chance(d.mix.UnregisterStuck)
		pieces = append(pieces, b)
	}
	hs := make([]drivers.Handle, len(pieces))
	for i, b := range pieces {
		b.state = bindLive
		hs[i] = b.h
	}
	d.together = hs
	return hs, nil
}

// rollback closes the pieces registered before failed, last first. A close
// that fails leaves its region in doubt. Caller holds d.mu.
func (d *Driver) rollback(pieces []*binding, failed string) error {
	var doubt []string
	for i := len(pieces) - 1; i >= 0; i-- {
		b := pieces[i]
		if d.hooks.waive(rules.DTog1, i) {
			continue
		}
		if d.rReg.Chance(d.mix.RollbackFail) {
			b.state = bindInDoubt
			doubt = append(doubt, b.region.Label)
			continue
		}
		delete(d.bindings, b.h)
	}
	if len(doubt) == 0 {
		return refused("store refused region %q; the %d regions before it were closed again (D-TOG-1)", failed, len(pieces))
	}
	d.quarantine = fmt.Sprintf("rollback of a together-registration left regions [%s] in doubt", strings.Join(doubt, " "))
	return &drivers.InDoubtError{
		Op:     "register",
		Labels: doubt,
		Err:    fmt.Errorf("store refused region %q and closing the regions before it failed: %w", failed, drivers.ErrUnregisterFailed),
	}
}

// UnregisterTogether implements drivers.TogetherRegisterer: it closes what it
// can (D-TOG-3); a busy region (D-TOG-4) or a failed close stays live, and
// exactly those are named in a *drivers.InDoubtError, whose Err wraps
// drivers.ErrBusy and/or drivers.ErrUnregisterFailed. Stale handles are
// no-ops (D-REG-3). Like every in-doubt answer it quarantines the driver
// (D-QUAR).
func (t *TogetherDriver) UnregisterTogether(hs []drivers.Handle) error {
	d := t.Driver
	d.mu.Lock()
	defer d.mu.Unlock()
	var left []string
	var busy, failed bool
	for _, h := range hs {
		b, ok := d.bindings[h]
		if !ok || b.state != bindLive {
			continue
		}
		switch err := d.closeOne(b); {
		case err == nil:
		case b.users > 0:
			busy = true
			left = append(left, b.region.Label)
		default:
			failed = true
			left = append(left, b.region.Label)
		}
	}
	if len(left) == 0 {
		return nil
	}
	var err error
	switch {
	case busy && failed:
		err = fmt.Errorf("%w (D-TOG-4) and %w (D-TOG-3)", drivers.ErrBusy, drivers.ErrUnregisterFailed)
	case busy:
		err = fmt.Errorf("%w: a call whose access is not ENDED names them (D-TOG-4)", drivers.ErrBusy)
	default:
		err = fmt.Errorf("%w: they stay registered; close them again (D-TOG-3)", drivers.ErrUnregisterFailed)
	}
	d.quarantine = fmt.Sprintf("together-unregistration left regions [%s] live", strings.Join(left, " "))
	return &drivers.InDoubtError{Op: "unregister", Labels: left, Err: err}
}
