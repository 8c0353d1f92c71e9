//go:build zoo_raced_declined_swapped

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): raced_declined_swapped.
//
// B-PUBLISH: after a declined publish, present and absent are swapped (raced
// vs declined)
const zoo = "raced_declined_swapped"
