package memdriver

import (
	"github.com/storesim/storesim/drivers"
)

// The bodies of the plants of package broken (see [Plant]) that do not fit
// on one line at their spot. Nothing here runs unless Config.Plant names the
// plant; each function names the plant and the rule it breaks.

// maxTellPolls bounds how long whenTold waits for the callback it waits on.
const maxTellPolls = 1000

// whenTold runs fn once every change of c so far has been told to its
// callback (the last callback that ran saw the current version), polling
// one transfer step at a time. fn runs with d.mu held and must release it.
// It gives up when the driver shuts down.
func (d *Driver) whenTold(c *call, label string, fn func()) {
	tries := 0
	var poll func()
	poll = func() {
		d.mu.Lock()
		switch {
		case d.shut:
			d.mu.Unlock()
		case c.delivered < c.version || c.running:
			if tries++; tries < maxTellPolls {
				d.after(c, label, poll)
			}
			d.mu.Unlock()
		default:
			fn()
		}
	}
	d.after(c, label, poll)
}

// writeAfterEnd is LiesAboutAccess (D-ACCESS-END): once the callback has
// told the caller access ENDED, the object of the first FETCH OK row is
// written into its slot once more. Caller holds d.mu.
func (d *Driver) writeAfterEnd(c *call) {
	if c.dir != drivers.Fetch {
		return
	}
	for i, st := range c.results {
		if st != drivers.OK {
			continue
		}
		d.whenTold(c, d.lblLate, func() {
			reg, data := c.regions[i], c.rs[i].data
			d.mu.Unlock()
			_ = reg.Mem.Write(drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(c.rows[i].Slot), data)
		})
		return
	}
}

// signalEarly is EarlySignal (D-CB-1): instead of setting access ENDED and
// then signalling, it signals once the caller has been told everything so
// far (a callback that finds nothing new), and sets ENDED only after that
// callback ran, without signalling again. Caller holds d.mu.
func (d *Driver) signalEarly(c *call) {
	if c.plantDue {
		return
	}
	c.plantDue = true
	d.whenTold(c, d.lblWake, func() {
		d.changed(c) // the signal, before the state changed
		d.whenTold(c, d.lblSettle, func() {
			if c.access.CanBecome(drivers.AccessEnded) && c.access != drivers.AccessEnded {
				c.access = drivers.AccessEnded // the change, never signalled
				for _, h := range c.handles {
					if b := d.bindings[h]; b != nil {
						b.users--
					}
				}
			}
			d.mu.Unlock()
		})
		d.unlockAndWake()
	})
}

// told reports whether c has reached its final state: every row final and
// access evidence. Caller holds d.mu.
func (c *call) told() bool {
	if !c.access.Evidenced() {
		return false
	}
	for _, st := range c.results {
		if !st.Final() {
			return false
		}
	}
	return true
}

// holdBackCallback is SignalAfterShutdown (D-CB-5): it takes one owed
// callback out of owed (or, when none is owed, the callback of the last
// call submitted) to be run through the runtime after Shutdown returned.
// Caller holds d.mu.
func (d *Driver) holdBackCallback(owed []*call) ([]*call, func()) {
	if n := len(owed); n > 0 {
		return owed[:n-1], owed[n-1].onChange
	}
	if c := d.lastSubmitted; c != nil && c.onChange != nil {
		return owed, c.onChange
	}
	return owed, nil
}

// finishInline is BlockingCancel (D-CAN-1): Cancel does the remaining work
// of every row without a result synchronously — reads the object and writes
// the slot (FETCH) or reads the slot and stores it (PUBLISH) — and ends
// access before it returns, instead of requesting a cancel. It reports
// false when every row already had its result. Caller holds d.mu.
func (d *Driver) finishInline(c *call) bool {
	worked := false
	for i := range c.rows {
		if c.results[i].Final() {
			continue
		}
		worked = true
		rs, row, reg := &c.rs[i], c.rows[i], c.regions[i]
		by, off := drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(row.Slot)
		st := drivers.OK
		switch c.dir {
		case drivers.Fetch:
			obj, ok := d.store.Get(row.Key)
			switch {
			case !ok && d.caps.AbsentIsMiss:
				st = drivers.Miss
			case !ok || len(obj) != reg.SlotBytes:
				st = drivers.Fault
			case reg.Mem.Write(by, off, obj) != nil:
				st = drivers.Fault
			}
		case drivers.Publish:
			buf := make([]byte, reg.SlotBytes)
			if reg.Mem.Read(by, off, buf) != nil {
				st = drivers.Fault
			} else {
				d.store.put(Origin{Driver: d.name, Call: c.id, Row: i}, row.Key, buf)
			}
		}
		rs.phase = rowDone
		d.completeRow(c, i, st)
	}
	if !worked {
		return false
	}
	c.abandoned, c.inFlight = true, 0 // the scheduled steps of the transfer do nothing now
	d.setAccess(c, drivers.AccessEnded)
	return true
}

// distinctKeys is AcceptsRepeatedKey's validation (D-BATCH-KEYS): the batch
// with every repeated key renamed, so that Validate checks everything but
// the keys' distinctness.
func distinctKeys(b drivers.RowBatch) drivers.RowBatch {
	rows := append([]drivers.Row(nil), b.Rows...)
	seen := map[string]bool{}
	for i, r := range rows {
		if seen[r.Key] {
			rows[i].Key = r.Key + "\x00repeat"
			for seen[rows[i].Key] {
				rows[i].Key += "!"
			}
		}
		seen[rows[i].Key] = true
	}
	return drivers.RowBatch{Dir: b.Dir, Rows: rows}
}

// keyedSlots is AcceptsRepeatedKey's transport (D-BATCH-KEYS): it keeps one
// destination per key, so a row whose key repeats an earlier row's moves
// through the earlier row's slot.
func keyedSlots(rows []drivers.Row) {
	for j := range rows {
		for i := range rows[:j] {
			if rows[i].Key == rows[j].Key {
				rows[j].Handle, rows[j].Slot = rows[i].Handle, rows[i].Slot
				break
			}
		}
	}
}

// writeOutside is OutsideSlot (D-SUB-6): with the last chunk of a FETCH OK
// row it writes two bytes across the slot's end — the slot's true last byte
// and one byte of the next slot — or, for the region's last slot, across
// its start.
func (d *Driver) writeOutside(c *call, i int) {
	reg, rs := c.regions[i], &c.rs[i]
	if rs.final != drivers.OK || len(rs.data) != reg.SlotBytes {
		return
	}
	by, start := drivers.Toucher{Call: c.id, Row: i}, reg.SlotOffset(c.rows[i].Slot)
	end := start + reg.SlotBytes
	switch {
	case end < reg.Mem.Len():
		_ = reg.Mem.Write(by, end-1, []byte{rs.data[reg.SlotBytes-1], 0xEE})
	case start > 0:
		_ = reg.Mem.Write(by, start-1, []byte{0xEE, rs.data[0]})
	}
}

// tearPublish is TornPublish (D-SUB-5): the key becomes visible holding only
// the first half of the object (the rest zero), and the whole object lands
// twenty step delays later, when the row gets its result. It reports false
// when the store already holds the key (first writer wins: nothing to
// tear). Caller holds d.mu.
func (d *Driver) tearPublish(c *call, i int) bool {
	rs, key := &c.rs[i], c.rows[i].Key
	by := Origin{Driver: d.name, Call: c.id, Row: i}
	if d.store.Has(key) {
		return false
	}
	torn := make([]byte, len(rs.data))
	copy(torn, rs.data[:len(rs.data)/2])
	d.store.put(by, key, torn)
	d.rt.After(20*d.step, d.lblChunk, func() {
		d.mu.Lock()
		if d.shut {
			d.mu.Unlock()
			return
		}
		d.store.evict(by, key)
		d.store.put(by, key, rs.data)
		if !c.plan.wrongLength {
			d.completeRow(c, i, drivers.OK)
		}
		c.inFlight--
		d.maybeEnd(c)
		d.unlockAndWake()
	})
	return true
}

// closeByAddress is CloseByAddress (D-REG-3): closing a stale handle closes
// whatever live registration now covers the memory the handle once named.
// Caller holds d.mu.
func (d *Driver) closeByAddress(h drivers.Handle) error {
	r, ok := d.closedRegions[h]
	if !ok {
		return nil
	}
	for _, b := range d.sortedBindings() {
		if b.state == bindLive && b.region.Overlaps(r) {
			return d.closeOne(b)
		}
	}
	return nil
}

// rememberClosed keeps what a closed handle named, for closeByAddress.
// Caller holds d.mu.
func (d *Driver) rememberClosed(b *binding) {
	if d.closedRegions == nil {
		d.closedRegions = map[drivers.Handle]drivers.Region{}
	}
	d.closedRegions[b.h] = b.region
}

// registersAfterShutdown is RegistersAfterShutdown (D-REG-5): a
// registration during or after Shutdown is not refused (nor undone when
// Shutdown raced it). Caller holds d.mu.
func (d *Driver) registersAfterShutdown() bool {
	return d.plant == "RegistersAfterShutdown" && d.shut && d.cfgErr == nil && d.quarantine == ""
}
