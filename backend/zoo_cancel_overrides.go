//go:build zoo_cancel_overrides

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): cancel_overrides.
//
// B-OUTCOME: a cancel overrides a committed delivery
const zoo = "cancel_overrides"
