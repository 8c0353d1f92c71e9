//go:build zoo_lookup_outage_as_miss

package backend

// zoo names the planted bug of this build (see zoo.go and
// broken/zoo): lookup_outage_as_miss.
//
// B-FETCH/B-PUBLISH: a look-up outage is read as "every key absent"
const zoo = "lookup_outage_as_miss"
