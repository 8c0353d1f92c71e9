//go:build zoo_cancel_not_forwarded

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): cancel_not_forwarded.
//
// B-CANCEL: cancel is never forwarded to in-flight calls
const zoo = "cancel_not_forwarded"
