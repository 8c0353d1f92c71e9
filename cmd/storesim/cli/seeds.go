package cli

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/storesim/storesim/sim"
)

// seedSpec is what --seeds says: a range START:COUNT, or random seeds.
type seedSpec struct {
	random       bool
	start, count uint64
}

func (s seedSpec) String() string {
	if s.random {
		return "random"
	}
	return fmt.Sprintf("%d:%d", s.start, s.count)
}

func parseSeeds(s string) (seedSpec, error) {
	if s == "random" {
		return seedSpec{random: true}, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return seedSpec{}, usagef("bad --seeds %q: want START:COUNT (e.g. 0:1000) or random", s)
	}
	start, err1 := strconv.ParseUint(a, 10, 64)
	count, err2 := strconv.ParseUint(b, 10, 64)
	switch {
	case err1 != nil:
		return seedSpec{}, usagef("bad --seeds %q: START %q is not a non-negative integer", s, a)
	case err2 != nil:
		return seedSpec{}, usagef("bad --seeds %q: COUNT %q is not a non-negative integer", s, b)
	case count == 0:
		return seedSpec{}, usagef("bad --seeds %q: COUNT must be at least 1", s)
	case count-1 > math.MaxUint64-start:
		return seedSpec{}, usagef("bad --seeds %q: the range runs past the largest seed %d", s, uint64(math.MaxUint64))
	}
	return seedSpec{start: start, count: count}, nil
}

// shard is --shard I/N: machine I (0-based) of N.
type shard struct{ i, n uint64 }

func parseShard(s string) (shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || n == 0 {
		return shard{}, usagef("bad --shard %q: want I/N with 0 <= I < N (e.g. 0/4 … 3/4)", s)
	}
	if i >= n {
		return shard{}, usagef("bad --shard %q: index %d must be below the shard count %d (shards are numbered from 0)", s, i, n)
	}
	return shard{i, n}, nil
}

// cut returns shard i's part of [start, start+count): the contiguous range
// [start + count*i/n, start + count*(i+1)/n). The parts of i = 0…n-1 tile
// the range exactly once and differ in size by at most one seed. The
// products are computed in 128 bits, so any range works.
func (sh shard) cut(start, count uint64) (uint64, uint64) {
	if sh.n <= 1 {
		return start, count
	}
	lo := mulDiv(count, sh.i, sh.n)
	hi := mulDiv(count, sh.i+1, sh.n)
	return start + lo, hi - lo
}

// mulDiv is a*b/c for b <= c, without overflow.
func mulDiv(a, b, c uint64) uint64 {
	h, l := bits.Mul64(a, b)
	q, _ := bits.Div64(h, l, c) // h < c because b <= c
	return q
}

// seedSource hands out the seeds of a run in order.
type seedSource struct {
	spec  seedSpec
	start uint64
	count uint64
	rng   *sim.Rand
	next  uint64
}

func newSeedSource(spec seedSpec, sh shard, base uint64) *seedSource {
	if spec.random {
		return &seedSource{spec: spec, rng: sim.NewRand(base)}
	}
	start, count := sh.cut(spec.start, spec.count)
	return &seedSource{spec: spec, start: start, count: count}
}

// Next is the next seed; false when the range is done (random seeds never
// end: the budget ends them).
func (s *seedSource) Next() (uint64, bool) {
	if s.spec.random {
		return s.rng.Uint64(), true
	}
	if s.next >= s.count {
		return 0, false
	}
	s.next++
	return s.start + s.next - 1, true
}

// resolved is the range the source runs, first..last: "5..6" for 5:2, and
// "no seeds" for a shard whose part is empty.
func (s *seedSource) resolved() string {
	switch {
	case s.spec.random:
		return "random"
	case s.count == 0:
		return "no seeds: this shard's part is empty"
	case s.count == 1:
		return fmt.Sprintf("seed %d", s.start)
	}
	return fmt.Sprintf("%d..%d", s.start, s.start+s.count-1)
}
