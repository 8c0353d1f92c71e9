//go:build zoo_cancel_overrides

package backend

// zoo names the planted bug of this build (see zoo.go and
// backend/zootest): cancel_overrides.
//
// B-OUTCOME: a cancel overrides a committed delivery
const zoo = "cancel_overrides"
