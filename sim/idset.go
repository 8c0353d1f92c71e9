package sim

// idSet is a set of event ids, one bit per id: ids are numbered from 1 in
// creation order, so the set is a slice of words that grows with the run
// (a bit per event ever created), and membership, insertion and deletion
// touch one word — what the timer bookkeeping does at every step.
type idSet struct {
	words []uint64
	n     int // members
}

func (s *idSet) has(id uint64) bool {
	w := id >> 6
	return w < uint64(len(s.words)) && s.words[w]&(1<<(id&63)) != 0
}

// add inserts id (a member stays one).
func (s *idSet) add(id uint64) {
	w := id >> 6
	if uint64(len(s.words)) <= w {
		// At least double, from 16 words (1,024 ids, a short run's
		// events): not a word at a time through append's small sizes.
		n := max(int(w)+1, 2*len(s.words), 16)
		s.words = append(s.words, make([]uint64, n-len(s.words))...)
	}
	if b := uint64(1) << (id & 63); s.words[w]&b == 0 {
		s.words[w] |= b
		s.n++
	}
}

// del removes id and reports whether it was a member.
func (s *idSet) del(id uint64) bool {
	w := id >> 6
	if w >= uint64(len(s.words)) {
		return false
	}
	b := uint64(1) << (id & 63)
	if s.words[w]&b == 0 {
		return false
	}
	s.words[w] &^= b
	s.n--
	return true
}

func (s *idSet) len() int { return s.n }
