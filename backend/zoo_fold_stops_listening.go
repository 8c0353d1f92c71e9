//go:build zoo_fold_stops_listening

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): fold_stops_listening.
//
// B-ACCESS: a call's changes are ignored once its results are folded, so
// later evidence is lost
const zoo = "fold_stops_listening"
