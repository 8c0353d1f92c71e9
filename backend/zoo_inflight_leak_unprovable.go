//go:build zoo_inflight_leak_unprovable

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): inflight_leak_unprovable.
//
// B-BOUND: an UNPROVABLE call keeps its in-flight slot
const zoo = "inflight_leak_unprovable"
