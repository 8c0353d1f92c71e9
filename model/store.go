package model

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
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
		m.Init = func() any { return uint64(0) }
		m.Step = durableStep
		m.Equal = func(a, b any) bool { return a.(uint64) == b.(uint64) }
		m.Hash = func(s any) uint64 { return fmix(s.(uint64)) }
		m.DescribeState = func(s any) string { return shortValue(s.(uint64)) }
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

// durableStep: the state is the key's value, 0 for absent.
func durableStep(state, in, _ any) (bool, any) {
	v, i := state.(uint64), in.(*input)
	switch i.step {
	case stFetchOK:
		return v == i.value, state
	case stFetchMiss, stAbsent:
		return v == 0, state
	case stFound:
		return v != 0, state
	case stStore:
		if v == 0 {
			return true, i.value
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
	hash uint64 // xor of fmix(v): order-free, so equal sets hash equal
}

var emptySet = &valueSet{}

func singleSet(v uint64) *valueSet { return &valueSet{vals: []uint64{v}, hash: fmix(v)} }

func (s *valueSet) has(v uint64) bool {
	_, ok := slices.BinarySearch(s.vals, v)
	return ok
}

func (s *valueSet) with(v uint64) *valueSet {
	i, ok := slices.BinarySearch(s.vals, v)
	if ok {
		return s
	}
	vals := make([]uint64, 0, len(s.vals)+1)
	vals = append(append(append(vals, s.vals[:i]...), v), s.vals[i:]...)
	return &valueSet{vals: vals, hash: s.hash ^ fmix(v)}
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
	var parts [][]porcupine.Operation
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

// CheckResult is the verdict of Check. Outcome is porcupine's: Ok, Illegal,
// or Unknown — a timeout (or, with Err set, a history that could not be
// checked), which is its own outcome and never a pass.
type CheckResult struct {
	Outcome    porcupine.CheckResult
	StoreModel StoreModel
	Err        error
	// Info is porcupine's linearization data; HasInfo says whether it was
	// computed (Check computes it only for an Illegal history, to keep the
	// passing path fast; WriteVisualization computes what it needs).
	Info    porcupine.LinearizationInfo
	HasInfo bool
	// IllegalKeys are the keys whose histories do not linearize.
	IllegalKeys []string
	// Checked operations were handed to porcupine; Dropped ones could not
	// change the verdict (see Check). Keys counts partitions.
	Checked, Dropped, Keys int

	model   porcupine.Model
	ops     []porcupine.Operation
	timeout time.Duration
}

// Ok reports a proven pass.
func (r CheckResult) Ok() bool { return r.Outcome == porcupine.Ok && r.Err == nil }

func (r CheckResult) String() string {
	if r.Err != nil {
		return fmt.Sprintf("S-LIN %v: %v", r.Outcome, r.Err)
	}
	s := fmt.Sprintf("S-LIN %v (%v profile, %d ops checked over %d keys, %d dropped)",
		r.Outcome, r.StoreModel, r.Checked, r.Keys, r.Dropped)
	if len(r.IllegalKeys) > 0 {
		s += fmt.Sprintf(", illegal keys %q", r.IllegalKeys)
	}
	return s
}

// Check runs the S-LIN check: each row result is one operation on one key,
// checked by porcupine against the store model sm, partitioned by key. A
// timeout of 0 means none; a check that times out is Unknown.
//
// Before porcupine runs, a pre-pass drops what cannot change the verdict
// (PERF-NOTES: never-returned operations blow the search up when a
// violation is present, and cost grows with each key's history):
//
//   - fetches and lookups without OK/MISS (they constrain nothing);
//   - declined publishes (MISS is legal in every state and changes none);
//   - NoEffect publishes, and ambiguous publishes whose value no FETCH OK of
//     the key observed (every publish carries a unique value) on keys no
//     lookup found present;
//   - durable only: operations called after the key's first FETCH OK
//     returned v that agree with v (reads of v, found lookups, publishes):
//     a durable key holds v for ever after, so they are legal wherever they
//     fall. Operations that disagree stay, and fail.
//
// An ambiguous publish that is kept never returns: porcupine may place it
// anywhere after its call, including after everything (= it never happened).
func Check(h History, sm StoreModel, timeout time.Duration) CheckResult {
	res := CheckResult{Outcome: porcupine.Unknown, StoreModel: sm, timeout: timeout}
	m, err := sm.Model()
	if err != nil {
		res.Err = err
		return res
	}
	if err := h.Validate(); err != nil {
		res.Err = err
		return res
	}
	res.model = m
	res.ops, res.Dropped = prepare(h, sm)
	res.Checked = len(res.ops)
	res.Keys = len(partitionByKey(res.ops))
	res.Outcome = porcupine.CheckOperationsTimeout(m, res.ops, timeout)
	if res.Outcome == porcupine.Illegal {
		// Find the failing keys (and keep the data for the report).
		out, info := porcupine.CheckOperationsVerbose(m, res.ops, timeout)
		res.Info, res.HasInfo = info, true
		if out == porcupine.Illegal {
			res.IllegalKeys = illegalKeys(res.ops, info)
		}
	}
	return res
}

// prepare turns h into porcupine operations grouped by key (sorted), in call
// order within a key, each on a visualization lane free at its call. It
// drops what cannot change the verdict (see Check).
func prepare(h History, sm StoreModel) ([]porcupine.Operation, int) {
	ops := append(History(nil), h...) // porcupine keeps pointers into it

	// Keys by rank: the per-key facts below live in slices, and the sort
	// moves small pointer-free records (moving strings and pointers was half
	// the check time).
	rank := map[string]int32{}
	for _, op := range ops {
		rank[op.Key] = 0
	}
	keys := make([]string, 0, len(rank))
	for k := range rank {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		rank[k] = int32(i)
	}
	type keyFacts struct {
		found   bool   // some lookup found the key present
		firstOK int64  // earliest return of a FETCH OK (0: none)
		value   uint64 // what that read returned
	}
	facts := make([]keyFacts, len(keys))
	ranks := make([]int32, len(ops))
	// Ambiguous publishes are few: index their values, so only reads of
	// those values pay for a (key, value) lookup.
	type obs struct {
		key int32
		v   uint64
	}
	ambiguous := map[uint64]bool{}
	for i, op := range ops {
		ranks[i] = rank[op.Key]
		if op.Kind == KindPublish && !op.Settled() && op.Effect != NoEffect {
			ambiguous[op.Value] = true
		}
	}
	observed := map[obs]bool{}
	end := int64(0)
	for i, op := range ops {
		f := &facts[ranks[i]]
		switch {
		case op.Kind == KindFetch && op.Status == drivers.OK:
			if ambiguous[op.Value] {
				observed[obs{ranks[i], op.Value}] = true
			}
			if op.Return != Never && (f.firstOK == 0 || op.Return < f.firstOK) {
				f.firstOK, f.value = op.Return, op.Value
			}
		case op.Kind == KindLookup && op.Status == drivers.OK:
			f.found = true
		}
		end = max(end, op.Call, op.EffectSeq)
		if op.Return != Never {
			end = max(end, op.Return)
		}
	}
	end++ // after every event: "never returned"

	type prepared struct {
		key, index int32
		call, ret  int64
	}
	list := make([]prepared, 0, len(ops))
	inputs := make([]input, len(ops))
	dropped := 0
	for i := range ops {
		op, f := &ops[i], &facts[ranks[i]]
		in := &inputs[i]
		in.op, in.value = op, op.Value
		ret := op.Return
		switch {
		case sm == DurableStore && f.firstOK != 0 && op.Call > f.firstOK &&
			(op.Kind == KindPublish || op.Kind == KindLookup && op.Status == drivers.OK ||
				op.Kind == KindFetch && op.Status == drivers.OK && op.Value == f.value):
			// Durable: once a read returned v, the key holds v for ever, so an
			// operation called later that agrees with v (a read of v, a found
			// lookup, any publish — it keeps the first value) cannot change
			// the verdict. Ones that disagree stay and fail.
			dropped++
			continue
		case op.Kind == KindFetch && op.Status == drivers.OK:
			in.step = stFetchOK
		case op.Kind == KindFetch && op.Status == drivers.Miss:
			in.step = stFetchMiss
		case op.Kind == KindLookup && op.Status == drivers.OK:
			in.step = stFound
		case op.Kind == KindLookup && op.Status == drivers.Miss:
			in.step = stAbsent
		case op.Kind == KindPublish && op.Status == drivers.OK:
			in.step = stStore
		case op.Kind == KindPublish && op.Effect == TookEffect && op.EffectSeq > 0 && op.Status != drivers.Miss:
			in.step, ret = stStore, max(op.EffectSeq, op.Call)
		case op.Kind == KindPublish && !op.Settled() && op.Effect != NoEffect &&
			(observed[obs{ranks[i], op.Value}] || f.found):
			in.step, ret = stStore, Never
		default:
			// A fetch or lookup without OK/MISS constrains nothing; a
			// declined publish (MISS) is legal in every state and changes
			// none; a NoEffect publish did not happen; an unobserved
			// ambiguous one may as well not have (linearized last, it
			// changes nothing).
			dropped++
			continue
		}
		if ret == Never {
			ret = end
		}
		list = append(list, prepared{key: ranks[i], index: int32(i), call: op.Call, ret: ret})
	}
	// Group by key with a counting sort that keeps input order; a recorded
	// history is already in call order, so a key's run rarely needs sorting.
	start := make([]int, len(keys)+1)
	for _, p := range list {
		start[p.key+1]++
	}
	for k := range keys {
		start[k+1] += start[k]
	}
	grouped := make([]prepared, len(list))
	next := append([]int(nil), start[:len(keys)]...)
	for _, p := range list {
		grouped[next[p.key]] = p
		next[p.key]++
	}
	list = grouped
	byTime := func(a, b prepared) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.ret, b.ret), cmp.Compare(a.index, b.index))
	}
	for k := range keys {
		if run := list[start[k]:start[k+1]]; !slices.IsSortedFunc(run, byTime) {
			slices.SortFunc(run, byTime)
		}
	}
	out := make([]porcupine.Operation, len(list))
	var lanes []int64 // per lane: the return of its last operation
	for i, p := range list {
		if i == 0 || p.key != list[i-1].key {
			lanes = lanes[:0]
		}
		lane := -1
		for j, free := range lanes {
			if free < p.call {
				lane = j
				break
			}
		}
		if lane < 0 {
			lane = len(lanes)
			lanes = append(lanes, 0)
		}
		lanes[lane] = p.ret
		in := &inputs[p.index]
		out[i] = porcupine.Operation{ClientId: lane, Input: in, Call: p.call, Return: p.ret, Metadata: in.op}
	}
	return out, dropped
}

// illegalKeys names the partitions no complete linearization covers.
func illegalKeys(ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var keys []string
	parts := partitionByKey(ops)
	partials := info.PartialLinearizations()
	for i, part := range parts {
		if i < len(partials) && longest(partials[i]) < len(part) {
			keys = append(keys, opOf(part[0]).Key)
		}
	}
	return keys
}

func longest(partials [][]int) int {
	n := 0
	for _, p := range partials {
		n = max(n, len(p))
	}
	return n
}

// Violations turns an Illegal verdict into one S-LIN violation per failing
// key, naming the first operation no linearization could place. Ok and
// Unknown give none: the caller reports Unknown as its own outcome.
func (r CheckResult) Violations(seed uint64) []rules.Violation {
	if r.Outcome != porcupine.Illegal {
		return nil
	}
	if len(r.IllegalKeys) == 0 {
		return []rules.Violation{{Rule: rules.SLin, Class: rules.Safety, Row: -1, Seed: seed,
			Detail: fmt.Sprintf("history not linearizable against the %v store model (the failing keys were not identified before the timeout)", r.StoreModel)}}
	}
	parts := partitionByKey(r.ops)
	partials := r.Info.PartialLinearizations()
	var vs []rules.Violation
	for i, part := range parts {
		key := opOf(part[0]).Key
		if !slices.Contains(r.IllegalKeys, key) || i >= len(partials) {
			continue
		}
		best := []int(nil)
		for _, p := range partials[i] {
			if len(p) > len(best) {
				best = p
			}
		}
		in := make([]bool, len(part))
		for _, id := range best {
			in[id] = true
		}
		var first *Op
		firstID := -1
		for id := range part {
			if !in[id] && (firstID < 0 || part[id].Return < part[firstID].Return) {
				firstID = id
			}
		}
		if firstID >= 0 {
			first = opOf(part[firstID])
		}
		v := rules.Violation{Rule: rules.SLin, Class: rules.Safety, Row: -1, Key: key, Seed: seed,
			Detail: fmt.Sprintf("the key's history is not linearizable against the %v store model: the longest linearization places %d of its %d operations",
				r.StoreModel, len(best), len(part))}
		if first != nil {
			v.Call, v.Row, v.At = uint64(first.CallID), first.Row, first.ReturnAt
			if first.Return == Never {
				v.At = first.CallAt
			}
			v.Detail += "; the first one it cannot place: " + first.String()
		}
		vs = append(vs, v)
	}
	return vs
}

// WriteVisualization writes porcupine's HTML view of the check: for an
// Illegal result only the failing keys, else the whole history. Notes whose
// call or key appears in the view (and notes about neither, like shutdown)
// are drawn as annotations: callbacks, faults, access changes, cancels,
// region lifecycle.
func WriteVisualization(w io.Writer, res CheckResult, notes []Note) error {
	if res.Err != nil {
		return fmt.Errorf("model: no visualization: %w", res.Err)
	}
	if res.model.Step == nil {
		return fmt.Errorf("model: no visualization of a CheckResult that Check did not return")
	}
	ops := res.ops
	if len(res.IllegalKeys) > 0 {
		ops = nil
		for _, o := range res.ops {
			if slices.Contains(res.IllegalKeys, opOf(o).Key) {
				ops = append(ops, o)
			}
		}
	}
	_, info := porcupine.CheckOperationsVerbose(res.model, ops, res.timeout)
	info.AddAnnotations(annotations(ops, notes))
	return porcupine.Visualize(res.model, info, w)
}

var tagColors = map[string][2]string{ // text, background
	TagFault:    {"#ffffff", "#c0392b"},
	TagCallback: {"", "#d6eaf8"},
	TagAccess:   {"", "#d5f5e3"},
	TagCancel:   {"", "#fdebd0"},
	TagRegion:   {"", "#e5e7e9"},
	TagShutdown: {"#ffffff", "#6c3483"},
	TagStore:    {"", "#fcf3cf"},
	TagLookup:   {"", "#ebdef0"},
}

func annotations(ops []porcupine.Operation, notes []Note) []porcupine.Annotation {
	keys, calls := map[string]bool{}, map[drivers.CallID]bool{}
	for _, o := range ops {
		op := opOf(o)
		keys[op.Key] = true
		calls[op.CallID] = true
	}
	var out []porcupine.Annotation
	for _, n := range notes {
		if !(keys[n.Key] || (n.Call != 0 && calls[n.Call]) || (n.Key == "" && n.Call == 0)) {
			continue
		}
		c := tagColors[n.Tag]
		desc := n.Text
		if n.Call != 0 {
			desc = fmt.Sprintf("call %d: %s", n.Call, n.Text)
		}
		out = append(out, porcupine.Annotation{
			Tag: n.Tag, Start: n.Seq, Description: desc,
			Details:   n.String(),
			TextColor: c[0], BackgroundColor: c[1],
		})
	}
	return out
}
