package broken

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

// The planted bugs that touch the caller's memory wrongly: LiesAboutAccess,
// OverwritesOnPublish, TornPublish, AcceptsRepeatedKey, OutsideSlot (the table
// of every bug is in plants.go).

// writeAfterEnd is LiesAboutAccess (D-ACCESS-END): when a FETCH ends
// quietly (PENDING → ENDED, which the Access hook sees), it polls, one step
// delay at a time, until a callback has told the caller, then writes the
// slot of the call's first OK row once more.
func (w *driver) writeAfterEnd() {
	const maxPolls = 1000
	var mu sync.Mutex // the hook runs under the reference driver's lock
	rnd := w.rt.Rand(w.label + "/" + w.inst)
	told := map[drivers.CallID]bool{} // quiet ends waiting; true once told
	var poll func(id drivers.CallID, tries int)
	after := func(id drivers.CallID, tries int) {
		mu.Lock()
		d := time.Duration(1 + rnd.Intn(int(w.step)))
		mu.Unlock()
		w.rt.After(d, w.label+" write after end", func() { poll(id, tries) })
	}
	poll = func(id drivers.CallID, tries int) {
		if w.isShutting() {
			return
		}
		mu.Lock()
		done := told[id]
		if done || tries >= maxPolls {
			delete(told, id)
		}
		mu.Unlock()
		w.mu.Lock()
		c := w.calls[id]
		w.mu.Unlock()
		switch {
		case done:
			if i := slices.Index(c.Call.Results(), drivers.OK); i >= 0 {
				w.writeAgain(c, i)
			}
		case tries < maxPolls:
			after(id, tries+1)
		}
	}
	w.hooks = &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
		if a.From == drivers.AccessPending && a.To == drivers.AccessEnded {
			w.mu.Lock()
			c := w.calls[a.Call]
			w.mu.Unlock()
			if c != nil && c.b.Dir == drivers.Fetch {
				mu.Lock()
				told[a.Call] = false
				mu.Unlock()
				after(a.Call, 1)
			}
		}
		return a.To
	}}
	w.notify = func(c *call, user func()) {
		user()
		mu.Lock()
		if _, ok := told[c.ID()]; ok {
			told[c.ID()] = true
		}
		mu.Unlock()
	}
}

// writeAgain writes row i of c's slot once more, with the bytes the slot
// holds: the touch is the bug, and it corrupts no one else's data when the
// slot was lent again meanwhile.
func (w *driver) writeAgain(c *call, i int) {
	row := c.b.Rows[i]
	reg := w.region(row.Handle)
	by, off := drivers.Toucher{Call: c.ID(), Row: i}, reg.SlotOffset(row.Slot)
	buf := make([]byte, reg.SlotBytes)
	if reg.Mem.Read(by, off, buf) == nil {
		_ = reg.Mem.Write(by, off, buf)
	}
}

// dropHeldKey is OverwritesOnPublish (D-SUB-4): as a PUBLISH row's transfer
// reads the last byte of its slot, a key the store already holds is
// dropped, so the put that follows replaces the first object.
func (w *driver) dropHeldKey(m *memory, by drivers.Toucher, off int, p []byte) error {
	if err := m.Memory.Read(by, off, p); err != nil {
		return err
	}
	if row, ok := w.row(by); ok && m.ends(row, off, len(p)) && w.store.Has(row.Key) {
		w.store.Evict(row.Key)
	}
	return nil
}

// tearPublish is TornPublish (D-SUB-5): a PUBLISH row's transfer reads only
// the first half of its slot (the rest as zeros), so the key becomes visible
// holding half its object; twenty step delays later the whole object
// replaces the torn one.
func (w *driver) tearPublish() func(*memory, drivers.Toucher, int, []byte) error {
	whole := map[drivers.Toucher][]byte{} // the bytes really read, per row
	return func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if err := m.Memory.Read(by, off, p); err != nil {
			return err
		}
		row, ok := w.row(by)
		if !ok {
			return nil
		}
		start, half := m.r.SlotOffset(row.Slot), m.r.SlotBytes/2
		w.mu.Lock()
		obj := whole[by]
		if obj == nil {
			obj = make([]byte, m.r.SlotBytes)
			whole[by] = obj
		}
		copy(obj[off-start:], p)
		w.mu.Unlock()
		for j := range p {
			if off-start+j >= half {
				p[j] = 0
			}
		}
		if !m.ends(row, off, len(p)) || w.store.Has(row.Key) {
			return nil
		}
		torn := make([]byte, len(obj))
		copy(torn, obj[:half])
		w.rt.After(20*w.step, w.label+" rest of publish", func() {
			w.mu.Lock()
			delete(whole, by)
			shut := w.shutting
			w.mu.Unlock()
			if cur, ok := w.store.Get(row.Key); !shut && ok && bytes.Equal(cur, torn) {
				w.store.Evict(row.Key)
				w.store.Put(row.Key, obj)
			}
		})
		return nil
	}
}

// distinctKeys is AcceptsRepeatedKey's validation (D-BATCH-KEYS): the batch
// with every repeated key renamed, so that validation checks everything but
// the keys' distinctness.
func distinctKeys(b drivers.RowBatch) drivers.RowBatch {
	rows := slices.Clone(b.Rows)
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

// keyedSlots is AcceptsRepeatedKey's transport (D-BATCH-KEYS): one
// destination per key, so a row whose key repeats an earlier row's moves
// through the earlier row's slot.
func keyedSlots(b drivers.RowBatch) drivers.RowBatch {
	rows := slices.Clone(b.Rows)
	for j := range rows {
		for i := range rows[:j] {
			if rows[i].Key == rows[j].Key {
				rows[j].Handle, rows[j].Slot = rows[i].Handle, rows[i].Slot
				break
			}
		}
	}
	return drivers.RowBatch{Dir: b.Dir, Rows: rows}
}

// writeOutside is OutsideSlot (D-SUB-6): with the last chunk of a FETCH row
// of the object's exact size it writes two bytes across the slot's end —
// the slot's true last byte and one byte of the next slot — or, for the
// region's last slot, across its start. Once per row.
func (w *driver) writeOutside() func(*memory, drivers.Toucher, int, []byte) error {
	done := map[drivers.Toucher]bool{}
	return func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if err := m.Memory.Write(by, off, p); err != nil {
			return err
		}
		row, ok := w.row(by)
		if !ok || !m.ends(row, off, len(p)) {
			return nil
		}
		obj, ok := w.store.Get(row.Key)
		w.mu.Lock()
		again := done[by]
		done[by] = true
		w.mu.Unlock()
		if !ok || len(obj) != m.r.SlotBytes || again {
			return nil
		}
		start := m.r.SlotOffset(row.Slot)
		end := start + m.r.SlotBytes
		switch {
		case end < m.Len():
			_ = m.Memory.Write(by, end-1, []byte{obj[m.r.SlotBytes-1], 0xEE})
		case start > 0:
			_ = m.Memory.Write(by, start-1, []byte{0xEE, obj[0]})
		}
		return nil
	}
}

// validateLate is ValidatesLate (D-SUB-1): the batch is checked row by row
// as each row starts, and a row starts by reading its slot (a PUBLISH's
// bytes copied into a send buffer; a FETCH's slot read for its receive
// descriptor). So the rows before the first invalid one are touched before
// the reference driver refuses the batch. A valid batch passes untouched.
func (w *driver) validateLate(b drivers.RowBatch) error {
	w.mu.Lock()
	regions := make([]drivers.Region, len(b.Rows))
	known := make([]bool, len(b.Rows))
	for i, r := range b.Rows {
		regions[i], known[i] = w.regions[r.Handle]
	}
	w.mu.Unlock()
	bad := -1
	for i, r := range b.Rows {
		dup := slices.ContainsFunc(b.Rows[:i], func(o drivers.Row) bool {
			return o.Key == r.Key || o.Handle == r.Handle && o.Slot == r.Slot
		})
		if r.Key == "" || !known[i] || r.Slot < 0 || r.Slot >= regions[i].Slots || dup {
			bad = i
			break
		}
	}
	for i := range max(bad, 0) {
		reg := regions[i]
		buf := make([]byte, reg.SlotBytes)
		_ = reg.Mem.Read(drivers.Toucher{Row: i}, reg.SlotOffset(b.Rows[i].Slot), buf)
	}
	return nil
}
