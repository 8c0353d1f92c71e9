//go:build zoo_submit_error_no_escape

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): submit_error_no_escape.
//
// D-SUB-2: a Submit error that is not a sentinel is taken as "nothing
// escaped"
const zoo = "submit_error_no_escape"
