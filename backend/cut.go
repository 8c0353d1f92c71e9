package backend

import "github.com/storesim/storesim/drivers"

// Cut is B-CUT: it scans rows in order and starts a new batch when the
// current one holds max rows or already names the next row's key, so every
// batch has 1..max rows with pairwise distinct keys (D-BATCH-KEYS) and row
// order (and so mask positions) is preserved. Look-ups use the same batches.
// A max below 1 is treated as 1.
func Cut(rows []drivers.Row, max int) [][]drivers.Row { return appendCuts(nil, rows, max) }

// appendCuts is Cut appending to out, so admission can reuse one slice of
// batches from view to view.
func appendCuts(out [][]drivers.Row, rows []drivers.Row, max int) [][]drivers.Row {
	if max < 1 {
		max = 1
	}
	start := 0
	for i := range rows {
		if i > start && cutHere(rows[start:i], rows[i], max) {
			out = append(out, rows[start:i:i])
			start = i
		}
	}
	if start < len(rows) {
		out = append(out, rows[start:len(rows):len(rows)])
	}
	return out
}

// cutHere decides whether next must start a new batch after cur. The key
// scan is linear: batches hold at most MaxRowsPerOp rows.
func cutHere(cur []drivers.Row, next drivers.Row, max int) bool {
	if len(cur) >= max {
		return true
	}
	for _, r := range cur {
		if r.Key == next.Key {
			return true
		}
	}
	return false
}
