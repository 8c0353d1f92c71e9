package backend

import "github.com/storesim/storesim/drivers"

// attemptInline is a small attempt's storage: the rows, mask and
// served-so-far bits of a view of up to 8 rows, and up to 4 batches, live
// in the Attempt itself — one allocation per attempt instead of six or
// more. A larger view or cut takes the heap as before (newAttempt).
type attemptInline struct {
	rows    [8]drivers.Row
	mask    [8]bool
	acc     [8]bool
	batches [4]batch
	bptrs   [4]*batch
}
