//go:build zoo_any_call_ended

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): any_call_ended.
//
// B-ACCESS: the attempt is ENDED as soon as one of its calls is
const zoo = "any_call_ended"
