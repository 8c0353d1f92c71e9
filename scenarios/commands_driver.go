package scenarios

import (
	"fmt"
	"strconv"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim/arena"
)

// The driver-* commands: registrations and calls straight to the endpoint's
// (monitored) driver, past its backend.

// cmdDriverRegister registers a region straight with the endpoint's
// (monitored) driver, outside its backend: fresh memory, or the memory of
// one of the endpoint's regions with over= (an overlap, D-REG-1). Every slot
// of fresh memory is lent, so driver-submit may use it.
func cmdDriverRegister(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	spec, err := parseRegion(b.pos[1])
	if err != nil || spec.share != "" || spec.mem != 0 {
		return w.fail(b, "bad argument %q: want LABEL:SLOTSxBYTES", b.pos[1])
	}
	if b.args["over"] == "" {
		if err := w.limitRegion(spec); err != nil {
			return w.fail(b, "bad argument %q: %v", b.pos[1], err)
		}
	} else if err := workload.CheckRegion(spec.String(), spec.slots, spec.slotBytes); err != nil {
		return w.fail(b, "bad argument %q: %v", b.pos[1], err)
	}
	var mem drivers.Memory
	if over := b.args["over"]; over != "" {
		a := ep.Lender.Arena(over)
		for _, r := range ep.raw {
			if a == nil && r.Label() == over {
				a = r
			}
		}
		if a == nil {
			return w.fail(b, "bad argument over=%q: endpoint %s has no region %q", over, ep.name, over)
		}
		mem = a
	} else {
		if spec.slots == 0 || spec.slotBytes == 0 {
			return w.fail(b, "bad argument %q: fresh memory needs slots and bytes > 0", b.pos[1])
		}
		a := arena.New(spec.label, spec.slots, spec.slotBytes, arena.Options{Clock: w.s, OnTouch: func(t arena.Touch) { w.touch(ep, t) }})
		for i := range spec.slots {
			a.Lend(i, 0)
		}
		ep.raw = append(ep.raw, a)
		mem = a
	}
	h, err := ep.Monitor.Register(drivers.Region{Label: spec.label, Slots: spec.slots, SlotBytes: spec.slotBytes, Mem: mem})
	if err != nil {
		w.printf("%s driver-register %s refused: %v", ep.name, spec, err)
		return nil
	}
	w.printf("%s driver-register %s: handle %d", ep.name, spec, h)
	return nil
}

func cmdDriverUnregister(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	h, err := w.intArg(b, "h", -1)
	if err != nil || h < 0 {
		return w.badArg(b, "h", "a handle number")
	}
	if err := ep.Monitor.Unregister(drivers.Handle(h)); err != nil {
		w.printf("%s driver-unregister handle %d: %v", ep.name, h, err)
		return nil
	}
	w.printf("%s driver-unregister handle %d: ok", ep.name, h)
	return nil
}

// cmdDriverSubmit submits a batch straight to the endpoint's (monitored)
// driver, as written: no cutting, no look-up, no backend checks.
func cmdDriverSubmit(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	var dir drivers.Direction
	switch b.pos[1] {
	case "fetch":
		dir = drivers.Fetch
	case "publish":
		dir = drivers.Publish
	default:
		return w.fail(b, "bad argument %q: want fetch or publish", b.pos[1])
	}
	h, err := w.intArg(b, "h", -1)
	if err != nil || h < 0 {
		return w.badArg(b, "h", "a handle number")
	}
	keys, slotArgs := listArg(b, "keys"), listArg(b, "slots")
	if len(keys) == 0 || len(keys) != len(slotArgs) {
		return w.fail(b, "want keys=… and slots=… of the same non-zero length")
	}
	rows := make([]drivers.Row, len(keys))
	for i, k := range keys {
		s, err := strconv.Atoi(slotArgs[i])
		if err != nil {
			return w.badArg(b, "slots", "comma-separated slot numbers")
		}
		rows[i] = drivers.Row{Key: k, Handle: drivers.Handle(h), Slot: s, Position: i}
	}
	w.counter[0]++
	name := b.args["as"]
	if name == "" {
		name = fmt.Sprintf("c%d", w.counter[0])
	}
	if w.named[name] != nil || w.raws[name] != nil {
		return w.fail(b, "name %q used twice", name)
	}
	rc := &rawCall{name: name, ep: ep}
	w.raws[name] = rc
	if dir == drivers.Publish {
		for _, r := range rows {
			for _, a := range ep.raw {
				if l := ep.labels[r.Handle]; l == a.Label() && r.Slot >= 0 && r.Slot < a.Region().Slots {
					a.Fill(r.Slot, content(name+"/"+r.Key, a.Region().SlotBytes))
				}
			}
		}
	}
	w.printf("%s %s driver-submit %v %s", ep.name, name, dir, ep.rows(rows))
	c, err := ep.Monitor.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, func() {})
	if err != nil {
		return nil // the printer shows the refusal
	}
	rc.call = c
	return nil
}
