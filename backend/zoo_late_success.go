//go:build zoo_late_success

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): late_success.
//
// B-OUTCOME: a late success overrides a committed cancel
const zoo = "late_success"
