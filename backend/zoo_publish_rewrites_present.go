//go:build zoo_publish_rewrites_present

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): publish_rewrites_present.
//
// B-PUBLISH: keys found present are published again (merge, not replace, is
// left to the store)
const zoo = "publish_rewrites_present"
