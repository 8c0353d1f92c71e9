package refine

import (
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/slab"
)

// cut is B-CUT, written from the contract: masked-in rows in view order; a
// new call starts when the current one holds max rows or already names the
// next row's key. Each batch's rows are a full slice of rows (capacity ends
// at the batch, so an append to one never writes into the next). The
// batches are carved from s.
func cut(s *slab.Of[batch], a *attempt, rows []drivers.Row, max int) []batch {
	n := 0
	cuts(rows, max, func(int, int) { n++ })
	out := s.Make(n)[:0]
	cuts(rows, max, func(start, end int) {
		out = append(out, batch{a: a, rows: rows[start:end:end]})
	})
	return out
}

// cuts calls f with the bounds of each batch of rows.
func cuts(rows []drivers.Row, max int, f func(start, end int)) {
	start := 0
	for i, r := range rows {
		cur := rows[start:i]
		if len(cur) == max || slices.ContainsFunc(cur, func(c drivers.Row) bool { return c.Key == r.Key }) {
			f(start, i)
			start = i
		}
	}
	if start < len(rows) {
		f(start, len(rows))
	}
}
