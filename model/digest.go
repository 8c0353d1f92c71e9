package model

import (
	"encoding/binary"
	"math/bits"
)

// Digest is the 64-bit value the history records for slot bytes. It is
// deterministic (no per-process seed, unlike hash/maphash), fast (eight bytes
// per step) and never 0: the model reserves 0 for "absent".
func Digest(b []byte) uint64 {
	const (
		k1 = 0x9e3779b97f4a7c15
		k2 = 0xc2b2ae3d27d4eb4f
	)
	h := uint64(len(b))*k1 ^ 0x2545f4914f6cdd1d
	for len(b) >= 8 {
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(b)*k2, 29) * k1
		b = b[8:]
	}
	if len(b) > 0 {
		var tail [8]byte
		copy(tail[:], b)
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(tail[:])*k2^uint64(len(b)), 29) * k1
	}
	h = fmix(h)
	if h == 0 {
		h = 1
	}
	return h
}

// fmix is the MurmurHash3 finaliser: every input bit reaches every output bit.
func fmix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}
