package refine

import (
	"slices"

	"github.com/storesim/storesim/drivers"
)

// cut is B-CUT, written from the contract: masked-in rows in view order; a
// new call starts when the current one holds max rows or already names the
// next row's key. Each batch's rows are a full slice of rows (capacity ends
// at the batch, so an append to one never writes into the next).
func cut(a *attempt, rows []drivers.Row, max int) []batch {
	n := 0
	cuts(rows, max, func(int, int) { n++ })
	out := make([]batch, 0, n) // one allocation for the attempt's batches
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

// slab hands out zeroed T's from chunks of up to 8: a model's calls cost a
// few allocations, not one each, and at most 7 unused slots. A chunk is
// never moved, so pointers into it stay valid.
type slab[T any] struct {
	free []T
	size int // of the last chunk
}

func (s *slab[T]) alloc() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 2), 8)
		s.free = make([]T, s.size)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// carve returns n zeroed T's from *buf, a chunk of at least chunk T's
// allocated when *buf has too little left: a full slice (its capacity ends
// at n, so an append never writes into the next one's).
func carve[T any](buf *[]T, n, chunk int) []T {
	if cap(*buf)-len(*buf) < n {
		*buf = make([]T, 0, max(n, chunk))
	}
	b := *buf
	*buf = b[:len(b)+n]
	return b[len(b) : len(b)+n : len(b)+n]
}
