package model

// The recorder's own records (recorder.go fills them): per call, per row,
// per touch kind, and the index that finds a call by id.

import (
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/sim/arena"
)

// touchKey is the kind of a touch, for the memory oracle: every touch of
// one kind is judged alike, except by its order against the call's ENDED.
type touchKey struct {
	by     drivers.Toucher
	op     arena.Op
	region int32 // the region's label, by index in touchRegions
	slot   int
}

// touchRegion is label's index in r.touchRegions, added at its first
// touch: a run has a few regions, and a key without a string hashes
// faster on every touch (r.mu held).
func (r *Recorder) touchRegion(label string) int32 {
	for i, l := range r.touchRegions {
		if l == label {
			return int32(i)
		}
	}
	if r.touchRegions == nil {
		r.touchRegions = r.touchRegionsInl[:0] // most runs have a few regions
	}
	r.touchRegions = append(r.touchRegions, label)
	return int32(len(r.touchRegions) - 1)
}

// callRec is a call's facts plus, for a fetch, the regions its rows were
// on at submit (a FETCH OK's slot is read there), by index in the
// recorder's regList (noRegion: the handle was not registered).
type callRec struct {
	CallInfo
	regs []int32
	// puts is, per row, the first put the store ran of it (Put): when, in
	// sequence (0: none yet) and time; nil until the first.
	puts []mark
	// touched holds OnTouch's marks for the first touchBitRows rows: per
	// row, whether a read and a write of the row's own slot were kept, and
	// whether a touch after ENDED was (touchBits).
	touched uint64
}

// touchBitRows is how many rows' marks fit in callRec.touched, three bits
// each; touches by later rows are marked in the recorder's maps.
const touchBitRows = 21

// touchBits is the mark in callRec.touched of a touch by row with op (0:
// the touch after ENDED).
func touchBits(row int, op arena.Op) uint64 {
	switch op {
	case arena.Read:
		return 1 << (3 * row)
	case arena.Write:
		return 2 << (3 * row)
	}
	return 4 << (3 * row)
}

const noRegion = -1

// callIndex finds a call's record by id. A driver numbers its calls, so
// ids come dense: most records sit in a slice at id - base, looked up
// without hashing; an id far from the others goes to a map. Every id is
// in one of the two.
type callIndex struct {
	base   drivers.CallID
	dense  []*callRec
	ndense int // records in dense: it grows to at most 2*ndense+64
	sparse map[drivers.CallID]*callRec
}

func (x *callIndex) get(id drivers.CallID) *callRec {
	if i := id - x.base; id >= x.base && i < drivers.CallID(len(x.dense)) && x.dense[i] != nil {
		return x.dense[i]
	}
	return x.sparse[id]
}

// add files c under id, which has no record yet.
func (x *callIndex) add(id drivers.CallID, c *callRec) {
	if x.ndense == 0 && x.sparse == nil {
		x.base = id
	}
	if i := id - x.base; id >= x.base && i < drivers.CallID(2*x.ndense+64) {
		if i >= drivers.CallID(len(x.dense)) {
			x.dense = append(x.dense, make([]*callRec, int(i)+1-len(x.dense))...)
		}
		x.dense[i] = c
		x.ndense++
		return
	}
	if x.sparse == nil {
		x.sparse = map[drivers.CallID]*callRec{}
	}
	x.sparse[id] = c
}

// starting is the mark SubmitStarting took for the batch whose first row
// is row.
type starting struct {
	row *drivers.Row
	mark
}

type callRow struct {
	call drivers.CallID
	row  int
}

// mark is when an event happened, in the sequence and in virtual time.
type mark struct {
	seq int64
	at  time.Duration
}

// earlyEvent is a row result or access change seen before Submitted named
// the call (a callback may run before Submit returns, D-CB-4).
type earlyEvent struct {
	seq   int64
	at    time.Duration
	row   int // -1: access change
	st    drivers.Status
	acc   drivers.Access
	isAcc bool
}

// extraOp is an operation that is not a row of a known call, kept small
// (a lookup per key found adds up): an escaped publish, which never
// returns, or a lookup, which returns at its call.
type extraOp struct {
	key    string
	value  uint64
	seq    int64 // the call (and a lookup's return)
	at     time.Duration
	row    int32
	kind   Kind
	status drivers.Status
}

func (e *extraOp) op() Op {
	op := Op{Kind: e.kind, Key: e.key, Status: e.status, Value: e.value, Call: e.seq, Return: Never, Row: int(e.row), CallAt: e.at}
	if e.kind == KindLookup {
		op.Return, op.ReturnAt = e.seq, e.at
	}
	return op
}

type stampedTouch struct {
	arena.Touch
	seq    int64
	online bool
}

var accessTexts = [...]string{
	drivers.AccessPending:    "access PENDING",
	drivers.AccessEnded:      "access ENDED",
	drivers.AccessUnprovable: "access UNPROVABLE",
}

// registered is a region the recorder saw registered, and its handle.
type registered struct {
	drivers.Region
	h drivers.Handle
}
