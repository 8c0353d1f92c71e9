//go:build zoo_marks_shift

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): marks_shift.
//
// B-FETCH: served marks are set one view position too far
const zoo = "marks_shift"
