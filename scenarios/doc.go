// Package scenarios runs storesim's scenario files: human-readable scripts
// that state one interleaving of endpoints, drivers and faults exactly, and
// the output the run must print.
package scenarios
