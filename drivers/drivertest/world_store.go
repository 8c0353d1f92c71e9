package drivertest

import (
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

func (w *world) storeEvent(e memdriver.StoreEvent) {
	if e.Kind == memdriver.EventPut && e.By.Driver == "dt" {
		w.ep.Recorder.Put(w.rt.Now(), e.By.Call, e.By.Row, e.Key)
	}
}

// key returns a fresh key; on a real store it is made absent first when
// the harness can.
func (w *world) key() string {
	w.mu.Lock()
	w.nkey++
	k := fmt.Sprintf("storesim-drivertest/%016x/k%d", w.seed, w.nkey)
	w.mu.Unlock()
	if w.store == nil && w.c.h.MakeAbsent != nil {
		if err := w.c.h.MakeAbsent(k); err != nil {
			w.skip("Harness.MakeAbsent failed: %v", err)
		}
		w.mu.Lock()
		w.absent[k] = true
		w.mu.Unlock()
	}
	return k
}

func (w *world) keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = w.key()
	}
	return ks
}

// truth is the monitor's Options.Truth and the cases' ground truth:
// whether key is present, and whether that is known for sure.
func (w *world) truth(key string) (present, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.truthLocked(key)
}

func (w *world) truthLocked(key string) (present, known bool) {
	// A FETCH racing a PUBLISH of its key may linearize before or after it:
	// what the store holds now says nothing about what that FETCH saw.
	if w.pubOpen[key] > 0 || w.tainted[key] {
		return false, false
	}
	if w.store != nil {
		// On a store that may evict (the simulated one, or a driver that
		// says it evicts: Harness.Evicting) absent now proves nothing.
		return w.store.Has(key), !w.mayEvict()
	}
	switch {
	case w.unknown[key]:
		return false, false
	case w.absent[key]:
		return false, true
	}
	if _, ok := w.objects[key]; ok {
		return true, !w.c.h.Evicting
	}
	return false, false
}

// presentNow: the store holds key at this moment, as far as the suite
// knows — on a store that may evict too (it may drop the key later, which
// truth allows for): on the simulated store what it holds, elsewhere a key
// a publish stored and nothing since made absent or unknown.
func (w *world) presentNow(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pubOpen[key] > 0 || w.tainted[key] {
		return false
	}
	if w.store != nil {
		return w.store.Has(key)
	}
	if w.unknown[key] || w.absent[key] {
		return false
	}
	_, ok := w.objects[key]
	return ok
}

// object is the content the store holds under key, when known.
func (w *world) object(key string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if present, known := w.truthLocked(key); !known || !present {
		return nil, false
	}
	if w.store != nil {
		return w.store.Get(key)
	}
	obj := w.objects[key]
	return obj, obj != nil
}

// ended updates what is known of the store after a call's access ENDED and
// its rows became final.
func (w *world) ended(ct *callT, res []drivers.Status) {
	// One critical section: between the keys leaving flight and what is
	// known of them changing, a reader (a case, the monitor's truth on a
	// driver goroutine) would see a published key still known absent.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.openLocked(ct.b, -1)
	if ct.b.Dir != drivers.Publish {
		return
	}
	for i, r := range ct.b.Rows {
		if w.store != nil {
			continue
		}
		st := drivers.Fault // a wrong number of results: every row FAULT
		if len(res) == len(ct.b.Rows) {
			st = res[i]
		}
		switch st {
		case drivers.OK:
			if w.absent[r.Key] && w.pubOpen[r.Key] == 0 && !w.unknown[r.Key] {
				w.objects[r.Key] = ct.content[i]
			} else if _, ok := w.objects[r.Key]; !ok {
				w.objects[r.Key] = nil
			}
			delete(w.absent, r.Key)
			delete(w.unknown, r.Key)
		case drivers.Fault, drivers.Pending:
			if _, ok := w.objects[r.Key]; !ok {
				w.unknown[r.Key] = true
				delete(w.absent, r.Key)
			}
		}
	}
}

// open counts a batch's keys as in flight (+1) or done (-1), and taints a
// key whose FETCH and PUBLISH overlap.
func (w *world) open(b drivers.RowBatch, delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.openLocked(b, delta)
}

func (w *world) openLocked(b drivers.RowBatch, delta int) {
	for _, r := range b.Rows {
		mine, other := w.fetchOpen, w.pubOpen
		if b.Dir == drivers.Publish {
			mine, other = w.pubOpen, w.fetchOpen
		}
		mine[r.Key] += delta
		if delta > 0 && other[r.Key] > 0 {
			w.tainted[r.Key] = true
		}
		if w.pubOpen[r.Key] <= 0 && w.fetchOpen[r.Key] <= 0 {
			delete(w.tainted, r.Key)
		}
	}
}
