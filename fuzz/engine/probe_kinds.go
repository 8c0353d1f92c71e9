package engine

import (
	"strconv"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/sim/arena"
)

// The probes, one per workload.ProbeKind (probe.run picks one): each puts
// the driver in one situation of the contract the backend never creates.

// overlap: register memory, then a second region over the same memory
// (D-REG-1 refuses it); whatever registered is closed again.
func (x *probe) overlap() {
	a := x.arena("a", 2, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	alias := a.Region()
	alias.Label = x.label("alias")
	if h2, err := x.p.d().Register(alias); err == nil {
		x.close(h2)
	}
	x.close(h)
}

// staleClose: register, close, register the same memory again, close the
// old handle (D-REG-3: a no-op), then — for a driver that cannot tell the
// monitor whether a handle is live — use the new handle (a call on it must
// be accepted), and close it once the call ended.
func (x *probe) staleClose() {
	a := x.arena("a", 2, x.slot, nil)
	h1, ok := x.register(a)
	if !ok || !x.close(h1) {
		return
	}
	h2, ok := x.register(a)
	if !ok {
		return
	}
	_ = x.p.d().Unregister(h1)
	if _, ok := x.p.ep.Monitor.Unwrap().(monitor.LiveReporter); ok {
		// The monitor asked the driver whether h2 is still live; without
		// that probe it learns it from a call on h2 (refused as stale?).
		x.close(h2)
		return
	}
	b := drivers.RowBatch{Rows: []drivers.Row{{Handle: h2, Slot: 0, Position: 0}}}
	switch {
	case x.caps.CanPublish:
		b.Dir, b.Rows[0].Key = drivers.Publish, x.key("obj")
		a.Fill(0, x.object(0, x.slot))
	case x.caps.CanFetch:
		b.Dir, b.Rows[0].Key = drivers.Fetch, x.key("absent")
	default:
		x.close(h2)
		return
	}
	if _, err := x.submit("after stale close", b, func(c drivers.Call) {
		if b.Dir == drivers.Publish {
			x.settled(c, b.Rows[0].Key)
		}
		x.closeWhenEnded(h2, c)
	}); err != nil {
		x.close(h2)
	}
}

// afterShutdown: once the endpoint's driver was shut down (its backend's
// shutdown returned), register memory (D-REG-5 refuses it). It waits for
// the shutdown in steps of 100µs, for at most 20ms.
func (x *probe) afterShutdown(tries int) {
	if !x.p.ep.Down {
		if tries < 200 {
			x.p.r.s.After(100*time.Microsecond, "probe/"+x.p.ep.Name+" "+strconv.Itoa(x.op)+" waits for shutdown", func() { x.afterShutdown(tries + 1) })
		}
		return
	}
	a := x.arena("late", 1, x.slot, nil)
	if h, ok := x.register(a); ok {
		x.close(h)
	}
}

// busyClose: a call on fresh memory, and at once a close of its region
// while the call's access is not ENDED (D-REG-6 refuses it); the region is
// closed for good once the call ended.
func (x *probe) busyClose() {
	a := x.arena("busy", 1, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	b := drivers.RowBatch{Rows: []drivers.Row{{Handle: h, Slot: 0, Position: 0}}}
	if x.caps.CanPublish {
		b.Dir, b.Rows[0].Key = drivers.Publish, x.key("obj")
		a.Fill(0, x.object(0, x.slot))
	} else {
		b.Dir, b.Rows[0].Key = drivers.Fetch, x.key("absent")
	}
	closed := false
	c, err := x.submit("busy", b, func(c drivers.Call) {
		if b.Dir == drivers.Publish {
			x.settled(c, b.Rows[0].Key)
		}
		if !closed {
			x.closeWhenEnded(h, c)
		}
	})
	if err != nil {
		x.close(h)
		return
	}
	closed = c != nil && x.p.d().Unregister(h) == nil
}

// absentFetch: fetch a key no one publishes; the monitor judges the
// answer against the truth (D-MISS-HONEST), the memory oracle the slot.
func (x *probe) absentFetch() {
	x.fetch("absent", []string{x.key("absent")}, nil)
}

// repeatedKey: a FETCH batch naming the key twice (D-BATCH-KEYS refuses
// it).
func (x *probe) repeatedKey(key string) {
	x.fetch("twice", []string{key, key}, nil)
}

// sizeMismatch: fetch the object, published from a slot half the
// endpoint's size, into a slot of the endpoint's size (D-STATUS: not OK).
func (x *probe) sizeMismatch(key string) {
	x.fetch("fetch", []string{key}, nil)
}

// evictDuringFetch: fetch the object and evict it from the store as the
// fetch's first bytes land (the store may drop a key at any time); an OK
// must still deliver the whole object (D-STATUS).
func (x *probe) evictDuringFetch(key string) {
	store := x.p.r.store
	x.fetch("fetch", []string{key}, func(c *drivers.Call) func(arena.Touch) {
		evicted := false
		return func(t arena.Touch) {
			if evicted || t.Op != arena.Write || *c == nil || t.By.Call != (*c).ID() {
				return
			}
			evicted = true
			x.p.r.s.After(0, "probe/"+x.p.ep.Name+" "+strconv.Itoa(x.op)+" evicts "+key, func() { store.Evict(key) })
		}
	})
}

// concurrentPut: two different objects published under one key by two
// calls in flight together. Once both are done, and again at the end of
// the run, the store holds one of them whole or nothing (D-SUB-5); on a
// durable store no stored object is ever replaced (D-SUB-4).
func (x *probe) concurrentPut() {
	key := x.key("obj")
	a := x.arena("puts", 2, x.slot, nil)
	h, ok := x.register(a)
	if !ok {
		return
	}
	objs := [][]byte{x.object(0, x.slot), x.object(1, x.slot)}
	var calls [2]drivers.Call
	left := 0
	for i := range 2 {
		a.Fill(i, objs[i])
		b := drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: h, Slot: i, Position: 0}}}
		c, err := x.submit("put "+strconv.Itoa(i), b, func(c drivers.Call) {
			x.settled(c, key)
			if left--; left == 0 {
				x.storeCheck(key, objs, calls[0], calls[1])
				x.closeWhenEnded(h, calls[0], calls[1])
			}
		})
		if err == nil {
			calls[i] = c
			left++
		}
	}
	if left == 0 {
		x.close(h)
		return
	}
	x.p.ends = append(x.p.ends, func() { x.storeCheck(key, objs, calls[0], calls[1]) })
}
