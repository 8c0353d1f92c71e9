package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
)

// StoreModel selects the reference store model (SPEC §5.1): durable or
// evicting. (The fault profile of a generated run, which picks one of them, is
// fuzz/engine's Profile.)
type StoreModel uint8

const (
	// DurableStore: a stored object stays. Per key the state is absent or one
	// value; PUBLISH OK of an absent key stores it and of a present key keeps
	// the first value (D-SUB-4); PUBLISH MISS (declined) changes nothing and
	// is legal in both states: present is "already there", absent is "no
	// room" — the backend's second lookup (B-PUBLISH) tells them apart, the
	// model does not need to; FETCH OK must return the current value; FETCH
	// MISS requires absent.
	DurableStore StoreModel = iota + 1
	// EvictingStore: the store is a cache that may drop any key at any moment,
	// silently (the in-memory store evicts a random key after a put) — so a
	// FETCH MISS is always legal and leaves the key absent, and a publish of
	// a key that may have been evicted may store its value. Per key the state
	// is the set of values the key may hold, with absent always possible. A
	// value never comes back once evicted (a MISS or a read of another value
	// empties the set of the others) unless it is published again, and a
	// publish of a present key still keeps the first value: once a read saw
	// u, a read of a later-published v is legal only if u may have been
	// evicted in between, and a read of u after v is not.
	EvictingStore
)

func (sm StoreModel) String() string {
	switch sm {
	case DurableStore:
		return "durable"
	case EvictingStore:
		return "evicting"
	}
	return fmt.Sprintf("profile(%d)", uint8(sm))
}

// ErrBadStoreModel is returned for a StoreModel that is neither DurableStore
// nor EvictingStore.
var ErrBadStoreModel = errors.New("model: unknown store profile")

// step is what one operation asks of the model.
type step uint8

const (
	stFetchOK   step = iota + 1 // the key holds value
	stFetchMiss                 // the key is absent (durable) / evicted (evicting)
	stStore                     // a put ran: store value if absent, else keep the first
	stDecline                   // PUBLISH MISS: no change
	stFound                     // lookup: some value present
	stAbsent                    // lookup: absent
)

// input is the porcupine Input of one operation; the Output is unused
// (everything the step needs is known at the call entry).
type input struct {
	step  step
	value uint64
	op    *Op
}

// Model returns the porcupine model of sm, partitioned by key: the history
// handed to porcupine must be grouped by key (Check does it).
func (sm StoreModel) Model() (porcupine.Model, error) {
	m := porcupine.Model{
		Partition:                 partitionByKey,
		DescribeOperation:         describeOperation,
		DescribeOperationMetadata: describeMetadata,
	}
	switch sm {
	case DurableStore:
		m.Init = func() any { return &absent }
		m.Step = durableStep
		m.Equal = func(a, b any) bool { return *a.(*uint64) == *b.(*uint64) }
		m.Hash = func(s any) uint64 { return fmix(*s.(*uint64)) }
		m.DescribeState = func(s any) string { return shortValue(*s.(*uint64)) }
	case EvictingStore:
		m.Init = func() any { return emptySet }
		m.Step = evictingStep
		m.Equal = func(a, b any) bool { return a.(*valueSet).equal(b.(*valueSet)) }
		m.Hash = func(s any) uint64 { return s.(*valueSet).hash }
		m.DescribeState = func(s any) string { return s.(*valueSet).String() }
	default:
		return porcupine.Model{}, fmt.Errorf("%w: %d", ErrBadStoreModel, uint8(sm))
	}
	return m, nil
}

// absent is the durable state of a key nobody stored.
var absent uint64

// durableStep: the state is the key's value, 0 for absent. It is a pointer
// to the value of the input that stored it (inputs are never changed once
// prepared), so a step boxes no integer.
func durableStep(state, in, _ any) (bool, any) {
	v, i := *state.(*uint64), in.(*input)
	switch i.step {
	case stFetchOK:
		return v == i.value, state
	case stFetchMiss, stAbsent:
		return v == 0, state
	case stFound:
		return v != 0, state
	case stStore:
		if v == 0 {
			return true, &i.value
		}
		return true, state // D-SUB-4: first writer wins
	case stDecline:
		return true, state
	}
	return false, state
}

// evictingStep: the state is the set of values the key may hold; absent is
// always possible (an eviction may have happened at any moment).
func evictingStep(state, in, _ any) (bool, any) {
	s, i := state.(*valueSet), in.(*input)
	switch i.step {
	case stFetchOK:
		switch {
		case !s.has(i.value):
			return false, state
		case len(s.vals) == 1:
			return true, state // the common case: no allocation
		}
		return true, singleSet(i.value)
	case stFetchMiss, stAbsent:
		return true, emptySet
	case stFound:
		return len(s.vals) > 0, state
	case stStore:
		// Kept the first value, or stored this one after an eviction.
		return true, s.with(i.value)
	case stDecline:
		return true, state
	}
	return false, state
}

// valueSet is an immutable sorted set of digests (porcupine states must not
// be mutated).
type valueSet struct {
	vals []uint64
	hash uint64    // xor of fmix(v): order-free, so equal sets hash equal
	inl  [2]uint64 // vals' storage for a set of up to 2 (one allocation per set)
}

var emptySet = &valueSet{}

func singleSet(v uint64) *valueSet {
	s := &valueSet{hash: fmix(v)}
	s.inl[0] = v
	s.vals = s.inl[:1:1]
	return s
}

func (s *valueSet) has(v uint64) bool {
	_, ok := slices.BinarySearch(s.vals, v)
	return ok
}

func (s *valueSet) with(v uint64) *valueSet {
	i, ok := slices.BinarySearch(s.vals, v)
	if ok {
		return s
	}
	out := &valueSet{hash: s.hash ^ fmix(v)}
	vals := out.inl[:0]
	if len(s.vals)+1 > len(out.inl) {
		vals = make([]uint64, 0, len(s.vals)+1)
	}
	out.vals = append(append(append(vals, s.vals[:i]...), v), s.vals[i:]...)
	return out
}

func (s *valueSet) equal(o *valueSet) bool {
	return s == o || (s.hash == o.hash && slices.Equal(s.vals, o.vals))
}

func (s *valueSet) String() string {
	if len(s.vals) == 0 {
		return "absent"
	}
	parts := make([]string, len(s.vals))
	for i, v := range s.vals {
		parts[i] = shortValue(v)
	}
	return "absent or one of {" + strings.Join(parts, ", ") + "}"
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	n := 0
	for i := range history {
		if i == 0 || opOf(history[i]).Key != opOf(history[i-1]).Key {
			n++
		}
	}
	var parts [][]porcupine.Operation
	if n > 0 {
		parts = make([][]porcupine.Operation, 0, n) // one allocation
	}
	start := 0
	for i := 1; i <= len(history); i++ {
		if i == len(history) || opOf(history[i]).Key != opOf(history[start]).Key {
			parts = append(parts, history[start:i])
			start = i
		}
	}
	return parts
}

func opOf(o porcupine.Operation) *Op { return o.Input.(*input).op }

func describeOperation(in, _ any) string {
	i := in.(*input)
	op := i.op
	switch op.Kind {
	case KindFetch:
		if op.Status == drivers.OK {
			return "FETCH → OK " + shortValue(op.Value)
		}
		return "FETCH → " + op.Status.String()
	case KindLookup:
		if op.Status == drivers.OK {
			return "LOOKUP → found"
		}
		return "LOOKUP → absent"
	}
	s := "PUBLISH " + shortValue(op.Value) + " → " + op.Status.String()
	if !op.Settled() {
		s += " (" + op.Effect.String() + ")"
	}
	return s
}

func describeMetadata(meta any) string {
	op, ok := meta.(*Op)
	if !ok || op == nil {
		return ""
	}
	return op.String()
}
