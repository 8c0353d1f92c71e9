package diff

// The calls of one op: its rows cut into batches the way the backend cuts
// them, each fetch batch looked up first, each call awaited and its answers
// judged against what the contract fixes (judge.go).

import (
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim/arena"
)

type row struct {
	pos int
	key string
}

// batches cuts an op's masked-in rows as the backend does: a new batch at
// MaxRowsPerOp rows or at a key the batch already holds (B-CUT).
func batches(op workload.Op, maxRows int) [][]row {
	var out [][]row
	var cur []row
	for pos, k := range op.Keys {
		if !op.Mask[pos] {
			continue
		}
		if len(cur) == maxRows || slices.ContainsFunc(cur, func(r row) bool { return r.key == k }) {
			out, cur = append(out, cur), nil
		}
		cur = append(cur, row{pos, k})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func (p *player) playOp(i int, op workload.Op, e *endpoint) {
	dir := drivers.Fetch
	if op.Kind == workload.Publish {
		dir = drivers.Publish
	}
	if !e.caps.Supports(dir) {
		for pos, k := range op.Keys {
			if op.Mask[pos] {
				p.record(rowID{i, pos, op.Kind.String()}, k, e, "not played: the driver does not declare "+dir.String(), verdict{freedom: "a direction the driver does not declare (not played)"})
			}
		}
		return
	}
	for _, b := range batches(op, e.caps.MaxRowsPerOp) {
		if p.stopped != nil || p.stalled != "" {
			return
		}
		if op.Kind == workload.Fetch {
			p.lookup(i, "lookup", e, b)
			p.call(i, drivers.Fetch, "fetch", e, b)
		} else {
			p.call(i, drivers.Publish, "publish", e, b)
		}
	}
}

// lookup asks e's driver about the keys of b and judges each answer.
func (p *player) lookup(i int, what string, e *endpoint, b []row) {
	keys := make([]string, len(b))
	for j, r := range b {
		keys[j] = r.key
	}
	ctx, cancel := p.ctx()
	found, err := e.d.Contains(ctx, keys)
	cancel()
	p.res.Lookups++
	if err == nil && len(found) != len(keys) {
		err = fmt.Errorf("%d answers for %d keys (D-LOOK-1)", len(found), len(keys))
	}
	for j, r := range b {
		id := rowID{i, r.pos, what}
		if err != nil {
			p.record(id, r.key, e, "lookup error: "+err.Error(), verdict{freedom: freeLookupErr})
			continue
		}
		text := "absent"
		if found[j] {
			text = "present"
		}
		p.record(id, r.key, e, text, p.know.lookup(r.key, found[j]))
	}
}

// call submits one batch, awaits its answer and judges every row.
func (p *player) call(i int, dir drivers.Direction, what string, e *endpoint, b []row) {
	batch := drivers.RowBatch{Dir: dir, Rows: make([]drivers.Row, len(b))}
	slots := make([]*arena.Arena, len(b))
	for j, r := range b {
		a, h, s := e.slot()
		slots[j] = a
		batch.Rows[j] = drivers.Row{Key: r.key, Handle: h, Slot: s, Position: r.pos}
		if dir == drivers.Publish {
			a.Fill(s, engine.Content(p.log.Seed, i, r.pos, e.slotBytes))
		} else {
			a.Fill(s, slices.Repeat([]byte{poison}, e.slotBytes))
		}
	}
	p.res.Calls++
	c, err := e.d.Submit(batch, p.onChange())
	if err != nil {
		refused := errors.Is(err, drivers.ErrInvalidSubmission) || errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrRejected)
		for _, r := range b {
			id, o := rowID{i, r.pos, what}, obj{i, r.pos}
			switch {
			case refused:
				if dir == drivers.Publish {
					p.know.refused(r.key, o)
				}
				p.record(id, r.key, e, "Submit refused: "+err.Error(), verdict{freedom: freeRefused})
			default:
				if dir == drivers.Publish {
					p.know.escaped(r.key, o)
				}
				p.record(id, r.key, e, "Submit error: "+err.Error(), verdict{freedom: freeEscaped})
			}
		}
		return
	}
	p.await(c)
	if p.rtr != nil && !over(c) && p.stalled == "" {
		// A store that stopped answering would make every later call wait
		// as long: the side stops here (a harness error, not a verdict:
		// the driver owns the call until Shutdown, D-SUB-3).
		p.stalled = fmt.Sprintf("call %d (%s of op %d) had no final answer and evidence within %v; the side's play stopped there", c.ID(), what, i, p.wait())
	}
	res := c.Results()
	wrongLength := len(res) != len(b)
	for j, r := range b {
		id := rowID{i, r.pos, what}
		st, answered := drivers.Fault, true // a wrong number of results: every row FAULT (SPEC §1)
		if !wrongLength {
			st, answered = res[j], res[j].Final()
		}
		text := statusWord(st, answered)
		if wrongLength {
			text = fmt.Sprintf("FAULT (%d results for %d rows)", len(res), len(b))
		}
		if !answered {
			text = "no final answer within the wait"
		}
		if dir == drivers.Publish {
			if st == drivers.Miss && answered {
				text = "MISS (declined)"
			}
			p.record(id, r.key, e, text, p.know.publish(r.key, obj{i, r.pos}, st, answered))
			continue
		}
		got, ok, desc := obj{}, false, ""
		if answered && st == drivers.OK {
			bytes := slots[j].Peek(batch.Rows[j].Slot)
			got, ok = p.objs[string(bytes)]
			switch {
			case ok:
				text, desc = "OK, the object of "+got.String()+p.whose(got, r.key), got.String()
			case allBytes(bytes, poison):
				desc = "nothing written (the slot still holds its poison)"
				text = "OK, " + desc
			default:
				desc = fmt.Sprintf("bytes of no publish of this log (%x…)", bytes[:min(8, len(bytes))])
				text = "OK, " + desc
			}
		}
		p.record(id, r.key, e, text, p.know.fetch(r.key, st, answered, got, ok, desc, e.caps.AbsentIsMiss))
	}
}

// whose says which publish of key the object o is: the log's first, a
// later one, or one of another key.
func (p *player) whose(o obj, key string) string {
	op := p.log.Ops[o.op]
	switch {
	case op.Keys[o.pos] != key:
		return " (a publish of " + op.Keys[o.pos] + ")"
	case p.first[key] == o:
		return " (the first publish of " + key + ")"
	}
	return " (a later publish of " + key + ")"
}

func allBytes(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return len(b) > 0
}
