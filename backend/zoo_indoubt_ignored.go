//go:build zoo_indoubt_ignored

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): indoubt_ignored.
//
// S-HOLD: an in-doubt registration is treated as refused, so its regions are
// never reported
const zoo = "indoubt_ignored"
