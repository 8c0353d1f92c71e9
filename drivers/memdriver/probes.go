package memdriver

import "github.com/storesim/storesim/drivers"

// The optional probes of drivers/monitor: they let the contract monitor see
// what the boundary alone cannot.

// Locked implements monitor.LockProber: whether the driver's mutex is held
// right now. The monitor asks it from inside a change callback, where a held
// lock means the driver called back under its lock (D-CB-4); on the
// simulator that check is exact and cannot deadlock.
func (d *Driver) Locked() bool {
	if d.mu.TryLock() {
		d.mu.Unlock()
		return false
	}
	return true
}

// Live implements monitor.LiveReporter: whether h names a live registration
// in the driver's own table (D-REG-3, D-REG-4, D-SHUT-1).
func (d *Driver) Live(h drivers.Handle) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.bindings[h]
	return ok && b.state == bindLive
}

// Bound implements monitor.BoundReporter: whether any binding, in any state
// (live, in progress, in doubt), still covers a byte of mem — the
// transport's view (D-REG-2, D-TOG-1, D-REG-4).
func (d *Driver) Bound(mem drivers.Memory) bool {
	probe := drivers.Region{Mem: mem}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.bindings {
		if b.region.Overlaps(probe) {
			return true
		}
	}
	return false
}
