//go:build zoo_unprovable_as_ended

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): unprovable_as_ended.
//
// B-ACCESS: an UNPROVABLE call counts as ENDED, so its slots are released
// for reuse
const zoo = "unprovable_as_ended"
