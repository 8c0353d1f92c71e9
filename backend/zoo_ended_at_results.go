//go:build zoo_ended_at_results

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): ended_at_results.
//
// B-ACCESS: a batch whose results are folded counts as ENDED before its call
// has access evidence
const zoo = "ended_at_results"
