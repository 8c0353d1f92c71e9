package broken

import (
	"slices"
	"sync"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

// The planted bugs modelled on field reports, each citing its report:
// BatchKeyedByKey, ConcurrentPutTruncates, NotFoundAsError, LeaseExpiredRead,
// EmptyGetOK, DoubleRegistration (NoTogetherRollback is a hook alone, in
// plants.go; the table of every bug is there too).

// keyedBuffers is BatchKeyedByKey (D-BATCH-KEYS, D-STATUS). Field bug:
// Mooncake store's batch_get_buffer_internal kept a batch's destination
// slices in a map keyed by the object key (issue #3876), so for a key named
// twice the later entry overwrote the earlier, only one buffer was filled,
// and the other was returned as a success holding whatever the allocator
// left there. Here the batch is accepted (the Batch hook validates it with
// the repeats renamed) and the write of a FETCH row whose key a later row
// of the call repeats is dropped: its slot is never written, yet it answers
// OK like the row that was.
func (w *driver) keyedBuffers(m *memory, by drivers.Toucher, off int, p []byte) error {
	w.mu.Lock()
	c := w.calls[by.Call]
	shadowed := false
	if c != nil && by.Row >= 0 && by.Row < len(c.b.Rows) {
		key := c.b.Rows[by.Row].Key
		for _, r := range c.b.Rows[by.Row+1:] {
			shadowed = shadowed || r.Key == key
		}
	}
	w.mu.Unlock()
	if shadowed {
		return nil // the buffer map sent this row's bytes to the later row's slot
	}
	return m.Memory.Write(by, off, p)
}

// truncateRacingPut is ConcurrentPutTruncates (D-SUB-5, D-SUB-4). Field
// bug: a second put of a key that is still being written preempts the first
// (Mooncake's PutStart/UpsertStart reclaiming an in-progress object), and
// the first writer's stale completion then marks the object complete before
// the data behind it was written (issue #3030: a stale PutEnd may mark the
// new replica COMPLETE before data is written), so the key is readable with
// a truncated value. Here, when a PUBLISH row finishes reading its slot
// while another PUBLISH call of this driver still has a row of the same key
// without a result, the object the store holds under the key is replaced,
// right after, by its first half followed by zeros.
func (w *driver) truncateRacingPut(m *memory, by drivers.Toucher, off int, p []byte) error {
	if err := m.Memory.Read(by, off, p); err != nil {
		return err
	}
	row, ok := w.row(by)
	if !ok || !m.ends(row, off, len(p)) || !w.racingPut(by.Call, row.Key) {
		return nil
	}
	w.rt.After(0, w.label+" stale completion", func() {
		obj, held := w.store.Get(row.Key)
		if w.isShutting() || !held {
			return
		}
		cut := make([]byte, len(obj))
		copy(cut, obj[:len(obj)/2])
		w.store.Evict(row.Key)
		w.store.Put(row.Key, cut)
	})
	return nil
}

// racingPut reports whether a PUBLISH call of w other than id has a row of
// key without a final result.
func (w *driver) racingPut(id drivers.CallID, key string) bool {
	w.mu.Lock()
	var others []*call // the order does not matter: any one decides
	for cid, c := range w.calls {
		if cid != id && c.b.Dir == drivers.Publish && slices.ContainsFunc(c.b.Rows, func(r drivers.Row) bool { return r.Key == key }) {
			others = append(others, c)
		}
	}
	w.mu.Unlock()
	for _, c := range others {
		res := c.Call.Results()
		for i, r := range c.b.Rows {
			if r.Key == key && i < len(res) && !res[i].Final() {
				return true
			}
		}
	}
	return false
}

// notFoundAsError is NotFoundAsError (D-MISS-HONEST). Field bug: Mooncake
// store's Python binding answered a query of a missing key with
// UNKNOWN_ERROR instead of OBJECT_NOT_FOUND ("Query failed for key … with
// error: UNKNOWN_ERROR", fixed in PR #308 to return null), so the connector
// saw a failed transfer where there was a plain miss. Here the Row hook
// turns the MISS of an absent key into FAULT, and the Access hook keeps
// such a call UNPROVABLE instead of ENDED: an unknown error proves nothing
// about the transfer (legal, but the memory stays retained).
func notFoundAsError() *memdriver.Hooks {
	var mu sync.Mutex // the hooks run under the reference driver's lock; this guards failed alone
	failed := map[drivers.CallID]bool{}
	return &memdriver.Hooks{
		Row: func(p *memdriver.RowPlan) {
			if p.Dir == drivers.Fetch && p.Status == drivers.Miss {
				p.Status = drivers.Fault // "not found" surfaces as an unknown error (D-MISS-HONEST)
				mu.Lock()
				failed[p.Call] = true
				mu.Unlock()
			}
		},
		Access: func(a memdriver.AccessChange) drivers.Access {
			mu.Lock()
			defer mu.Unlock()
			if failed[a.Call] && a.To == drivers.AccessEnded {
				return drivers.AccessUnprovable
			}
			return a.To
		},
	}
}

// readPastLease is LeaseExpiredRead (D-STATUS). Field bug: a Mooncake get
// holds a lease on the object only for the lease TTL; a transfer that runs
// past it reads memory the master may already have evicted and reused, and
// the client reported it as a success (PR #778 added the check that a Get
// completed within its lease; issue #4239 found BatchGet still without it).
// Here a FETCH row's chunk written after the key left the store carries
// the reused memory's bytes instead of the object's, and the row still
// answers OK (on the evicting store S-LIN sees the wrong object too).
func (w *driver) readPastLease(m *memory, by drivers.Toucher, off int, p []byte) error {
	if row, ok := w.row(by); ok && !w.store.Has(row.Key) {
		reused := make([]byte, len(p))
		for i := range reused {
			reused[i] = 0x5A
		}
		p = reused
	}
	return m.Memory.Write(by, off, p)
}

// emptyGetOK is EmptyGetOK (D-STATUS). Field bug: Mooncake store's Python
// get() returns zero-length bytes when the key is missing, and a caller
// that took an empty result for a stored empty value answered 200 with an
// empty body for a key that does not exist (found in review of PR #2587).
// Here a FETCH of a key the store does not hold moves zero bytes and
// answers OK, the slot left as it was.
func (w *driver) emptyGetOK() {
	w.hooks = &memdriver.Hooks{Row: func(p *memdriver.RowPlan) {
		if p.Dir == drivers.Fetch && len(p.Data) == 0 && (p.Status == drivers.Miss || p.Status == drivers.Fault) && !w.store.Has(p.Key) {
			p.Status, p.Limit = drivers.OK, 0 // zero bytes read, taken for success (D-STATUS)
		}
	}}
}

// doubleRegistration is DoubleRegistration (D-REG-1, D-REG-3). Field bug:
// NIXL keys registered descriptors by (device, address, length) and
// resolves a deregistration to the first match, so registering one buffer
// twice and deregistering the pair freed the first registration twice
// (issue #1792: duplicate-descriptor double free). Here a Register of
// memory whose extent a live registration of this driver covers exactly
// answers that registration's handle again (no refusal, D-REG-1; the
// handle reused, D-REG-3), and a close of a handle handed out more often
// than it was closed, once its registration is gone, closes the live
// registration that now covers the same memory — the second free of the
// pair hits whatever was registered there since.
func (w *driver) doubleRegistration() {
	extra := map[drivers.Handle]int{}                       // handouts beyond the first, not yet closed again; w.mu
	same := func(h drivers.Handle, r drivers.Region) bool { // w.mu held
		o, ok := w.regions[h]
		if !ok || o.Mem == nil || r.Mem == nil {
			return false
		}
		ob, on := o.Mem.Extent()
		rb, rn := r.Mem.Extent()
		return ob == rb && on == rn
	}
	covering := func(r drivers.Region, not drivers.Handle) []drivers.Handle {
		w.mu.Lock()
		defer w.mu.Unlock()
		var hs []drivers.Handle
		for h := range w.regions {
			if h != not && same(h, r) {
				hs = append(hs, h)
			}
		}
		slices.Sort(hs) // by handle, as the reference driver keeps its table
		return hs
	}
	w.registerAs = func(r drivers.Region) (drivers.Handle, bool) {
		for _, h := range covering(r, 0) {
			if w.Live(h) {
				w.mu.Lock()
				extra[h]++
				w.mu.Unlock()
				return h, true // the same buffer: the same registration, no refusal (D-REG-1)
			}
		}
		return 0, false
	}
	w.unregister = func(h drivers.Handle) error {
		if w.Live(h) {
			return w.Driver.Unregister(h)
		}
		w.mu.Lock()
		again := extra[h] > 0
		if again {
			extra[h]--
		}
		r := w.regions[h]
		w.mu.Unlock()
		if again {
			for _, x := range covering(r, h) {
				if w.Live(x) {
					return w.Driver.Unregister(x) // the pair's second free (D-REG-3)
				}
			}
		}
		return w.Driver.Unregister(h)
	}
}
