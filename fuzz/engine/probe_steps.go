package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim/arena"
)

// What a probe does, step by step: its labels, keys and memory, its
// registrations and calls (past the backend, through the monitored driver), and
// the judgements of what the driver and the store answered that need the
// store's history (D-STATUS of an OK fetch, D-SUB-4, D-SUB-5). The probes
// themselves, one per workload.ProbeKind, are in probe_kinds.go.

func (x *probe) label(what string) string {
	return workload.ProbeLabelPrefix + strconv.Itoa(x.op) + "-" + what
}

func (x *probe) key(what string) string {
	return workload.ProbeKeyPrefix + strconv.Itoa(x.op) + "/" + what
}

// arena is fresh memory of the probe, every slot lent to it, judged by the
// memory oracle; hook (if set) sees every touch after the recorder.
func (x *probe) arena(what string, slots, slotBytes int, hook func(arena.Touch)) *arena.Arena {
	ep := x.p.ep
	a := arena.New(x.label(what), slots, slotBytes, arena.Options{Clock: x.p.r.s, OnTouch: func(t arena.Touch) {
		ep.Recorder.OnTouch(t)
		if hook != nil {
			hook(t)
		}
	}})
	for i := range slots {
		a.Lend(i, probeOwner)
	}
	ep.AddArena(a)
	return a
}

// register registers a under its own label.
func (x *probe) register(a *arena.Arena) (drivers.Handle, bool) {
	h, err := x.p.d().Register(a.Region())
	return h, err == nil
}

// close closes h, retrying a close that failed (D-REG-4 says a later close
// retries); it reports whether a close succeeded.
func (x *probe) close(h drivers.Handle) bool {
	for range 3 {
		err := x.p.d().Unregister(h)
		if err == nil {
			return true
		}
		if !errors.Is(err, drivers.ErrUnregisterFailed) {
			return false
		}
	}
	return false
}

// closeWhenEnded closes h once every call of cs is done with access ENDED
// (an UNPROVABLE call keeps its memory registered: Shutdown labels it).
func (x *probe) closeWhenEnded(h drivers.Handle, cs ...drivers.Call) {
	for _, c := range cs {
		if c != nil && c.Access() != drivers.AccessEnded {
			return
		}
	}
	x.close(h)
}

// submit starts a probe call with the per-call faults off; then runs once
// the call is done (see done). A refused Submit returns its error and
// calls nothing.
func (x *probe) submit(what string, b drivers.RowBatch, then func(drivers.Call)) (drivers.Call, error) {
	p := x.p
	pc := &probeCall{rows: len(b.Rows), then: then} // one allocation for what the wake-up reads and writes
	// The wake-up runs pc.Run: no closure of its own.
	wake := p.r.s.WakeRun("probe/"+p.ep.Name+" "+strconv.Itoa(x.op)+" "+what, pc)
	q := p.quiet()
	c, err := p.d().Submit(b, wake)
	q.restore()
	pc.c = c
	if err != nil {
		return nil, err
	}
	if p.ctl != nil {
		p.cleanCall(c.ID())
	}
	return c, nil
}

// probeCall is a probe call as its wake-up sees it (Run).
type probeCall struct {
	c        drivers.Call // nil until Submit returned it
	finished bool
	rows     int
	then     func(drivers.Call)
}

func (pc *probeCall) Run() {
	if pc.c == nil || pc.finished || !done(pc.c, pc.rows) {
		return
	}
	pc.finished = true
	if pc.then != nil {
		pc.then(pc.c)
	}
}

// done: the call has access evidence and every row a final result (or
// the driver answered a wrong number of results, which the monitor
// reports).
func done(c drivers.Call, rows int) bool {
	if !c.Access().Evidenced() {
		return false
	}
	res := c.Results()
	if len(res) != rows {
		return true
	}
	for _, s := range res {
		if !s.Final() {
			return false
		}
	}
	return true
}

// object is the content the probe publishes from row of its op.
func (x *probe) object(row, n int) []byte { return Content(x.p.r.log.Seed, x.op, 1000+row, n) }

// settled records what a probe publish of key left behind: a row that
// FAULTed, or a call without proof that it ended, may still land.
func (x *probe) settled(c drivers.Call, key string) {
	res := c.Results()
	if c.Access() != drivers.AccessEnded || len(res) != 1 || (res[0] != drivers.OK && res[0] != drivers.Miss) {
		x.p.r.facts.taint(key)
	}
}

// publishThen publishes the probe's object (slotBytes of its size) under
// key "obj" from memory of its own, then (once the publish is done, or at
// once when the driver does not publish) looks the key up and runs next.
// The lookup is judged against the truth (D-LOOK-2).
func (x *probe) publishThen(next func(key string)) {
	key := x.key("obj")
	lookThenNext := func() {
		_, _ = x.p.d().Contains(context.Background(), []string{key})
		next(key)
	}
	if !x.caps.CanPublish {
		lookThenNext()
		return
	}
	size := x.slot
	if x.kind == workload.ProbeSizeMismatch {
		size = x.slot / 2
		if size == 0 {
			size = 2 * x.slot
		}
	}
	a := x.arena("pub", 1, size, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	a.Fill(0, x.object(0, size))
	b := drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h, Slot: 0, Position: 0}}}
	if _, err := x.submit("publish", b, func(c drivers.Call) {
		x.settled(c, key)
		x.closeWhenEnded(h, c)
		lookThenNext()
	}); err != nil {
		x.close(h)
	}
}

// fetch fetches keys into consecutive slots of fresh memory of the
// endpoint's slot size, judges every OK row against the store (okCheck),
// and closes the memory once the call ended. hook sees its touches.
func (x *probe) fetch(what string, keys []string, hook func(c *drivers.Call) func(arena.Touch)) {
	var c drivers.Call
	var th func(arena.Touch)
	if hook != nil {
		th = hook(&c)
	}
	a := x.arena(what, len(keys), x.slot, th)
	h, ok := x.register(a)
	if !ok {
		return
	}
	b := drivers.RowBatch{Dir: drivers.Fetch}
	for i, k := range keys {
		b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: h, Slot: i, Position: i})
	}
	var err error
	c, err = x.submit(what, b, func(c drivers.Call) {
		x.okCheck(c, b, a)
		x.closeWhenEnded(h, c)
	})
	if err != nil {
		x.close(h)
	}
}

// okCheck is D-STATUS for every row of a done FETCH answered OK: the slot
// holds, whole, an object of exactly the slot's size that the store held
// under the key. A key the store never held is judged only when the driver
// is known to use the harness's store (the reference driver's kind).
func (x *probe) okCheck(c drivers.Call, b drivers.RowBatch, a *arena.Arena) {
	res := c.Results()
	if len(res) != len(b.Rows) {
		return // the monitor reports a wrong number of results (D-STATUS)
	}
	f := x.p.r.facts
	for i, s := range res {
		row := b.Rows[i]
		if s != drivers.OK || f.views[row.Key] {
			continue
		}
		got := a.Peek(row.Slot)
		objs, complete := f.objects(row.Key)
		switch {
		case !complete:
		case len(objs) == 0 && len(f.events[row.Key]) == 0 && x.p.ctl != nil:
			x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q, which the store never held (OK means the whole object is in the slot)", i, row.Key))
		case len(objs) == 0:
		case !holdsOne(got, objs):
			sizes := map[int]bool{}
			for _, o := range objs {
				sizes[len(o)] = true
			}
			if !sizes[len(got)] {
				x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q into a %d-byte slot, but every object the store held under it has another size (%d bytes first): OK means the whole object, of exactly the slot's size", i, row.Key, len(got), len(objs[0])))
				continue
			}
			last := objs[len(objs)-1]
			x.p.fail(rules.DStatus, c.ID(), i, row.Key, fmt.Sprintf("FETCH row %d answered OK for key %q but the slot holds no object the store held under it (%d of %d bytes differ from the last one)", i, row.Key, diffBytes(got, last), len(got)))
		}
	}
}

func holdsOne(got []byte, objs [][]byte) bool {
	for _, o := range objs {
		if bytes.Equal(got, o) {
			return true
		}
	}
	return false
}

func diffBytes(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// storeCheck judges the store under key after the probe's puts of objs.
func (x *probe) storeCheck(key string, objs [][]byte, cs ...drivers.Call) {
	p, f := x.p, x.p.r.facts
	if f.views[key] {
		return
	}
	var id drivers.CallID
	for _, c := range cs {
		if c != nil {
			id = c.ID()
		}
	}
	if obj, ok := f.store.Get(key); ok && !holdsOne(obj, objs) {
		p.fail(rules.DSub5, id, 0, key, fmt.Sprintf("after two concurrent PUBLISHes of key %q the store holds an object neither wrote whole (%d of %d bytes differ from the first, %d from the second): a put is visible whole or not at all",
			key, diffBytes(obj, objs[0]), len(obj), diffBytes(obj, objs[1])))
	}
	if f.store.Evicting() {
		return // the store may drop the first object; a later put may then store
	}
	stored := 0
	for _, e := range f.events[key] {
		if e.evict {
			continue
		}
		if stored++; stored > 1 {
			// A durable store drops nothing, so a second stored object
			// replaced the first.
			who := "a put outside any driver call"
			if e.by.Driver != "" {
				who = fmt.Sprintf("%s call %d row %d", e.by.Driver, e.by.Call, e.by.Row)
			}
			p.fail(rules.DSub4, id, 0, key, fmt.Sprintf("on a durable store the object under key %q was replaced at %v (by %s) after a PUBLISH had stored one: first writer wins", key, e.at, who))
			return
		}
	}
}
