//go:build zoo_nocut_key

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): nocut_key.
//
// B-CUT: no cut at a repeated key, so a batch names one key twice (D-BATCH-
// KEYS)
const zoo = "nocut_key"
