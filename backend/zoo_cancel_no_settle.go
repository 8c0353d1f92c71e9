//go:build zoo_cancel_no_settle

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): cancel_no_settle.
//
// B-CANCEL: cancel commits but does not re-derive access, so a cancelled
// queued attempt stays PENDING
const zoo = "cancel_no_settle"
