package refine

import (
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/slab"
)

// cut is B-CUT, written from the contract: masked-in rows in view order; a
// new call starts when the current one holds max rows or already names the
// next row's key. Each batch's rows are a full slice of rows (capacity ends
// at the batch, so an append to one never writes into the next). The
// batches are carved from s.
func cut(s *slab.Of[batch], a *attempt, rows []drivers.Row, max int) []batch {
	// One walk finds where each batch ends (a view's batches are a handful:
	// the ends stay on the stack); the batches are carved once their number
	// is known.
	var buf [16]int
	ends := buf[:0]
	start := 0
	for i := range rows {
		if i-start == max || hasKey(rows[start:i], rows[i].Key) {
			ends = append(ends, i)
			start = i
		}
	}
	if start < len(rows) {
		ends = append(ends, len(rows))
	}
	out := s.Make(len(ends))
	start = 0
	for i, end := range ends {
		out[i] = batch{a: a, rows: rows[start:end:end]}
		start = end
	}
	return out
}

// hasKey reports whether a row of rows has key (a batch is at most
// MaxRowsPerOp rows: a scan).
func hasKey(rows []drivers.Row, key string) bool {
	for i := range rows {
		if rows[i].Key == key {
			return true
		}
	}
	return false
}
