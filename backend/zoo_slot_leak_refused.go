//go:build zoo_slot_leak_refused

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): slot_leak_refused.
//
// B-BOUND: a refused submit never gives its in-flight slot back
const zoo = "slot_leak_refused"
