package slab

import "testing"

func TestNewHandsOutDistinctZeroedValues(t *testing.T) {
	var s Of[int]
	seen := map[*int]bool{}
	for i := range 200 {
		p := s.New()
		if *p != 0 {
			t.Fatalf("value %d not zeroed: %d (repro: go test ./sim/slab -run TestNew)", i, *p)
		}
		if seen[p] {
			t.Fatalf("value %d handed out twice (repro: go test ./sim/slab -run TestNew)", i)
		}
		seen[p] = true
		*p = i + 1
	}
}

func TestMakeIsFullAndDisjoint(t *testing.T) {
	for _, n := range []int{0, 1, 3, chunkLen[int]() / 2, chunkLen[int]()/2 + 1, 3 * chunkLen[int]()} {
		t.Run("", func(t *testing.T) {
			var s Of[int]
			a := s.Make(n)
			b := s.Make(n)
			if len(a) != n || cap(a) != n {
				t.Fatalf("Make(%d): len %d cap %d, want both %d (repro: go test ./sim/slab -run TestMake)", n, len(a), cap(a), n)
			}
			for i := range a {
				a[i] = 1
			}
			a = append(a, 7) // must copy, not write into b
			for i, v := range b {
				if v != 0 {
					t.Fatalf("Make(%d): second slice's value %d is %d after writes to the first (repro: go test ./sim/slab -run TestMake)", n, i, v)
				}
			}
		})
	}
}

func TestChunksAmortise(t *testing.T) {
	var s Of[[4]int]
	allocs := testing.AllocsPerRun(10, func() {
		for range 640 {
			s.New()
		}
	})
	if want := 640/chunkLen[[4]int]() + 8; allocs > float64(want) {
		t.Fatalf("640 values cost %v allocations, want at most %d (repro: go test ./sim/slab -run TestChunks)", allocs, want)
	}
}

func TestReserveSizesTheFirstChunk(t *testing.T) {
	var s Of[[4]int]
	s.Reserve(3)
	s.Reserve(40) // too late once a Reserve counted
	if s.New(); len(s.free) != 2 {
		t.Fatalf("Reserve(3): the first chunk holds %d, want 3 (repro: go test ./sim/slab -run TestReserve)", len(s.free)+1)
	}
	s.New()
	s.New()
	if s.New(); len(s.free) != firstChunk-1 {
		t.Fatalf("after a Reserve(3) chunk the next holds %d, want firstChunk %d (repro: go test ./sim/slab -run TestReserve)", len(s.free)+1, firstChunk)
	}
	var big Of[[4]int]
	big.Reserve(1 << 20)
	limit := chunkLen[[4]int]()
	if big.New(); len(big.free) != limit-1 {
		t.Fatalf("Reserve(1<<20): the first chunk holds %d, want chunkLen %d (repro: go test ./sim/slab -run TestReserve)", len(big.free)+1, limit)
	}
	big.free = big.free[:0]
	if big.New(); len(big.free) != limit/2-1 {
		t.Fatalf("after a reserved chunk of %d the next holds %d, want half (repro: go test ./sim/slab -run TestReserve)", limit, len(big.free)+1)
	}
	big.free = big.free[:0]
	if big.New(); len(big.free) != limit-1 {
		t.Fatalf("the chunk after a half one holds %d, want %d (repro: go test ./sim/slab -run TestReserve)", len(big.free)+1, limit)
	}
}
