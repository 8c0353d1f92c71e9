//go:build zoo_hold_early

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): hold_early.
//
// B-SHUT: shutdown reports no labels at once when no attempt lacks an
// outcome (access still pending)
const zoo = "hold_early"
