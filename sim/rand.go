package sim

import "math/bits"

// Rand is a SplitMix64 pseudo-random generator. It is not safe for concurrent
// use; each subsystem owns its own stream (see [Rand.Fork]).
type Rand struct{ state uint64 }

// NewRand returns a generator seeded with seed.
func NewRand(seed uint64) *Rand { return &Rand{state: seed} }

// Uint64 returns the next 64 pseudo-random bits (SplitMix64, Steele et al.).
func (r *Rand) Uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Intn returns a value in [0, n); n must be > 0.
func (r *Rand) Intn(n int) int {
	if n <= 0 {
		panic("sim: Intn with n <= 0")
	}
	hi, _ := bits.Mul64(r.Uint64(), uint64(n))
	return int(hi)
}

// Float64 returns a value in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Chance returns true with probability p.
func (r *Rand) Chance(p float64) bool { return p > 0 && r.Float64() < p }

// Fork derives an independent stream for a named subsystem. The result
// depends only on this stream's current state and the name.
func (r *Rand) Fork(name string) *Rand {
	f := r.ForkValue(name)
	return &f
}

// ForkValue is Fork's stream as a value, for an owner that keeps its
// streams in its own allocation.
func (r *Rand) ForkValue(name string) Rand { return Rand{state: Mix(r.Uint64(), HashString(name))} }

// SubSeed derives the seed of a named subsystem from a run seed without
// consuming any stream: the same (seed, name) always gives the same value.
func SubSeed(seed uint64, name string) uint64 { return Mix(seed, HashString(name)) }

// Mix combines two 64-bit values into a well-spread one.
func Mix(a, b uint64) uint64 {
	r := Rand{state: a ^ bits.RotateLeft64(b, 32)}
	r.Uint64()
	return r.Uint64() ^ b
}

// HashString is 64-bit FNV-1a.
func HashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
