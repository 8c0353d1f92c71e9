//go:build zoo_outcome_is_end

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): outcome_is_end.
//
// B-ACCESS: a committed outcome is taken as proof that access ended
const zoo = "outcome_is_end"
