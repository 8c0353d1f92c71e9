//go:build zoo_timeout_no_labels

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): timeout_no_labels.
//
// B-SHUT: a drain that timed out reports a clean shutdown (no labels)
const zoo = "timeout_no_labels"
