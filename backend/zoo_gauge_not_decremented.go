//go:build zoo_gauge_not_decremented

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): gauge_not_decremented.
//
// B-BOUND: the unprovable gauge is not decremented when proof arrives
const zoo = "gauge_not_decremented"
