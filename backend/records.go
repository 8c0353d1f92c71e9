package backend

import (
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/slab"
)

// records carves what every admission makes (the attempt, its batches and
// calls, their rows, flags and look-up keys), and the bindings, out of
// slabs: a run admits thousands of attempts, and each record lives about as
// long as the backend that made it, so one allocation per chunk replaces one
// per record. Slab memory is never handed out twice, so a record (or a copy
// given to a caller, or rows and keys a driver keeps) stays valid for as long
// as anyone holds it. The backend's event context guards the slabs, like
// every other field.
type records struct {
	attempts slab.Of[Attempt]
	batches  slab.Of[batch]
	calls    slab.Of[call]
	rows     slab.Of[drivers.Row]
	bools    slab.Of[bool]
	keys     slab.Of[string]
	bindings slab.Of[binding]
}

// reserve sizes the first chunks: a binding per region, and for a attempts
// (Config.Attempts) about the 90th percentile of what an endpoint of the
// engine makes (600 one-endpoint seeds of 2, 35 and 100 ops), but the
// calls' median (a fuzz input's ops make fewer calls); flags and look-up
// keys about their median.
func (b *Backend) reserve(a int) {
	b.mem.bindings.Reserve(len(b.regions))
	if a > 0 {
		b.mem.attempts.Reserve(a*4/5 + 1)
		b.mem.batches.Reserve(2 * a)
		b.mem.calls.Reserve(a/2 + 3)
		b.mem.rows.Reserve(7*a + 2)
		b.mem.bools.Reserve(8 * a)
		b.mem.keys.Reserve(a + 8)
	}
}

// rowBuf returns an empty row slice with room for n rows: appends up to n
// stay in the slab, one more copies.
func (m *records) rowBuf(n int) []drivers.Row { return m.rows.Make(n)[:0] }

// cloneRows copies rows (nil for none, like append([]drivers.Row(nil), …)).
func (m *records) cloneRows(rows []drivers.Row) []drivers.Row {
	if len(rows) == 0 {
		return nil
	}
	c := m.rows.Make(len(rows))
	copy(c, rows)
	return c
}

// cloneBools copies bs (nil for none, like append([]bool(nil), …)).
func (m *records) cloneBools(bs []bool) []bool {
	if len(bs) == 0 {
		return nil
	}
	c := m.bools.Make(len(bs))
	copy(c, bs)
	return c
}
