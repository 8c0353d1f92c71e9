//go:build zoo_drain_no_wait

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): drain_no_wait.
//
// D-DRAIN-1: shutdown does not wait for the driver to drain
const zoo = "drain_no_wait"
