package broken

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
)

// The bugs. Each changes behaviour only in the situation its rule is about,
// in one of two forms (LiesAboutAccess uses both: a hook tells its wrapper
// when to fire):
//
//   - a wrapper: [driver.install] sets wrap points of the broken driver
//     (driver.go) — what the caller sees of the driver and its calls, the
//     change callback, the region memory the reference driver touches;
//   - a hook: [hooks] sets memdriver.Hooks, where the moment lies inside a
//     transfer step or under the reference driver's lock.
//
//	bug                     form     where
//	LiesAboutAccess         both     Access sees a quiet end; callback: the slot written after ENDED was told
//	ForgetsUnprovable       hook     Access: a client error's UNPROVABLE set as ENDED
//	CancelClaimsEnded       hook     Access: Cancel sets ENDED
//	MissAsFault             wrapper  Results
//	FaultAsMiss             wrapper  Results
//	LookupOutageAsAbsent    wrapper  Contains
//	TouchesOnMiss           hook     Row: a MISS row moves zeros into its slot
//	ShortReadOK             hook     Row: a short object read whole reports OK
//	ShortAnswer             wrapper  Results
//	ReorderedAnswer         wrapper  Results
//	OverwritesOnPublish     wrapper  memory: the held key dropped as the slot's last byte is read
//	TornPublish             wrapper  memory: the slot read half, the rest put later
//	AcceptsRepeatedKey      hook     Batch
//	MaxRowsOffByOne         wrapper  Submit
//	OutsideSlot             wrapper  memory: two bytes across the slot's edge with the last chunk
//	AcceptsOverlap          hook     Waive D-REG-1
//	LeakyRegisterFailure    hook     Waive D-REG-2, D-TOG-1 (the first piece)
//	CloseByAddress          wrapper  Unregister
//	UnregisterLies          wrapper  Unregister, Shutdown labels
//	RegistersAfterShutdown  hook     Waive D-REG-5
//	UnregistersBusy         hook     Waive D-REG-6
//	LostWakeup              wrapper  callback
//	EarlySignal             wrapper  callback, Access, Drain
//	SignalUnderLock         wrapper  callback, Locked
//	SignalAfterShutdown     wrapper  callback, Shutdown
//	RegressingResult        hook     Result
//	BlockingCancel          wrapper  Cancel, Results, Access, callback, Drain, Shutdown, memory
//	DrainLies               wrapper  Drain
//	SilentShutdown          wrapper  Shutdown
//	BatchKeyedByKey         both     Batch; memory: a repeated key's earlier rows never written
//	ConcurrentPutTruncates  wrapper  memory: the put that ends beside another cuts the stored object
//	NotFoundAsError         hook     Row: an absent key's MISS set FAULT; Access: its call UNPROVABLE
//	LeaseExpiredRead        wrapper  memory: a FETCH chunk of an evicted key moves reused bytes
//	EmptyGetOK              hook     Row: an absent key's FETCH moves nothing and reports OK
//	NoTogetherRollback      hook     Waive D-TOG-1 (every piece)
//	DoubleRegistration      wrapper  Register, Unregister
//
// The drivers whose bug hides in an answer the suite once took on trust
// (a "not done", a label, a NOT_ATTEMPTED, a refusal, a lookup) are in
// answers.go, with their own table.

// callState is what the wrappers keep per call, guarded by driver.mu.
type callState struct {
	forced []drivers.Status // BlockingCancel: the results Cancel completed inline (access shown ENDED)
	early  uint8            // EarlySignal: 1 the early signal is scheduled, 2 ENDED is shown
	shown  drivers.Access   // EarlySignal: the access last shown
}

// hooks are the reference driver's hooks bug n needs; nil for a wrapper.
func hooks(n Name) *memdriver.Hooks {
	waive := func(want ...rules.ID) *memdriver.Hooks {
		return &memdriver.Hooks{Waive: func(rule rules.ID, _ int) bool { return slices.Contains(want, rule) }}
	}
	switch n {
	case ForgetsUnprovable:
		return &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
			if a.To == drivers.AccessUnprovable && a.ClientError {
				return drivers.AccessEnded // a client error mid-transfer reported as ENDED (D-ACCESS)
			}
			return a.To
		}}
	case TouchesOnMiss:
		return &memdriver.Hooks{Row: func(p *memdriver.RowPlan) {
			if p.Dir == drivers.Fetch && p.Status == drivers.Miss { // a MISS that writes the slot (D-STATUS)
				p.Data = make([]byte, p.SlotBytes)
				p.Limit = p.SlotBytes
			}
		}}
	case ShortReadOK:
		return &memdriver.Hooks{Row: func(p *memdriver.RowPlan) {
			if p.Dir == drivers.Fetch && p.Status == drivers.Fault && len(p.Data) > 0 && p.Limit == len(p.Data) && len(p.Data) < p.SlotBytes {
				p.Status = drivers.OK // a short object, read whole, reported OK (D-STATUS)
			}
		}}
	case CancelClaimsEnded:
		return &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
			if a.Cancel {
				return drivers.AccessEnded // access ENDED at once, transfers still in flight (D-CAN-2)
			}
			return a.To
		}}
	case AcceptsRepeatedKey:
		return &memdriver.Hooks{Batch: func(b drivers.RowBatch) (check, move drivers.RowBatch) {
			return distinctKeys(b), keyedSlots(b)
		}}
	case AcceptsOverlap:
		return waive(rules.DReg1)
	case LeakyRegisterFailure:
		return &memdriver.Hooks{Waive: func(rule rules.ID, piece int) bool {
			// The refused region stays bound; of a failed together-registration
			// the first piece is never closed, yet nothing is in doubt.
			return rule == rules.DReg2 || rule == rules.DTog1 && piece == 0
		}}
	case RegistersAfterShutdown:
		return waive(rules.DReg5)
	case UnregistersBusy:
		return waive(rules.DReg6)
	case BatchKeyedByKey:
		return &memdriver.Hooks{Batch: func(b drivers.RowBatch) (check, move drivers.RowBatch) {
			return distinctKeys(b), b
		}}
	case NotFoundAsError:
		return notFoundAsError()
	case NoTogetherRollback:
		// Field bug: a batch registration that fails at buffer k returns the
		// error without deregistering buffers 0..k-1 (Mooncake transfer
		// engine's registerLocalMemoryBatch before PR #2869, and its
		// registerLocalMemory across transports before PR #2965): every
		// piece stays registered while the caller hears "refused".
		return waive(rules.DTog1)
	case RegressingResult:
		return &memdriver.Hooks{Result: func(r memdriver.RowResult) drivers.Status {
			return r.Status // a completion after the final result still changes it (D-CB-3)
		}}
	}
	return nil
}

// install sets the hooks and wrap points of bug n on w.
func (w *driver) install(n Name) {
	w.hooks = hooks(n)
	switch n {
	case LiesAboutAccess:
		w.writeAfterEnd()
	case MissAsFault:
		w.results = fetchAs(drivers.Miss, drivers.Fault)
	case FaultAsMiss:
		w.results = fetchAs(drivers.Fault, drivers.Miss)
	case LookupOutageAsAbsent:
		w.contains = func(keys []string, found []bool, err error) ([]bool, error) {
			if outage(err) {
				return make([]bool, len(keys)), nil // the outage answered as "absent" (D-LOOK-2)
			}
			return found, err
		}
	case ShortAnswer:
		w.results = func(_ *call, res []drivers.Status) []drivers.Status { return res[:len(res)-1] }
	case ReorderedAnswer:
		w.results = func(_ *call, res []drivers.Status) []drivers.Status {
			slices.Reverse(res)
			return res
		}
	case OverwritesOnPublish:
		w.read = w.dropHeldKey
	case TornPublish:
		w.read = w.tearPublish()
	case MaxRowsOffByOne:
		w.submit = func(b drivers.RowBatch) error {
			if n := w.Capabilities().MaxRowsPerOp; len(b.Rows) == n { // declares N, refuses N ("capabilities")
				return fmt.Errorf("%w: %d rows: the transport takes at most %d", drivers.ErrInvalidSubmission, len(b.Rows), n-1)
			}
			return nil
		}
	case OutsideSlot:
		w.write = w.writeOutside()
	case CloseByAddress:
		w.unregister = w.closeByAddress()
	case UnregisterLies:
		w.unregister = func(h drivers.Handle) error {
			if err := w.Driver.Unregister(h); !errors.Is(err, drivers.ErrUnregisterFailed) {
				return err
			}
			return nil // the failure is swallowed; the binding stays live (D-REG-4)
		}
		w.shutdown = func(ctx context.Context) []string {
			return slices.DeleteFunc(w.Driver.Shutdown(ctx), func(l string) bool {
				return strings.HasPrefix(l, "region:") && strings.HasSuffix(l, ":"+drivers.WhyUnregisterFailed)
			})
		}
	case LostWakeup:
		w.notify = func(c *call, user func()) {
			if !w.isShutting() && told(c.Call) {
				return // the final change is never told (D-CB-2)
			}
			user()
		}
	case EarlySignal:
		w.earlySignal()
	case SignalUnderLock:
		w.notify = func(c *call, user func()) {
			if w.isShutting() { // Shutdown runs what is owed itself
				user()
				return
			}
			w.mu.Lock() // onChange runs with the driver's lock held (D-CB-4)
			defer w.mu.Unlock()
			user()
		}
	case SignalAfterShutdown:
		w.signalAfterShutdown()
	case BlockingCancel:
		w.blockingCancel()
	case DrainLies:
		w.drain = func(drivers.DrainStatus) drivers.DrainStatus {
			return drivers.DrainStatus{Done: true} // Done although calls are pending (D-DRAIN-1)
		}
	case SilentShutdown:
		w.shutdown = func(ctx context.Context) []string {
			w.Driver.Shutdown(ctx)
			return nil // nothing reported held (D-SHUT-1)
		}
	case BatchKeyedByKey:
		w.write = w.keyedBuffers
	case ConcurrentPutTruncates:
		w.read = w.truncateRacingPut
	case LeaseExpiredRead:
		w.write = w.readPastLease
	case EmptyGetOK:
		w.emptyGetOK()
	case DoubleRegistration:
		w.doubleRegistration()
	default:
		w.installAnswer(n) // the answers the suite once took on trust (answers.go)
	}
}

// told reports whether c has reached its final state: every row final and
// access evidence.
func told(c drivers.Call) bool {
	return c.Access().Evidenced() && !slices.ContainsFunc(c.Results(), func(s drivers.Status) bool { return !s.Final() })
}

// fetchAs answers to where the reference driver answers from, on every FETCH
// row (D-MISS-HONEST).
func fetchAs(from, to drivers.Status) func(*call, []drivers.Status) []drivers.Status {
	return func(c *call, res []drivers.Status) []drivers.Status {
		if c.b.Dir == drivers.Fetch {
			for i, s := range res {
				if s == from {
					res[i] = to
				}
			}
		}
		return res
	}
}

// outage reports whether err is a lookup outage or a wrong-length answer of
// the store, not a refusal (closed, invalid, bad config) or the caller's
// context.
func outage(err error) bool {
	return errors.Is(err, drivers.ErrLookupFailed) && !errors.Is(err, drivers.ErrInvalidSubmission) &&
		!errors.Is(err, drivers.ErrClosed) && !errors.Is(err, memdriver.ErrBadConfig) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// writeAfterEnd is LiesAboutAccess (D-ACCESS-END): when a FETCH ends
// quietly (PENDING → ENDED, which the Access hook sees), it polls, one step
// delay at a time, until a callback has told the caller, then writes the
// slot of the call's first OK row once more.
func (w *driver) writeAfterEnd() {
	const maxPolls = 1000
	var mu sync.Mutex // the hook runs under the reference driver's lock
	rnd := w.rt.Rand(w.label + "/" + w.inst)
	told := map[drivers.CallID]bool{} // quiet ends waiting; true once told
	var poll func(id drivers.CallID, tries int)
	after := func(id drivers.CallID, tries int) {
		mu.Lock()
		d := time.Duration(1 + rnd.Intn(int(w.step)))
		mu.Unlock()
		w.rt.After(d, w.label+" write after end", func() { poll(id, tries) })
	}
	poll = func(id drivers.CallID, tries int) {
		if w.isShutting() {
			return
		}
		mu.Lock()
		done := told[id]
		if done || tries >= maxPolls {
			delete(told, id)
		}
		mu.Unlock()
		w.mu.Lock()
		c := w.calls[id]
		w.mu.Unlock()
		switch {
		case done:
			if i := slices.Index(c.Call.Results(), drivers.OK); i >= 0 {
				w.writeAgain(c, i)
			}
		case tries < maxPolls:
			after(id, tries+1)
		}
	}
	w.hooks = &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
		if a.From == drivers.AccessPending && a.To == drivers.AccessEnded {
			w.mu.Lock()
			c := w.calls[a.Call]
			w.mu.Unlock()
			if c != nil && c.b.Dir == drivers.Fetch {
				mu.Lock()
				told[a.Call] = false
				mu.Unlock()
				after(a.Call, 1)
			}
		}
		return a.To
	}}
	w.notify = func(c *call, user func()) {
		user()
		mu.Lock()
		if _, ok := told[c.ID()]; ok {
			told[c.ID()] = true
		}
		mu.Unlock()
	}
}

// writeAgain writes row i of c's slot once more, with the bytes the slot
// holds: the touch is the bug, and it corrupts no one else's data when the
// slot was lent again meanwhile.
func (w *driver) writeAgain(c *call, i int) {
	row := c.b.Rows[i]
	reg := w.region(row.Handle)
	by, off := drivers.Toucher{Call: c.ID(), Row: i}, reg.SlotOffset(row.Slot)
	buf := make([]byte, reg.SlotBytes)
	if reg.Mem.Read(by, off, buf) == nil {
		_ = reg.Mem.Write(by, off, buf)
	}
}

// dropHeldKey is OverwritesOnPublish (D-SUB-4): as a PUBLISH row's transfer
// reads the last byte of its slot, a key the store already holds is
// dropped, so the put that follows replaces the first object.
func (w *driver) dropHeldKey(m *memory, by drivers.Toucher, off int, p []byte) error {
	if err := m.Memory.Read(by, off, p); err != nil {
		return err
	}
	if row, ok := w.row(by); ok && m.ends(row, off, len(p)) && w.store.Has(row.Key) {
		w.store.Evict(row.Key)
	}
	return nil
}

// tearPublish is TornPublish (D-SUB-5): a PUBLISH row's transfer reads only
// the first half of its slot (the rest as zeros), so the key becomes visible
// holding half its object; twenty step delays later the whole object
// replaces the torn one.
func (w *driver) tearPublish() func(*memory, drivers.Toucher, int, []byte) error {
	whole := map[drivers.Toucher][]byte{} // the bytes really read, per row
	return func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if err := m.Memory.Read(by, off, p); err != nil {
			return err
		}
		row, ok := w.row(by)
		if !ok {
			return nil
		}
		start, half := m.r.SlotOffset(row.Slot), m.r.SlotBytes/2
		w.mu.Lock()
		obj := whole[by]
		if obj == nil {
			obj = make([]byte, m.r.SlotBytes)
			whole[by] = obj
		}
		copy(obj[off-start:], p)
		w.mu.Unlock()
		for j := range p {
			if off-start+j >= half {
				p[j] = 0
			}
		}
		if !m.ends(row, off, len(p)) || w.store.Has(row.Key) {
			return nil
		}
		torn := make([]byte, len(obj))
		copy(torn, obj[:half])
		w.rt.After(20*w.step, w.label+" rest of publish", func() {
			w.mu.Lock()
			delete(whole, by)
			shut := w.shutting
			w.mu.Unlock()
			if cur, ok := w.store.Get(row.Key); !shut && ok && bytes.Equal(cur, torn) {
				w.store.Evict(row.Key)
				w.store.Put(row.Key, obj)
			}
		})
		return nil
	}
}

// distinctKeys is AcceptsRepeatedKey's validation (D-BATCH-KEYS): the batch
// with every repeated key renamed, so that validation checks everything but
// the keys' distinctness.
func distinctKeys(b drivers.RowBatch) drivers.RowBatch {
	rows := slices.Clone(b.Rows)
	seen := map[string]bool{}
	for i, r := range rows {
		if seen[r.Key] {
			rows[i].Key = r.Key + "\x00repeat"
			for seen[rows[i].Key] {
				rows[i].Key += "!"
			}
		}
		seen[rows[i].Key] = true
	}
	return drivers.RowBatch{Dir: b.Dir, Rows: rows}
}

// keyedSlots is AcceptsRepeatedKey's transport (D-BATCH-KEYS): one
// destination per key, so a row whose key repeats an earlier row's moves
// through the earlier row's slot.
func keyedSlots(b drivers.RowBatch) drivers.RowBatch {
	rows := slices.Clone(b.Rows)
	for j := range rows {
		for i := range rows[:j] {
			if rows[i].Key == rows[j].Key {
				rows[j].Handle, rows[j].Slot = rows[i].Handle, rows[i].Slot
				break
			}
		}
	}
	return drivers.RowBatch{Dir: b.Dir, Rows: rows}
}

// writeOutside is OutsideSlot (D-SUB-6): with the last chunk of a FETCH row
// of the object's exact size it writes two bytes across the slot's end —
// the slot's true last byte and one byte of the next slot — or, for the
// region's last slot, across its start. Once per row.
func (w *driver) writeOutside() func(*memory, drivers.Toucher, int, []byte) error {
	done := map[drivers.Toucher]bool{}
	return func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if err := m.Memory.Write(by, off, p); err != nil {
			return err
		}
		row, ok := w.row(by)
		if !ok || !m.ends(row, off, len(p)) {
			return nil
		}
		obj, ok := w.store.Get(row.Key)
		w.mu.Lock()
		again := done[by]
		done[by] = true
		w.mu.Unlock()
		if !ok || len(obj) != m.r.SlotBytes || again {
			return nil
		}
		start := m.r.SlotOffset(row.Slot)
		end := start + m.r.SlotBytes
		switch {
		case end < m.Len():
			_ = m.Memory.Write(by, end-1, []byte{obj[m.r.SlotBytes-1], 0xEE})
		case start > 0:
			_ = m.Memory.Write(by, start-1, []byte{0xEE, obj[0]})
		}
		return nil
	}
}

// closeByAddress is CloseByAddress (D-REG-3): closing a stale handle closes
// whatever live registration now covers the memory the handle once named.
func (w *driver) closeByAddress() func(drivers.Handle) error {
	closed := map[drivers.Handle]drivers.Region{}
	closeLive := func(h drivers.Handle) error {
		err := w.Driver.Unregister(h)
		if err == nil {
			w.mu.Lock()
			closed[h] = w.regions[h]
			w.mu.Unlock()
		}
		return err
	}
	return func(h drivers.Handle) error {
		if w.Live(h) {
			return closeLive(h)
		}
		w.mu.Lock()
		var covering []drivers.Handle
		if r, ok := closed[h]; ok {
			for x, o := range w.regions {
				if o.Overlaps(r) {
					covering = append(covering, x)
				}
			}
		}
		w.mu.Unlock()
		slices.Sort(covering) // by handle, as the reference driver keeps its table
		for _, x := range covering {
			if w.Live(x) {
				return closeLive(x)
			}
		}
		return w.Driver.Unregister(h) // a stale handle: nothing to close
	}
}

// earlySignal is EarlySignal (D-CB-1): once a call's access went from
// PENDING to ENDED, its callbacks still see PENDING; a step after the first
// of them another callback runs, which finds nothing new, and only then is
// ENDED shown — with no callback after it. Until then the call is pending
// for Drain and its regions are busy, as for a call whose access is not
// ENDED. Shutdown shows every hidden ENDED and tells it, so nothing is left
// pending.
func (w *driver) earlySignal() {
	var hidden []*call
	hides := func(c *call, a drivers.Access) bool { // w.mu held
		return a == drivers.AccessEnded && c.user != nil && c.bug.early < 2 && c.bug.shown == drivers.AccessPending && !w.shutting
	}
	w.access = func(c *call, a drivers.Access) drivers.Access {
		if hides(c, a) {
			return c.bug.shown
		}
		c.bug.shown = a
		return a
	}
	w.unregister = func(h drivers.Handle) error {
		w.mu.Lock()
		var naming []*call // calls that would hide ENDED and name h
		for _, c := range w.calls {
			if hides(c, drivers.AccessEnded) && slices.ContainsFunc(c.b.Rows, func(r drivers.Row) bool { return r.Handle == h }) {
				naming = append(naming, c)
			}
		}
		w.mu.Unlock()
		if slices.ContainsFunc(naming, func(c *call) bool { return c.Call.Access() == drivers.AccessEnded }) {
			return fmt.Errorf("%w: a call whose access is not ENDED names handle %d (D-REG-6)", drivers.ErrBusy, h)
		}
		return w.Driver.Unregister(h)
	}
	w.notify = func(c *call, user func()) {
		user()
		a := c.Call.Access()
		w.mu.Lock()
		if c.bug.early != 0 || !hides(c, a) {
			w.mu.Unlock()
			return
		}
		c.bug.early = 1
		hidden = append(hidden, c)
		w.mu.Unlock()
		w.rt.After(w.step, w.label+" signal before end", func() {
			if w.isShutting() {
				return
			}
			user() // the signal, before the state changed
			w.mu.Lock()
			c.bug.early = 2 // the change, never signalled
			w.mu.Unlock()
		})
	}
	w.drain = func(st drivers.DrainStatus) drivers.DrainStatus {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, c := range hidden { // told by the reference driver, not yet by the broken one
			if c.bug.early == 1 && !slices.Contains(st.Pending, c.ID()) {
				st.Done, st.Pending = false, append(st.Pending, c.ID())
			}
		}
		slices.Sort(st.Pending)
		return st
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		var tell []*call
		for _, c := range hidden {
			if c.bug.early == 1 {
				c.bug.early = 2
				tell = append(tell, c)
			}
		}
		hidden = nil
		w.mu.Unlock()
		for _, c := range tell {
			c.user()
		}
		return w.Driver.Shutdown(ctx)
	}
}

// signalAfterShutdown is SignalAfterShutdown (D-CB-5): of the callbacks
// Shutdown owes, the last is held back (when none is owed, the callback of
// the call submitted last) and run through the runtime after Shutdown
// returned.
func (w *driver) signalAfterShutdown() {
	var held []func()
	holding := false
	w.notify = func(c *call, user func()) {
		w.mu.Lock()
		if holding {
			held = append(held, user)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		user()
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		holding = true
		w.mu.Unlock()
		labels := w.Driver.Shutdown(ctx)
		w.mu.Lock()
		owed, last := held, w.last
		held, holding = nil, false
		w.mu.Unlock()
		var late func()
		if n := len(owed); n > 0 {
			owed, late = owed[:n-1], owed[n-1]
		} else if last != nil {
			late = last.user
		}
		for _, f := range owed {
			f()
		}
		if late != nil {
			// The label of the reference driver's callback events.
			w.rt.After(0, "memdriver/"+w.Name()+" onChange", late)
		}
		return labels
	}
}

// blockingCancel is BlockingCancel (D-CAN-1): Cancel does the remaining
// work of every row without a result synchronously — reads the object and
// writes the slot (FETCH) or reads the slot and stores it (PUBLISH) — and
// shows access ENDED before it returns, instead of requesting a cancel; one
// callback tells it. The reference call is cancelled behind it: what its
// transfer still does touches no memory, and its callbacks and pending
// state are no longer the caller's.
func (w *driver) blockingCancel() {
	var untold []*call // completed by Cancel, the callback not yet run
	tell := func(c *call) {
		w.mu.Lock()
		i := slices.Index(untold, c)
		if i >= 0 {
			untold = slices.Delete(untold, i, i+1)
		}
		w.mu.Unlock()
		if i >= 0 && c.user != nil {
			c.user()
		}
	}
	forced := func(id drivers.CallID) bool { // w.mu held
		c := w.calls[id]
		return c != nil && c.bug.forced != nil
	}
	w.cancel = func(c *call) drivers.CancelResult {
		w.mu.Lock()
		done := c.bug.forced != nil
		w.mu.Unlock()
		if done {
			return drivers.CancelAlreadyDone
		}
		res := c.Call.Results()
		if !w.Capabilities().CanCancel || !slices.ContainsFunc(res, func(s drivers.Status) bool { return !s.Final() }) {
			return c.Call.Cancel()
		}
		for i, st := range res {
			if !st.Final() {
				res[i] = w.transferNow(c, i)
			}
		}
		w.mu.Lock()
		c.bug.forced = res
		untold = append(untold, c)
		w.mu.Unlock()
		c.Call.Cancel()
		w.rt.After(0, w.label+" onChange", func() {
			if !w.isShutting() {
				tell(c)
			}
		})
		return drivers.CancelRequested
	}
	w.results = func(c *call, res []drivers.Status) []drivers.Status {
		if c.bug.forced != nil {
			return slices.Clone(c.bug.forced)
		}
		return res
	}
	w.access = func(c *call, a drivers.Access) drivers.Access {
		if c.bug.forced != nil {
			return drivers.AccessEnded
		}
		return a
	}
	w.notify = func(c *call, user func()) {
		w.mu.Lock()
		done := c.bug.forced != nil
		w.mu.Unlock()
		if !done {
			user()
		}
	}
	w.drain = func(st drivers.DrainStatus) drivers.DrainStatus {
		w.mu.Lock()
		defer w.mu.Unlock()
		pending := slices.DeleteFunc(st.Pending, forced)
		for _, c := range untold {
			pending = append(pending, c.ID())
		}
		slices.Sort(pending)
		return drivers.DrainStatus{Done: len(pending) == 0, Pending: pending}
	}
	w.shutdown = func(ctx context.Context) []string {
		w.mu.Lock()
		cs := slices.Clone(untold)
		w.mu.Unlock()
		for _, c := range cs {
			tell(c)
		}
		return w.Driver.Shutdown(ctx)
	}
	gone := func(by drivers.Toucher) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return forced(by.Call)
	}
	w.read = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if gone(by) {
			return nil
		}
		return m.Memory.Read(by, off, p)
	}
	w.write = func(m *memory, by drivers.Toucher, off int, p []byte) error {
		if gone(by) {
			return nil
		}
		return m.Memory.Write(by, off, p)
	}
}

// transferNow moves row i of c at once, through the caller's memory, and
// returns its result.
func (w *driver) transferNow(c *call, i int) drivers.Status {
	row := c.b.Rows[i]
	reg := w.region(row.Handle)
	by, off := drivers.Toucher{Call: c.ID(), Row: i}, reg.SlotOffset(row.Slot)
	if c.b.Dir == drivers.Publish {
		buf := make([]byte, reg.SlotBytes)
		if reg.Mem.Read(by, off, buf) != nil {
			return drivers.Fault
		}
		w.store.Put(row.Key, buf)
		return drivers.OK
	}
	obj, ok := w.store.Get(row.Key)
	switch {
	case !ok && w.Capabilities().AbsentIsMiss:
		return drivers.Miss
	case !ok || len(obj) != reg.SlotBytes, reg.Mem.Write(by, off, obj) != nil:
		return drivers.Fault
	}
	return drivers.OK
}

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
