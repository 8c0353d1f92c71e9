package drivers

import "slices"

// Handle names one live registration of one driver. Handles are never reused
// by a driver instance, so a stale handle can never close a newer
// registration of the same memory (D-REG-3).
type Handle uint64

// CallID names one driver call; unique per driver instance.
type CallID uint64

// Row is one whole slot moved under one store key. Position is where the row
// sits in the caller's view so results fold back into masks.
type Row struct {
	Key      string
	Handle   Handle
	Slot     int
	Position int
}

// View is what a caller submits: an ordered list of rows and, per row, a mask
// bit saying whether it takes part. Masked-out rows are never sent.
type View struct {
	Rows []Row
	Mask []bool
}

// Check reports a malformed view: mask and rows of different lengths, or a
// row whose Position is not its index.
func (v View) Check() error {
	if len(v.Mask) != len(v.Rows) {
		return invalid("view has %d rows but %d mask bits", len(v.Rows), len(v.Mask))
	}
	for i, r := range v.Rows {
		if r.Position != i {
			return invalid("view row %d has position %d", i, r.Position)
		}
	}
	return nil
}

// Active counts masked-in rows.
func (v View) Active() int {
	n := 0
	for _, m := range v.Mask {
		if m {
			n++
		}
	}
	return n
}

// RowBatch is the rows of one driver call. It is immutable once submitted.
type RowBatch struct {
	Dir  Direction
	Rows []Row
}

// Keys lists the batch's keys in row order.
func (b RowBatch) Keys() []string {
	keys := make([]string, len(b.Rows))
	for i, r := range b.Rows {
		keys[i] = r.Key
	}
	return keys
}

// LiveRegion answers which region a handle registers, if it is live.
type LiveRegion func(Handle) (Region, bool)

// Validate enforces D-BATCH-VALID and D-BATCH-KEYS against a driver's
// capabilities and live registrations: a supported direction; 1..MaxRowsPerOp
// rows; pairwise distinct keys; no two rows on one (region, slot); every row on
// a live registration and inside its slots. The error wraps
// [ErrInvalidSubmission]. A driver calls it before touching memory or the
// store (D-SUB-1).
func (b RowBatch) Validate(caps Capabilities, live LiveRegion) error {
	if b.Dir != Fetch && b.Dir != Publish {
		return invalid("direction %d", b.Dir)
	}
	if !caps.Supports(b.Dir) {
		return invalid("%v not supported by this driver", b.Dir)
	}
	if len(b.Rows) == 0 || len(b.Rows) > caps.MaxRowsPerOp {
		return invalid("%d rows, want 1..%d (MaxRowsPerOp)", len(b.Rows), caps.MaxRowsPerOp)
	}
	// A batch is at most MaxRowsPerOp rows, a handful: comparing each row
	// with the earlier ones is cheaper than two maps.
	for i, r := range b.Rows {
		if r.Key == "" {
			return invalid("row %d has an empty key", i)
		}
		if j := slices.IndexFunc(b.Rows[:i], func(o Row) bool { return o.Key == r.Key }); j >= 0 {
			return invalid("D-BATCH-KEYS: rows %d and %d both name key %q", j, i, r.Key)
		}
		reg, ok := live(r.Handle)
		if !ok {
			return invalid("row %d: handle %d is not a live registration", i, r.Handle)
		}
		if r.Slot < 0 || r.Slot >= reg.Slots {
			return invalid("row %d: slot %d outside region %q (%d slots)", i, r.Slot, reg.Label, reg.Slots)
		}
		if j := slices.IndexFunc(b.Rows[:i], func(o Row) bool { return o.Handle == r.Handle && o.Slot == r.Slot }); j >= 0 {
			return invalid("rows %d and %d both use slot %d of region %q", j, i, r.Slot, reg.Label)
		}
	}
	return nil
}
