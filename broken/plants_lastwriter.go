package broken

import "github.com/storesim/storesim/drivers"

// servesLastWriter is ServesLastWriter (D-SUB-4): a client-side near cache
// that remembers, per key, the object of the last PUBLISH it sent — also
// one the store declined to store because it already held the key (first
// writer wins) — and serves it to every FETCH of the key the store answers
// OK. The store keeps the first object; the driver serves the last writer's.
// It fires only when a key is published again while held, so every check
// that never publishes one key twice stays quiet.
func (w *driver) servesLastWriter() {
	near := map[string][]byte{}             // key → the object last published (w.mu)
	reading := map[drivers.Toucher][]byte{} // a PUBLISH row's bytes so far (w.mu)
	w.read = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if err := m.Memory.Read(by, off, p); err != nil {
			return err
		}
		row, ok := w.row(by)
		if !ok {
			return nil
		}
		start := m.r.SlotOffset(row.Slot)
		w.mu.Lock()
		defer w.mu.Unlock()
		obj := reading[by]
		if obj == nil {
			obj = make([]byte, m.r.SlotBytes)
			reading[by] = obj
		}
		copy(obj[off-start:], p)
		if m.ends(row, off, len(p)) {
			near[row.Key] = obj // the caller's object, whether or not the store keeps it
			delete(reading, by)
		}
		return nil
	}
	w.write = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if row, ok := w.row(by); ok {
			start := m.r.SlotOffset(row.Slot)
			w.mu.Lock()
			obj := near[row.Key]
			w.mu.Unlock()
			if len(obj) == m.r.SlotBytes && off >= start && off-start+len(p) <= len(obj) {
				p = append([]byte(nil), obj[off-start:off-start+len(p)]...) // the near cache's copy, not the store's
			}
		}
		return m.Memory.Write(by, off, p)
	}
}
