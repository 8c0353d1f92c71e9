package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// commands is the scenario language. Each command runs synchronously; only
// deliver, tick and stabilize run queued events.
var commands map[string]cmdSpec

func init() {
	commands = map[string]cmdSpec{
		"store": {usage: "store durable|evicting [seed=N] [wake-delay=DUR] [coalesce=P] [evict-chance=P] [order=seed|fifo]", minPos: 1, maxPos: 1,
			keys: []string{"seed", "wake-delay", "coalesce", "evict-chance", "order"}, run: cmdStore},
		"endpoint": {usage: "endpoint NAME [driver=memory|together|broken:<Name>] [rows=N] [absent-is-miss=BOOL] [cancel=BOOL] [regions=LABEL:SLOTSxBYTES,…] [inflight=N] [queued=N] [unprovable=N] [drain-timeout=DUR] [faults=KIND:RATE,…] [register=now|later]",
			minPos: 1, maxPos: 1, keys: []string{"driver", "rows", "absent-is-miss", "cancel", "regions", "inflight", "queued", "unprovable", "drain-timeout", "faults", "register"}, run: cmdEndpoint},
		"register":  {usage: "register EP", minPos: 1, maxPos: 1, run: cmdRegister},
		"publish":   {usage: "publish EP keys=a,b [mask=11] [as=NAME]", minPos: 1, maxPos: 1, keys: []string{"keys", "mask", "as"}, run: cmdSubmit(drivers.Publish)},
		"fetch":     {usage: "fetch EP keys=a,b [mask=11] [as=NAME]", minPos: 1, maxPos: 1, keys: []string{"keys", "mask", "as"}, run: cmdSubmit(drivers.Fetch)},
		"deliver":   {usage: "deliver [EVENT-ID | LABEL SUBSTRING]", minPos: 0, maxPos: -1, run: cmdDeliver},
		"queue":     {usage: "queue", run: cmdQueue},
		"tick":      {usage: "tick DURATION", minPos: 1, maxPos: 1, run: cmdTick},
		"stabilize": {usage: "stabilize [only=EP,…] [max=N]", keys: []string{"only", "max"}, run: cmdStabilize},
		"inject":    {usage: "inject EP FAULT [rate=P] | inject EP stale-lookup key=K | inject EP together-fail region=L", minPos: 2, maxPos: 2, keys: []string{"rate", "key", "region"}, run: cmdInject},
		"evict":     {usage: "evict KEY", minPos: 1, maxPos: 1, run: cmdEvict},
		"cancel":    {usage: "cancel NAME", minPos: 1, maxPos: 1, run: cmdCancel},
		"drain":     {usage: "drain EP", minPos: 1, maxPos: 1, run: cmdDrain},
		"shutdown":  {usage: "shutdown EP", minPos: 1, maxPos: 1, run: cmdShutdown},
		"check":     {usage: "check", run: cmdCheck},
		"stats":     {usage: "stats EP", minPos: 1, maxPos: 1, run: cmdStats},
		"set":       {usage: "set touches=BOOL", keys: []string{"touches"}, run: cmdSet},
		"driver-register": {usage: "driver-register EP LABEL:SLOTSxBYTES [over=REGION]", minPos: 2, maxPos: 2,
			keys: []string{"over"}, run: cmdDriverRegister},
		"driver-unregister": {usage: "driver-unregister EP h=HANDLE", minPos: 1, maxPos: 1, keys: []string{"h"}, run: cmdDriverUnregister},
		"driver-submit": {usage: "driver-submit EP fetch|publish h=HANDLE keys=a,b slots=0,1 [as=NAME]", minPos: 2, maxPos: 2,
			keys: []string{"h", "keys", "slots", "as"}, run: cmdDriverSubmit},
	}
}

func (w *world) needStore(b *block) error {
	if w.s == nil {
		return w.fail(b, "no store yet: a scenario starts with `store durable` or `store evicting`")
	}
	return nil
}

func (w *world) endpointArg(b *block, name string) (*endpoint, error) {
	if err := w.needStore(b); err != nil {
		return nil, err
	}
	ep := w.byName[name]
	if ep == nil {
		return nil, w.fail(b, "unknown endpoint %q (defined: %s)", name, strings.Join(sortedKeys(w.byName), " "))
	}
	return ep, nil
}

func cmdStore(w *world, b *block) error {
	if w.s != nil {
		return w.fail(b, "store defined twice")
	}
	switch b.pos[0] {
	case "durable":
	case "evicting":
		w.evicting = true
	default:
		return w.fail(b, "bad argument %q: want durable or evicting", b.pos[0])
	}
	seed := uint64(1)
	if v, ok := b.args["seed"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return w.badArg(b, "seed", "an unsigned integer")
		}
		seed = n
	}
	wake, err := w.durArg(b, "wake-delay", 0)
	if err != nil {
		return err
	}
	coalesce, err := w.floatArg(b, "coalesce", 0)
	if err != nil {
		return err
	}
	evict, err := w.floatArg(b, "evict-chance", 0)
	if err != nil {
		return err
	}
	if evict > 0 && !w.evicting {
		return w.fail(b, "evict-chance needs an evicting store")
	}
	o := sim.Options{Seed: seed, MaxWakeDelay: wake, CoalesceChance: coalesce}
	fifo := false
	switch b.args["order"] {
	case "", "seed":
	case "fifo":
		// The default schedule (sim.Schedule{}): events due together run
		// in creation order, no callback delay, no coalescing; the
		// scheduler draws nothing from the seed.
		if wake != 0 || coalesce != 0 {
			return w.fail(b, "order=fifo is the default schedule: no callback delay and no coalescing (drop wake-delay and coalesce)")
		}
		o.Script, fifo = &sim.Schedule{}, true
	default:
		return w.badArg(b, "order", "seed or fifo")
	}
	w.seed = seed
	w.s = sim.New(o)
	st, err := memdriver.NewStore(memdriver.StoreOptions{Evicting: w.evicting, EvictChance: evict, Rand: w.s.Rand("scenario/store"), OnEvent: w.storeEvent})
	if err != nil {
		return w.fail(b, "%v", err)
	}
	w.store = st
	if fifo {
		w.printf("store %s seed=%d order=fifo evict-chance=%v", b.pos[0], seed, evict)
		return nil
	}
	w.printf("store %s seed=%d wake-delay=%v coalesce=%v evict-chance=%v", b.pos[0], seed, wake, coalesce, evict)
	return nil
}

func cmdRegister(w *world, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend != nil {
		return w.fail(b, "endpoint %s already has a backend (register it once, with register=later)", ep.name)
	}
	w.register(ep)
	return nil
}

func cmdSubmit(dir drivers.Direction) func(w *world, b *block) error {
	return func(w *world, b *block) error {
		ep, err := w.endpointArg(b, b.pos[0])
		if err != nil {
			return err
		}
		keys := listArg(b, "keys")
		if len(keys) == 0 {
			return w.fail(b, "missing argument keys=a,b,…")
		}
		mask, err := w.maskArg(b, len(keys))
		if err != nil {
			return err
		}
		w.counter[dir]++
		name := b.args["as"]
		if name == "" {
			name = fmt.Sprintf("%c%d", strings.ToLower(dir.String())[0], w.counter[dir])
		}
		if w.named[name] != nil || w.raws[name] != nil {
			return w.fail(b, "name %q used twice", name)
		}
		r := &attemptRec{name: name, ep: ep, dir: dir, keys: keys}
		w.named[name] = r
		if ep.Backend == nil {
			w.printf("%s %s: endpoint %s has no backend", ep.name, name, ep.name)
			return nil
		}
		loan, err := ep.Lender.Lend(len(keys))
		if err != nil {
			w.printf("%s %s: no slots: %v", ep.name, name, err)
			return nil
		}
		if dir == drivers.Publish {
			for i := range keys {
				if a := ep.Lender.Arena(loan.Slots()[i].Region); a != nil {
					ep.Lender.Fill(loan, i, content(objectID(name, keys, i), a.Region().SlotBytes))
				}
			}
		}
		v, err := loan.View(ep.Backend, keys, mask)
		if err != nil {
			_ = ep.Lender.Return(loan)
			w.printf("%s %s: %v", ep.name, name, err)
			return nil
		}
		var shown []string
		for i, row := range v.Rows {
			s := ep.row(row)
			if !mask[i] {
				s = "-" + s
			}
			shown = append(shown, s)
		}
		w.printf("%s %s %v [%s]", ep.name, name, dir, strings.Join(shown, " "))
		if dir == drivers.Publish {
			r.a, err = ep.Backend.Publish(v)
		} else {
			r.a, err = ep.Backend.Fetch(v)
		}
		if err != nil {
			r.a = nil
			if rerr := ep.Lender.Return(loan); rerr != nil {
				return w.fail(b, "lender: %v", rerr)
			}
			w.printf("%s %s rejected: %v", ep.name, name, err)
			return nil
		}
		r.loan = loan
		if err := ep.Lender.Attach(loan, r.a); err != nil {
			return w.fail(b, "lender: %v", err)
		}
		w.attempts = append(w.attempts, r)
		r.loanS = lender.Lent
		w.printf("%s %s admitted: attempt %d, %d batch(es)", ep.name, name, r.a.ID(), r.a.Batches())
		return nil
	}
}

// objectID names the object a publish writes for row i: "<attempt>/<key>",
// with "#<row>" when the key repeats in the view, so every object is unique
// (the store model assumes it, S-LIN).
func objectID(name string, keys []string, i int) string {
	id := name + "/" + keys[i]
	for j, k := range keys {
		if k == keys[i] && j != i {
			return fmt.Sprintf("%s#%d", id, i)
		}
	}
	return id
}

func cmdDeliver(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	q := w.s.Queued()
	if len(q) == 0 {
		w.printf("nothing queued")
		return nil
	}
	if len(b.pos) == 0 {
		w.step(q[0], false)
		return nil
	}
	pattern := strings.Join(b.pos, " ")
	if id, err := strconv.ParseUint(pattern, 10, 64); err == nil {
		for _, e := range q {
			if e.ID == id {
				w.step(e, e.ID != q[0].ID)
				return nil
			}
		}
		w.printf("no queued event %d", id)
		return nil
	}
	for _, e := range q {
		if strings.Contains(e.Label, pattern) {
			w.step(e, e.ID != q[0].ID)
			return nil
		}
	}
	w.printf("no queued event matches %q", pattern)
	return nil
}

func cmdQueue(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	q := w.s.Queued()
	if len(q) == 0 {
		w.printf("nothing queued")
	}
	for _, e := range q {
		w.printf("%d @%v %s", e.ID, e.At, e.Label)
	}
	return nil
}

func cmdTick(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	d, err := time.ParseDuration(b.pos[0])
	if err != nil || d < 0 {
		return w.fail(b, "bad argument %q: want a duration like 10us", b.pos[0])
	}
	until := w.s.Now() + d
	for {
		e, ok := w.s.Next()
		if !ok || e.At > until {
			break
		}
		w.step(e, false)
	}
	w.s.RunUntil(until) // nothing is due: this only moves the clock
	w.printf("now @%v", w.s.Now())
	return nil
}

// cmdStabilize runs events until none is queued (or, with only=, until no
// event of those endpoints is), then reports work still pending.
func cmdStabilize(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	only := listArg(b, "only")
	for _, n := range only {
		if _, err := w.endpointArg(b, n); err != nil {
			return err
		}
	}
	max, err := w.intArg(b, "max", 100_000)
	if err != nil {
		return err
	}
	n := 0
	for ; n < max; n++ {
		e, ok := w.pick(only)
		if !ok {
			break
		}
		w.step(e, len(only) > 0)
	}
	switch {
	case n == max:
		w.printf("step limit: %d events run, more queued", max)
	case len(only) > 0:
	case len(w.s.Pending()) > 0:
		w.printf("idle with work pending:")
		for _, p := range w.s.Pending() {
			w.printf("  %s", p)
		}
	}
	return nil
}

// pick is the next event to run: the next queued one, or the first in run
// order that belongs to one of the named endpoints (its driver's events are
// labelled "memdriver/EP …", its backend's "EP/…").
func (w *world) pick(only []string) (sim.EventInfo, bool) {
	if len(only) == 0 {
		return w.s.Next()
	}
	for _, e := range w.s.Queued() {
		for _, n := range only {
			if strings.HasPrefix(e.Label, "memdriver/"+n+" ") || strings.HasPrefix(e.Label, n+"/") {
				return e, true
			}
		}
	}
	return sim.EventInfo{}, false
}

// faultSetter is what `inject` needs of a driver: the reference drivers
// (and the broken drivers built on them) have it.
type faultSetter interface {
	SetFault(kind string, rate float64) error
	InjectStaleLookup(key string)
	InjectTogetherFailure(label string)
}

func cmdInject(w *world, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	fs, ok := ep.Driver.(faultSetter)
	if !ok {
		w.printf("%s driver %s takes no injected faults", ep.name, ep.driver)
		return nil
	}
	kind := b.pos[1]
	switch {
	case kind == "stale-lookup" && b.args["key"] != "":
		fs.InjectStaleLookup(b.args["key"])
		w.printf("%s next FETCH of %s finds it evicted (stale lookup)", ep.name, b.args["key"])
		return nil
	case kind == "together-fail" && b.args["region"] != "":
		fs.InjectTogetherFailure(b.args["region"])
		w.printf("%s next together-registration fails at region %s", ep.name, b.args["region"])
		return nil
	case b.args["key"] != "" || b.args["region"] != "":
		return w.fail(b, "key= goes with stale-lookup and region= with together-fail")
	}
	rate, err := w.floatArg(b, "rate", 1)
	if err != nil {
		return err
	}
	if err := fs.SetFault(kind, rate); err != nil {
		return w.fail(b, "bad argument %q: %v", kind, err)
	}
	if rate > 0 {
		ep.faulty = true
	}
	w.printf("%s fault %s rate=%v", ep.name, kind, rate)
	return nil
}

func cmdEvict(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	w.store.Evict(b.pos[0])
	return nil
}

func cmdCancel(w *world, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	name := b.pos[0]
	if rc := w.raws[name]; rc != nil {
		if rc.call == nil {
			w.printf("%s: nothing to cancel (the submit was refused)", name)
			return nil
		}
		w.printf("%s %s cancel: %v", rc.ep.name, name, rc.call.Cancel())
		w.poll()
		return nil
	}
	r := w.named[name]
	if r == nil {
		return w.fail(b, "unknown attempt %q (named: %s)", name, strings.Join(sortedKeys(w.named), " "))
	}
	if r.a == nil {
		w.printf("%s %s: nothing to cancel (admission was refused)", r.ep.name, name)
		return nil
	}
	if r.a.Cancel() {
		w.printf("%s %s cancel committed", r.ep.name, name)
	} else {
		w.printf("%s %s cancel not committed: outcome was already %v", r.ep.name, name, r.a.State())
	}
	return nil
}

func cmdDrain(w *world, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	st := ep.Monitor.Drain()
	if st.Done {
		w.printf("%s drain done", ep.name)
		return nil
	}
	ids := make([]string, len(st.Pending))
	for i, id := range st.Pending {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	w.printf("%s drain not done: calls pending [%s]", ep.name, strings.Join(ids, " "))
	return nil
}

func cmdShutdown(w *world, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend == nil {
		w.printf("%s has no backend: driver shutdown only", ep.name)
		ep.Monitor.Shutdown(cancelled())
		return nil
	}
	ep.Asked = true
	ep.shutN++
	n := ep.shutN
	w.printf("%s shutdown %d requested", ep.name, n)
	ep.Backend.Shutdown(func(labels []string) {
		ep.Down = true
		w.printf("%s shutdown %d returned labels [%s]", ep.name, n, strings.Join(labels, " "))
		ep.Lender.ShutdownReturned(labels)
		if ep.Lender.Held() {
			w.printf("%s lender keeps its regions", ep.name)
		} else {
			w.printf("%s lender released its regions", ep.name)
		}
	})
	return nil
}

func cmdStats(w *world, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend == nil {
		w.printf("%s has no backend", ep.name)
		return nil
	}
	s := ep.Backend.Stats()
	w.printf("%s attempts=%d delivered=%d failed=%d cancelled=%d rejected=%d invalid=%d", ep.name, s.Attempts, s.Delivered, s.Failed, s.Cancelled, s.Rejected, s.Invalid)
	w.printf("%s served=%d missed=%d declined=%d raced=%d calls=%d lookups=%d", ep.name, s.Served, s.Missed, s.Declined, s.Raced, s.Calls, s.Lookups)
	w.printf("%s inflight=%d queued=%d unprovable=%d unprovable-total=%d retained-bytes=%d", ep.name, s.InFlight, s.Queued, s.Unprovable, s.UnprovableTotal, s.RetainedBytes)
	l := ep.Lender.Stats()
	w.printf("%s slots lent=%d released=%d retained=%d retained-bytes=%d held=%v", ep.name, l.Lent, l.Released, l.Retained, l.RetainedBytes, ep.Lender.Held())
	return nil
}

func cmdSet(w *world, b *block) error {
	t, err := w.boolArg(b, "touches", w.touches)
	if err != nil {
		return err
	}
	w.touches = t
	w.printf("touches=%v", t)
	return nil
}

// cmdDriverRegister registers a region straight with the endpoint's
// (monitored) driver, outside its backend: fresh memory, or the memory of
// one of the endpoint's regions with over= (an overlap, D-REG-1). Every slot
// of fresh memory is lent, so driver-submit may use it.
func cmdDriverRegister(w *world, b *block) error {
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

func cmdDriverUnregister(w *world, b *block) error {
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
func cmdDriverSubmit(w *world, b *block) error {
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
