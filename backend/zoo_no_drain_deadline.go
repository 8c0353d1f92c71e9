//go:build zoo_no_drain_deadline

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): no_drain_deadline.
//
// B-SHUT: the drain deadline never fires, so a call that never ends hangs
// shutdown
const zoo = "no_drain_deadline"
