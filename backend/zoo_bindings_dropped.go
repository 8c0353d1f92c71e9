//go:build zoo_bindings_dropped

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): bindings_dropped.
//
// B-SHUT: earlier bindings are forgotten when a later registration fails
const zoo = "bindings_dropped"
