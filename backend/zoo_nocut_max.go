//go:build zoo_nocut_max

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): nocut_max.
//
// B-CUT: no cut at MaxRowsPerOp
const zoo = "nocut_max"
