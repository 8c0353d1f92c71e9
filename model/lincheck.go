package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// The S-LIN check: Check hands a history to porcupine against a StoreModel
// (store.go), after a pre-pass (prepare) that drops what cannot change the
// verdict; CheckResult is its verdict and its violations.

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
// timeout of 0 means none; a check that times out, and again on one
// re-check of recheckFactor times as long, is Unknown.
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
	return check(h, sm, timeout, false)
}

// CheckOwned is Check of a history the caller hands over: the result points
// into h's operations instead of into copies of them, so h must not change
// afterwards. The verdict and everything the result reports are Check's.
func CheckOwned(h History, sm StoreModel, timeout time.Duration) CheckResult {
	return check(h, sm, timeout, true)
}

func check(h History, sm StoreModel, timeout time.Duration, owned bool) CheckResult {
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
	var starts []int
	res.ops, starts, res.Dropped = prepareOps(h, sm, owned)
	res.Checked = len(res.ops)
	for k := range len(starts) - 1 {
		if starts[k] < starts[k+1] {
			res.Keys++
		}
	}
	// When sequentialOK finds an order of a key's operations that the model
	// accepts and that respects real time, that order is a linearization and
	// the key is linearizable: what porcupine would answer, found without its
	// goroutines and search state. Only the keys it finds no order for go to
	// porcupine, and an illegal verdict is porcupine's, on the whole history.
	var rest []porcupine.Operation
	if !porcupineOnly {
		var w witness // one search's scratch, reused key after key
		for k := range len(starts) - 1 {
			if p := res.ops[starts[k]:starts[k+1]]; !w.sequentialOK(m, p) {
				rest = append(rest, p...)
			}
		}
	} else {
		rest = res.ops
	}
	res.Outcome = porcupine.Ok
	if len(rest) > 0 {
		res.Outcome = porcupine.CheckOperationsTimeout(m, rest, timeout)
		if res.Outcome == porcupine.Unknown && timeout > 0 {
			// A loaded machine slows the search, not the history: one
			// re-check with recheckFactor times the time before Unknown.
			res.Outcome = porcupine.CheckOperationsTimeout(m, rest, recheckFactor*timeout)
		}
	}
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

// recheckFactor is how much longer the one re-check of a timed-out search
// runs: the timeout is wall time, so a verdict of Unknown must not come from
// a machine that was merely busy.
const recheckFactor = 6

// searchSteps bounds the model steps sequentialOK tries on one key:
// searchBaseSteps plus searchStepsPerOp for each of its operations. Past
// it, porcupine decides (a cost choice only — either way the verdict is the
// same).
const (
	searchBaseSteps  = 512
	searchStepsPerOp = 8
)

// prepare turns h into porcupine operations grouped by key (sorted), in call
// order within a key, each on a visualization lane free at its call. It
// drops what cannot change the verdict (see Check). The operations point
// into copies of the kept ops only (h stays the caller's).
func prepare(h History, sm StoreModel) ([]porcupine.Operation, int) {
	ops, _, dropped := prepareOps(h, sm, false)
	return ops, dropped
}

// prepareOps is prepare; owned, the operations point into h itself
// (CheckOwned). It also returns where each key's operations start, in
// key order, and where they end (len(starts) is the keys' count plus one;
// a key whose operations were all dropped has none): check need not find
// the partitions again.
func prepareOps(h History, sm StoreModel, owned bool) ([]porcupine.Operation, []int, int) {
	ops := h // read only: unless owned, what porcupine keeps is copied below

	// Keys by rank: the per-key facts below live in slices, and the sort
	// moves small pointer-free records (moving strings and pointers was half
	// the check time). A key's rank is its index among the distinct keys,
	// sorted (keyRanks).
	keys, ranks := keyRanks(ops)
	type keyFacts struct {
		found   bool   // some lookup found the key present
		firstOK int64  // earliest return of a FETCH OK (0: none)
		value   uint64 // what that read returned
	}
	facts := make([]keyFacts, len(keys))
	// Ambiguous publishes are few: index their values, so only reads of
	// those values pay for a (key, value) lookup.
	type obs struct {
		key int32
		v   uint64
	}
	ambiguous := map[uint64]bool{}
	for i := range ops {
		if op := &ops[i]; op.Kind == KindPublish && !op.Settled() && op.Effect != NoEffect {
			ambiguous[op.Value] = true
		}
	}
	observed := map[obs]bool{}
	end := int64(0)
	for i := range ops {
		op, f := &ops[i], &facts[ranks[i]]
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
		step       step
	}
	// Group by key with a counting sort of the operations' indices that keeps
	// input order, then keep what counts key by key: the kept operations come
	// out grouped. A recorded history is already in call order, so a key's
	// run rarely needs sorting.
	counts := make([]int, 2*len(keys)+1) // start, then next: one allocation
	start, next := counts[:len(keys)+1:len(keys)+1], counts[len(keys)+1:]
	for _, k := range ranks {
		start[k+1]++
	}
	for k := range keys {
		start[k+1] += start[k]
	}
	copy(next, start[:len(keys)])
	order := make([]int32, len(ops))
	for i, k := range ranks {
		order[next[k]] = int32(i)
		next[k]++
	}
	list := make([]prepared, 0, len(ops))
	dropped := 0
	for k := range keys {
		from, to := start[k], next[k] // the key's operations, in order
		start[k] = len(list)          // from here on, where its kept ones start
		for _, i32 := range order[from:to] {
			i := int(i32)
			op, f := &ops[i], &facts[ranks[i]]
			var st step
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
				st = stFetchOK
			case op.Kind == KindFetch && op.Status == drivers.Miss:
				st = stFetchMiss
			case op.Kind == KindLookup && op.Status == drivers.OK:
				st = stFound
			case op.Kind == KindLookup && op.Status == drivers.Miss:
				st = stAbsent
			case op.Kind == KindPublish && op.Status == drivers.OK:
				st = stStore
			case op.Kind == KindPublish && op.Effect == TookEffect && op.EffectSeq > 0 && op.Status != drivers.Miss:
				st, ret = stStore, max(op.EffectSeq, op.Call)
			case op.Kind == KindPublish && !op.Settled() && op.Effect != NoEffect &&
				(observed[obs{ranks[i], op.Value}] || f.found):
				st, ret = stStore, Never
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
			list = append(list, prepared{key: ranks[i], index: int32(i), call: op.Call, ret: ret, step: st})
		}
	}
	start[len(keys)] = len(list)
	byTime := func(a, b prepared) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.ret, b.ret), cmp.Compare(a.index, b.index))
	}
	for k := range keys {
		if run := list[start[k]:start[k+1]]; !slices.IsSortedFunc(run, byTime) {
			slices.SortFunc(run, byTime)
		}
	}
	out := make([]porcupine.Operation, len(list))
	// porcupine keeps pointers to the inputs and (as metadata) the ops: one
	// allocation holds both, for the kept operations only (the inputs alone
	// when h is owned: the ops are h's).
	type kept struct {
		in input
		op Op
	}
	var keep []kept
	var ins []input
	if owned {
		ins = make([]input, len(list))
	} else {
		keep = make([]kept, len(list))
	}
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
		var in *input
		var op *Op
		if owned {
			in, op = &ins[i], &ops[p.index]
		} else {
			k := &keep[i]
			k.op = ops[p.index]
			in, op = &k.in, &k.op
		}
		*in = input{step: p.step, value: op.Value, op: op}
		out[i] = porcupine.Operation{ClientId: lane, Input: in, Call: p.call, Return: p.ret, Metadata: op}
	}
	return out, start, dropped
}

// keyRanks returns the distinct keys of ops, sorted, and each op's key's
// index among them. Keys are numbered in one pass with a map (a history has
// a few dozen keys among a few hundred ops: sorting every key and binary
// searching each was a third of prepare), then only the distinct keys are
// sorted and the numbers mapped to ranks.
func keyRanks(ops History) (keys []string, ranks []int32) {
	ids := make(map[string]int32, min(len(ops), 64)) // key → number, in first-seen order
	keys, ranks = make([]string, 0, min(len(ops), 64)), make([]int32, len(ops))
	for i := range ops {
		k := ops[i].Key
		id, ok := ids[k]
		if !ok {
			id = int32(len(keys))
			ids[k] = id
			keys = append(keys, k)
		}
		ranks[i] = id
	}
	byKey := make([]numberedKey, len(keys))
	for id, k := range keys {
		byKey[id] = numberedKey{k, int32(id)}
	}
	slices.SortFunc(byKey, func(a, b numberedKey) int { return strings.Compare(a.key, b.key) })
	rank := make([]int32, len(keys)) // number → rank
	for r, nk := range byKey {
		keys[r], rank[nk.id] = nk.key, int32(r)
	}
	for i, id := range ranks {
		ranks[i] = rank[id]
	}
	return keys, ranks
}

type numberedKey struct {
	key string
	id  int32
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
