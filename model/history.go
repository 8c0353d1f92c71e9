package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/storesim/storesim/drivers"
)

// Kind is what an operation did to its key.
type Kind uint8

const (
	// KindFetch is one FETCH row: store → memory.
	KindFetch Kind = iota + 1
	// KindPublish is one PUBLISH row: memory → store.
	KindPublish
	// KindLookup is one key of a Contains answer (opt-in, see
	// RecorderOptions.Lookups).
	KindLookup
)

func (k Kind) String() string {
	switch k {
	case KindFetch:
		return "FETCH"
	case KindPublish:
		return "PUBLISH"
	case KindLookup:
		return "LOOKUP"
	}
	return "KIND?"
}

// Never is the Return of an operation that has no result: a row still
// pending, or a publish whose effect is ambiguous. Check gives such an
// operation a return after every other event, so porcupine may linearize it
// anywhere after its call — including "never happened" (at the end).
const Never int64 = math.MaxInt64

// Effect is what the run knows about a PUBLISH row without an OK or MISS
// result (FAULT, NOT_ATTEMPTED, or no result at all). SPEC §5.1 calls such
// a publish ambiguous: it may or may not have happened (a cancelled Redis
// SET often did, PERF-NOTES). What the scheduler or the store saw can settle
// it.
type Effect uint8

const (
	// Ambiguous: nothing known; the operation never returns.
	Ambiguous Effect = iota
	// NoEffect: known not to have reached the store; dropped.
	NoEffect
	// TookEffect: the store ran its put at EffectSeq; the operation returns
	// there. Without an EffectSeq it is treated as Ambiguous.
	TookEffect
)

func (e Effect) String() string {
	switch e {
	case Ambiguous:
		return "ambiguous"
	case NoEffect:
		return "no effect"
	case TookEffect:
		return "took effect"
	}
	return "effect?"
}

// Op is one row result (or one looked-up key): the unit of the S-LIN check.
// Call and Return are positions in the recorder's event sequence, not
// virtual time: many events share one virtual instant, and the sequence
// keeps their exact order. CallAt and ReturnAt keep virtual time for
// reports.
//
// Its three one-byte fields come first, together: so an Op is 88 bytes, not
// 104 (a run's history is copied whole, and checked).
type Op struct {
	Kind Kind
	// Status is the row result (PENDING when none came). For lookups OK
	// means found and MISS absent.
	Status drivers.Status
	// Effect and EffectSeq settle a publish without OK/MISS (see Effect).
	Effect Effect
	Key    string
	// Value is a Digest: for a publish, of the slot at submit; for a FETCH
	// OK, of the slot when the row became final. Never 0 for those two.
	Value     uint64
	Call      int64
	Return    int64 // Never when no result came
	EffectSeq int64

	CallID   drivers.CallID
	Row      int
	CallAt   time.Duration
	ReturnAt time.Duration
}

// Settled reports whether op has a result the model steps on directly
// (OK or MISS); everything else is ambiguous (publish) or constrains nothing
// (fetch, lookup).
func (op Op) Settled() bool { return op.Status == drivers.OK || op.Status == drivers.Miss }

func (op Op) String() string {
	s := fmt.Sprintf("%v %q", op.Kind, op.Key)
	if op.Kind == KindPublish {
		s += " " + shortValue(op.Value)
	}
	s += " → " + op.Status.String()
	if op.Kind == KindFetch && op.Status == drivers.OK {
		s += " " + shortValue(op.Value)
	}
	if op.Kind == KindPublish && !op.Settled() {
		s += " (" + op.Effect.String() + ")"
	}
	ret := "never"
	if op.Return != Never {
		ret = fmt.Sprintf("#%d %v", op.Return, op.ReturnAt)
	}
	return s + fmt.Sprintf(" [call %d row %d, called #%d %v, returned %s]", op.CallID, op.Row, op.Call, op.CallAt, ret)
}

func shortValue(v uint64) string {
	if v == 0 {
		return "absent"
	}
	return fmt.Sprintf("v:%08x", uint32(v>>32))
}

// History is the recorded operations, in call order.
type History []Op

// ErrBadHistory is wrapped by every refusal of a malformed history.
var ErrBadHistory = errors.New("model: bad history")

// Validate reports the first malformed operation: an unknown kind, an empty
// key, a return before the call, a publish or FETCH OK without a value.
func (h History) Validate() error {
	for i, op := range h {
		switch {
		case op.Kind < KindFetch || op.Kind > KindLookup:
			return fmt.Errorf("%w: op %d has kind %d", ErrBadHistory, i, op.Kind)
		case op.Key == "":
			return fmt.Errorf("%w: op %d has no key", ErrBadHistory, i)
		case op.Call < 0 || op.Call == Never:
			return fmt.Errorf("%w: op %d (%v) has call %d", ErrBadHistory, i, op, op.Call)
		case op.Return < op.Call:
			return fmt.Errorf("%w: op %d (%v) returns before its call", ErrBadHistory, i, op)
		case op.Kind == KindPublish && op.Value == 0:
			return fmt.Errorf("%w: op %d (%v): publish without a value digest", ErrBadHistory, i, op)
		case op.Kind == KindFetch && op.Status == drivers.OK && op.Value == 0:
			return fmt.Errorf("%w: op %d (%v): FETCH OK without a value digest", ErrBadHistory, i, op)
		case op.Effect > TookEffect:
			return fmt.Errorf("%w: op %d has effect %d", ErrBadHistory, i, op.Effect)
		}
	}
	return nil
}

// Classify returns a copy of h in which every publish without OK/MISS is
// given the effect fn decides (and, for TookEffect, the sequence at which
// the store ran its put). The harness uses what the scheduler or the store
// knows, e.g. a NOT_ATTEMPTED row the simulated driver never started is
// NoEffect.
func (h History) Classify(fn func(Op) (Effect, int64)) History {
	out := append(History(nil), h...)
	for i := range out {
		if out[i].Kind == KindPublish && !out[i].Settled() {
			out[i].Effect, out[i].EffectSeq = fn(out[i])
		}
	}
	return out
}

// ForKeys returns the operations on the given keys, in order.
func (h History) ForKeys(keys ...string) History {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var out History
	for _, op := range h {
		if want[op.Key] {
			out = append(out, op)
		}
	}
	return out
}

// Keys lists the distinct keys, sorted.
func (h History) Keys() []string {
	seen := map[string]bool{}
	var keys []string
	for _, op := range h {
		if !seen[op.Key] {
			seen[op.Key] = true
			keys = append(keys, op.Key)
		}
	}
	sort.Strings(keys)
	return keys
}
