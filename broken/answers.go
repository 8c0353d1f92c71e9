package broken

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
)

// The broken drivers whose bug hides in an answer the suite once took on
// trust: a drain that says "not done", a shutdown label, a NOT_ATTEMPTED
// row, a refused close, a lookup. Each breaks its rule only through that
// answer, so only the check that judges the answer itself catches it (the
// check each one proves is named with it).
//
//	bug                     form     where            the check that catches it
//	DrainLeaksFaulted       wrapper  Drain            a drain at rest must be done (monitor AtRest)
//	DrainWaitsForProof      wrapper  Drain            the same, with an UNPROVABLE call (D-DRAIN-1/unprovable-call-drains)
//	ReleasesRetained        both     Shutdown         a labelled region must still be held (monitor Shutdown)
//	CancelledPublishLands   wrapper  Cancel, Results  no put for a NOT_ATTEMPTED publish row (the memory oracle, the store's log)
//	BusyCloseForgets        both     Unregister, Register  the memory re-registered after a refused close (D-REG-6/busy-close-refused)
//	FullLookupAnyPresent    wrapper  Contains         a full-size lookup with absent keys (D-LOOK-1/full-size-with-absent)
//	CachesAbsence           wrapper  Contains, Submit  S-LIN of a lookup, filed under D-LOOK-2 (the swarm: several clients on one store)
const (
	// DrainLeaksFaulted keeps every call that ended (access ENDED) with a
	// FAULT row in Drain's pending list for ever, so a drain is never done
	// once a row faulted (D-DRAIN-1).
	DrainLeaksFaulted Name = "DrainLeaksFaulted"
	// DrainWaitsForProof reports a call whose access is UNPROVABLE pending
	// in Drain until it is proven ENDED — which may be never — although
	// UNPROVABLE is evidence: the driver stopped waiting (D-DRAIN-1).
	DrainWaitsForProof Name = "DrainWaitsForProof"
	// ReleasesRetained labels the regions UNPROVABLE calls name
	// region:<label>:retained at Shutdown, as it must, but closes them
	// anyway: the label names a resource that was released (D-SHUT-1).
	ReleasesRetained Name = "ReleasesRetained"
	// CancelledPublishLands answers Cancel of a PUBLISH by reporting every
	// row without a result NOT_ATTEMPTED, but lets the transfers run on: the
	// store is written by rows that say they never started (D-STATUS).
	CancelledPublishLands Name = "CancelledPublishLands"
	// BusyCloseForgets refuses a busy Unregister with ErrBusy, as it must,
	// but drops the region from its overlap check: the same memory then
	// registers a second time while the first binding is live (D-REG-6:
	// the refused close did not leave the binding as it was).
	BusyCloseForgets Name = "BusyCloseForgets"
	// FullLookupAnyPresent answers a lookup of exactly MaxRowsPerOp keys
	// with one aggregate answer for all of them: present for every key when
	// any one is present (D-LOOK-1).
	FullLookupAnyPresent Name = "FullLookupAnyPresent"
	// CachesAbsence remembers every key a lookup found absent and answers
	// "absent" for it from then on, forgetting only the keys it publishes
	// itself: a key another client stored since is reported absent
	// (D-LOOK-2).
	CachesAbsence Name = "CachesAbsence"
)

// installAnswer sets the hooks and wrap points of the bugs of this file.
func (w *driver) installAnswer(n Name) {
	switch n {
	case DrainLeaksFaulted:
		w.drain = w.drainAlsoListing(func(res []drivers.Status, a drivers.Access) bool {
			return a == drivers.AccessEnded && slices.Contains(res, drivers.Fault) // never dropped from the in-flight table (D-DRAIN-1)
		})
	case DrainWaitsForProof:
		w.drain = w.drainAlsoListing(func(_ []drivers.Status, a drivers.Access) bool {
			return a == drivers.AccessUnprovable // waits for a proof that may never come (D-DRAIN-1)
		})
	case ReleasesRetained:
		w.releaseRetained()
	case CancelledPublishLands:
		w.cancelledPublishLands()
	case BusyCloseForgets:
		w.busyCloseForgets()
	case FullLookupAnyPresent:
		w.contains = func(keys []string, found []bool, err error) ([]bool, error) {
			if err == nil && len(keys) == w.Capabilities().MaxRowsPerOp && slices.Contains(found, true) {
				for i := range found {
					found[i] = true // one aggregate answer for the whole full-size lookup (D-LOOK-1)
				}
			}
			return found, err
		}
	case CachesAbsence:
		w.cacheAbsence()
	}
}

// callsByID is every call the wrapper saw, by id.
func (w *driver) callsByID() []*call {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*call, 0, len(w.calls))
	for _, c := range w.calls {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *call) int { return cmp.Compare(a.ID(), b.ID()) })
	return out
}

// drainAlsoListing is a Drain that also lists, as pending, every call the
// reference driver has let go but stuck says is still in flight.
func (w *driver) drainAlsoListing(stuck func(res []drivers.Status, a drivers.Access) bool) func(drivers.DrainStatus) drivers.DrainStatus {
	return func(st drivers.DrainStatus) drivers.DrainStatus {
		for _, c := range w.callsByID() {
			a := c.Call.Access()
			if !slices.Contains(st.Pending, c.ID()) && stuck(c.Call.Results(), a) {
				st.Pending = append(st.Pending, c.ID())
			}
		}
		slices.Sort(st.Pending)
		st.Done = len(st.Pending) == 0
		return st
	}
}

// releaseRetained is ReleasesRetained (D-SHUT-1): every Shutdown labels the
// regions that UNPROVABLE calls name retained — from its call table — and
// then closes their bindings, busy or not.
func (w *driver) releaseRetained() {
	var closing atomic.Bool // the close below skips the busy check (D-REG-6)
	w.hooks = &memdriver.Hooks{Waive: func(rule rules.ID, _ int) bool { return rule == rules.DReg6 && closing.Load() }}
	w.shutdown = func(ctx context.Context) []string {
		labels := w.Driver.Shutdown(ctx)
		var named []drivers.Handle
		for _, c := range w.callsByID() {
			if c.Call.Access() != drivers.AccessUnprovable {
				continue
			}
			for _, r := range c.b.Rows {
				if !slices.Contains(named, r.Handle) {
					named = append(named, r.Handle)
				}
			}
		}
		slices.Sort(named)
		for _, h := range named {
			if l := drivers.RegionLabel(w.region(h).Label, drivers.WhyRetained); !slices.Contains(labels, l) {
				labels = append(labels, l) // still labelled on every later Shutdown
			}
			closing.Store(true)
			for try := 0; try < 8 && w.Driver.Live(h); try++ {
				_ = w.Driver.Unregister(h) // released although labelled retained (D-SHUT-1)
			}
			closing.Store(false)
		}
		return labels
	}
}

// cancelledPublishLands is CancelledPublishLands (D-STATUS): a Cancel of a
// PUBLISH with rows still without a result marks those rows NOT_ATTEMPTED
// in what Results answers and answers REQUESTED, but never cancels the
// reference call, whose transfers go on to store their objects.
func (w *driver) cancelledPublishLands() {
	shown := map[*call][]bool{} // rows shown NOT_ATTEMPTED; guarded by w.mu
	w.cancel = func(c *call) drivers.CancelResult {
		w.mu.Lock()
		done := shown[c] != nil
		w.mu.Unlock()
		if done {
			return drivers.CancelRequested // idempotent
		}
		res := c.Call.Results()
		if c.b.Dir != drivers.Publish || !w.Capabilities().CanCancel || !slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
			return c.Call.Cancel()
		}
		rows := make([]bool, len(res))
		for i, s := range res {
			rows[i] = !s.Final()
		}
		w.mu.Lock()
		shown[c] = rows
		w.mu.Unlock()
		return drivers.CancelRequested // the transfers are not stopped: they store (D-STATUS)
	}
	w.results = func(c *call, res []drivers.Status) []drivers.Status {
		for i, na := range shown[c] {
			if na && i < len(res) {
				res[i] = drivers.NotAttempted
			}
		}
		return res
	}
}

// busyCloseForgets is BusyCloseForgets (D-REG-6): a close refused as busy
// forgets the region's memory in the overlap check, so a registration of
// the same memory (under another label) is accepted while the first
// binding is live.
func (w *driver) busyCloseForgets() {
	var forgotten []drivers.Region // guarded by w.mu
	var waive atomic.Bool
	w.hooks = &memdriver.Hooks{Waive: func(rule rules.ID, _ int) bool { return rule == rules.DReg1 && waive.Load() }}
	w.unregister = func(h drivers.Handle) error {
		err := w.Driver.Unregister(h)
		if errors.Is(err, drivers.ErrBusy) {
			w.mu.Lock()
			forgotten = append(forgotten, w.regions[h])
			w.mu.Unlock()
		}
		return err
	}
	w.register = func(r drivers.Region) (drivers.Handle, error) {
		w.mu.Lock()
		again := slices.ContainsFunc(forgotten, r.Overlaps)
		w.mu.Unlock()
		waive.Store(again) // the overlap with the forgotten region is not seen
		defer waive.Store(false)
		return w.Driver.Register(r)
	}
}

// cacheAbsence is CachesAbsence (D-LOOK-2): a negative cache, filled by
// every lookup that found a key absent and emptied only of the keys this
// driver publishes itself.
func (w *driver) cacheAbsence() {
	absent := map[string]bool{} // guarded by w.mu
	mine := map[string]bool{}   // keys this driver ever published
	w.contains = func(keys []string, found []bool, err error) ([]bool, error) {
		if err != nil || len(found) != len(keys) {
			return found, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, k := range keys {
			switch {
			case absent[k]:
				found[i] = false // answered from the cache: another client may have stored it since (D-LOOK-2)
			case !found[i] && !mine[k]:
				absent[k] = true
			}
		}
		return found, nil
	}
	w.submit = func(b drivers.RowBatch) error {
		if b.Dir == drivers.Publish {
			w.mu.Lock()
			for _, r := range b.Rows {
				mine[r.Key] = true
				delete(absent, r.Key)
			}
			w.mu.Unlock()
		}
		return nil
	}
}
