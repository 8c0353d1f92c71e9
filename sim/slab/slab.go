// Package slab hands out many small values of one type from a few chunks,
// so a run that makes thousands of records (calls, attempts, rows) pays
// one allocation per chunk instead of one per record. A chunk lives as long
// as any value carved from it: use a slab for records that live about as
// long as the run that makes them.
//
// A slab is not safe for concurrent use; the caller's lock guards it.
package slab

import "unsafe"

// A chunk holds up to maxChunk values, or more small ones up to
// maxChunkBytes: bounded, so a short run does not zero (and keep) a chunk it
// never fills.
const (
	maxChunk      = 64
	maxChunkBytes = 1024
)

// firstChunk is the length of a slab's first chunk without Reserve, and
// the least of a later one's: a 100-op run makes a
// few dozen records of most kinds, which 16 then 32 hold in two chunks
// (from 4, it took four: 1,294 → 1,234 allocations and 587 → 612 KB per
// seed, BenchmarkRunSeed).
const firstChunk = 16

// Of carves T's out of chunks that double in length up to chunkLen.
// The zero value is ready for use.
type Of[T any] struct {
	free []T
	next int // length of the next chunk (0: firstChunk; below 0: Reserve's, negated)
	_    struct{}
}

// Reserve makes the first chunk hold n values (at most chunkLen): an
// owner that knows about how many records its run makes neither zeroes
// and keeps 16 for a short run's two nor grows through 16, 32, … for a
// long one. The chunk after it holds half as many (at least firstChunk),
// and from there they double. Only a Reserve before the first value
// counts; n <= 0 does nothing.
func (s *Of[T]) Reserve(n int) {
	if s.next == 0 && n > 0 {
		s.next = -n
	}
}

// New returns a pointer to a zeroed T.
func (s *Of[T]) New() *T {
	if len(s.free) == 0 {
		s.grow(1)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// Make returns n zeroed T's as a full slice: its capacity ends at n, so an
// append to it copies instead of writing over the next caller's values.
func (s *Of[T]) Make(n int) []T {
	if n > chunkLen[T]()/2 {
		return make([]T, n)
	}
	if len(s.free) < n {
		s.grow(n)
	}
	v := s.free[:n:n]
	s.free = s.free[n:]
	return v
}

func (s *Of[T]) grow(n int) {
	size := s.next
	switch {
	case size < 0: // Reserve's
		size = -size
	case size == 0:
		size = firstChunk
	}
	size = min(max(size, n), chunkLen[T]()) // n is at most half a chunk (Make)
	s.free = make([]T, size)
	if s.next < 0 {
		// What outgrows a reserved chunk is seldom as much again: the
		// next holds half as many, and from there they double.
		s.next = max(size/2, firstChunk)
	} else {
		s.next = max(2*size, firstChunk)
	}
}

// chunkLen is the most T's a chunk holds.
func chunkLen[T any]() int {
	var v T
	return max(maxChunk, maxChunkBytes/max(1, int(unsafe.Sizeof(v))))
}
