//go:build zoo_cancel_proves_end

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): cancel_proves_end.
//
// B-CANCEL: a forwarded cancel is taken as proof that the call's access
// ended (D-CAN-2)
const zoo = "cancel_proves_end"
