//go:build zoo_dropped_still_queued

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): dropped_still_queued.
//
// B-CANCEL: dropped batches are marked dropped but left in the dispatch
// queue
const zoo = "dropped_still_queued"
