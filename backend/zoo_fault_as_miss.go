//go:build zoo_fault_as_miss

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): fault_as_miss.
//
// B-FETCH: a FAULT row is folded as a miss, so the attempt is Delivered
// partially
const zoo = "fault_as_miss"
