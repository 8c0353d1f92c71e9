//go:build zoo_mask_ignored

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): mask_ignored.
//
// B-SUBMIT: masked-out rows are sent to the store too
const zoo = "mask_ignored"
