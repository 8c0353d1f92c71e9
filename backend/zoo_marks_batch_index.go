//go:build zoo_marks_batch_index

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): marks_batch_index.
//
// B-FETCH: served marks use the row's index in its batch, not its view
// position
const zoo = "marks_batch_index"
