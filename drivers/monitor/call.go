package monitor

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// callRec is everything the monitor knows of one Submit. It is also the
// drivers.Call the caller gets back: every read through it is observed.
type callRec struct {
	m       *Monitor
	index   int // how many calls were accepted before this one
	id      drivers.CallID
	batch   drivers.RowBatch
	handles []drivers.Handle // distinct handles the batch names
	hbuf    [2]drivers.Handle
	sbuf    [16]drivers.Status // known and cbRes of batches up to 8 rows
	inner   drivers.Call       // nil until Submit returned

	// The flags sit together, without padding between them (callRecs come
	// from Monitor.callSlab, a few hundred bytes each).
	settled  bool           // a callback saw every row final and access ENDED
	refused  bool           // Submit returned an error
	invalid  bool           // the batch failed RowBatch.Validate
	badLen   bool           // Results() had the wrong length once
	unknown  bool           // some callback could not be snapshotted (D-CB-4 probe)
	knownAcc drivers.Access // the access of known, below
	cbAcc    drivers.Access // the access of cbRes, below

	known []drivers.Status // first final status seen per row (D-CB-3)
	// facts counts the new facts recorded in known/knownAcc. A read taken
	// when facts was v may contradict them (a regression, D-CB-3) only if
	// facts is still v when it is recorded: otherwise a fact was learned
	// while the read was under way and the read may simply be older.
	facts atomic.Uint64

	// The buffer the monitor's own reads of the call share (lendBuf).
	rbuf    [8]drivers.Status
	bufLent atomic.Bool

	// The signalled state: the join of every callback snapshot (D-CB-1/2).
	cbRes     []drivers.Status
	callbacks int
	empty     int    // callbacks whose snapshot added nothing
	idle      uint64 // of those, how many in a row since the last that added something
	early     int    // callbacks before Submit returned

	// Wrapped callbacks begun and ended (D-DRAIN-2); runIdx is the call's
	// place in Monitor.running while cbBegun > cbEnded.
	cbBegun, cbEnded uint64
	runIdx           int
}

// openLocked compacts Monitor.open to the calls whose known access is not
// ENDED and returns them sorted by id, appended to dst[:0].
func (m *Monitor) openLocked(dst []*callRec) []*callRec {
	m.open = slices.DeleteFunc(m.open, func(c *callRec) bool { return c.knownAcc == drivers.AccessEnded })
	out := append(dst[:0], m.open...)
	slices.SortFunc(out, func(a, b *callRec) int { return cmp.Compare(a.id, b.id) })
	return out
}

// validLocked is RowBatch.Validate's verdict without allocating, for batches
// of up to 32 rows: true means valid; false means "run Validate" (which
// gives the error, or says valid for a larger batch).
func (m *Monitor) validLocked(b drivers.RowBatch) bool {
	n := len(b.Rows)
	if (b.Dir != drivers.Fetch && b.Dir != drivers.Publish) || !m.caps.Supports(b.Dir) || n == 0 || n > m.caps.MaxRowsPerOp || n > 32 {
		return false
	}
	for i, r := range b.Rows {
		reg := m.regLocked(r.Handle)
		if r.Key == "" || reg == nil || !reg.live || r.Slot < 0 || r.Slot >= reg.r.Slots {
			return false
		}
		for _, o := range b.Rows[:i] {
			if o.Key == r.Key || (o.Handle == r.Handle && o.Slot == r.Slot) {
				return false
			}
		}
	}
	return true
}

// Submit implements drivers.Driver (D-SUB-1, D-SUB-2, D-SUB-3,
// D-BATCH-VALID, D-BATCH-KEYS, D-DRAIN-1, "capabilities").
func (m *Monitor) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	m.mu.Lock()
	rec := m.callSlab.New()
	rec.m, rec.batch, rec.runIdx = m, b, -1
	rows := rec.sbuf[:]
	if n := 2 * len(b.Rows); n > len(rows) {
		rows = make([]drivers.Status, n)
	}
	rec.known, rec.cbRes = rows[:len(b.Rows):len(b.Rows)], rows[len(b.Rows):2*len(b.Rows)]
	rec.handles = rec.hbuf[:0]
	for _, r := range b.Rows {
		if !slices.Contains(rec.handles, r.Handle) {
			rec.handles = append(rec.handles, r.Handle)
		}
	}
	var verr error
	if !m.validLocked(b) {
		verr = b.Validate(m.caps, m.liveLocked)
	}
	rec.invalid = verr != nil
	closed := m.drained || m.shutdown
	if len(m.starters) > 0 {
		at := m.now()
		for _, so := range m.starters {
			so.SubmitStarting(at, b)
		}
	}
	m.mu.Unlock()

	c, err := m.d.Submit(b, m.wrapCallback(rec, onChange))

	m.mu.Lock()
	at := m.now()
	if verr == nil {
		if len(b.Rows) >= len(m.sizes) {
			m.sizes = append(m.sizes, make([]SizeStat, len(b.Rows)+1-len(m.sizes))...)
		}
		s := &m.sizes[len(b.Rows)]
		s.Rows = len(b.Rows)
		s.Submitted++
		if err != nil && !errors.Is(err, drivers.ErrClosed) && !errors.Is(err, drivers.ErrRejected) {
			s.Refused++
		}
	}
	if err != nil {
		rec.refused = true
		m.refusedSubmitLocked(rec, verr, err, closed)
		for _, o := range m.opts.Observers {
			o.Submitted(at, 0, b, err)
		}
		m.mu.Unlock()
		return c, err
	}
	if c == nil {
		rec.refused = true
		m.violateLocked(rules.Violation{Rule: rules.DSub3, Row: -1, Detail: "Submit returned neither a call nor an error"})
		m.mu.Unlock()
		return nil, fmt.Errorf("monitor: driver returned neither a call nor an error (%s)", rules.DSub3)
	}
	rec.id, rec.inner = c.ID(), c
	if rec.id <= m.maxID && slices.ContainsFunc(m.order, func(o *callRec) bool { return o.id == rec.id && !o.settled }) {
		m.violateLocked(rules.Violation{Rule: rules.DSub3, Call: uint64(rec.id), Row: -1, Detail: "call id reused within one driver instance"})
	}
	m.maxID = max(m.maxID, rec.id)
	rec.index = m.nsub
	m.nsub++
	m.order = append(m.order, rec)
	m.nlive++
	m.open = append(m.open, rec)
	switch {
	case verr != nil:
		rule := rules.DBatchValid
		if strings.Contains(verr.Error(), rules.DBatchKeys.String()) {
			rule = rules.DBatchKeys
		}
		m.violateLocked(rules.Violation{Rule: rule, Call: uint64(rec.id), Row: -1,
			Detail: "driver accepted an invalid batch (want ErrInvalidSubmission before any access): " + verr.Error()})
	case closed:
		m.violateLocked(rules.Violation{Rule: rules.DDrain1, Call: uint64(rec.id), Row: -1, Detail: "Submit accepted after Drain or Shutdown returned (want ErrClosed)"})
	case m.quarantined:
		m.violateLocked(rules.Violation{Rule: rules.DQuar, Call: uint64(rec.id), Row: -1, Detail: "Submit accepted after an in-doubt together-registration"})
	}
	for _, o := range m.opts.Observers {
		o.Submitted(at, rec.id, b, nil)
	}
	for range rec.early {
		m.callbackEventLocked(rec)
	}
	early := rec.early > 0
	m.mu.Unlock()
	if early {
		// A callback before Submit returned could not read the call: credit
		// the state right after Submit to it (lenient; see the package doc).
		v := rec.facts.Load()
		buf, lent := rec.lendBuf()
		res, acc := readState(c, buf)
		m.mu.Lock()
		m.observeLocked(rec, res, acc, v)
		m.signalLocked(rec, res, acc)
		m.mu.Unlock()
		rec.returnBuf(lent)
	}
	return rec, nil
}

// refusedSubmitLocked judges a refused Submit.
func (m *Monitor) refusedSubmitLocked(rec *callRec, verr, err error, closed bool) {
	if rec.callbacks > 0 {
		m.violateLocked(rules.Violation{Rule: rules.DSub2, Row: -1,
			Detail: fmt.Sprintf("a refused Submit (%v) called its onChange %d time(s); nothing escaped, so nothing may be signalled", err, rec.callbacks)})
	}
	if verr != nil {
		// D-SUB-1: an invalid batch is refused before any access, so the
		// refusal must say that nothing escaped.
		if !errors.Is(err, drivers.ErrInvalidSubmission) && !errors.Is(err, drivers.ErrClosed) && !errors.Is(err, drivers.ErrRejected) {
			rule := rules.DBatchValid
			if strings.Contains(verr.Error(), rules.DBatchKeys.String()) {
				rule = rules.DBatchKeys
			}
			m.violateLocked(rules.Violation{Rule: rule, Row: -1,
				Detail: fmt.Sprintf("an invalid batch (%v) was refused with %v, which does not say nothing escaped (want ErrInvalidSubmission)", verr, err)})
		}
		return
	}
	if closed {
		if !errors.Is(err, drivers.ErrClosed) {
			m.violateLocked(rules.Violation{Rule: rules.DDrain1, Row: -1, Detail: fmt.Sprintf("Submit after Drain or Shutdown failed with %v, want ErrClosed", err)})
		}
		return
	}
	if !errors.Is(err, drivers.ErrInvalidSubmission) || m.quarantined {
		return
	}
	for _, h := range rec.handles {
		r := m.regLocked(h)
		switch {
		case r.staleCloseSeen:
			m.violateLocked(rules.Violation{Rule: rules.DReg3, Row: -1, Region: r.r.Label,
				Detail: fmt.Sprintf("Submit on live handle %d refused (%v) after a stale handle of the same memory was closed", h, err)})
			return
		case r.failedClose:
			m.violateLocked(rules.Violation{Rule: rules.DReg4, Row: -1, Region: r.r.Label,
				Detail: fmt.Sprintf("Submit on handle %d refused (%v) after its close failed; a failed close must leave it live", h, err)})
			return
		case r.busyRefused:
			m.violateLocked(rules.Violation{Rule: rules.DReg6, Row: -1, Region: r.r.Label,
				Detail: fmt.Sprintf("Submit on handle %d refused (%v) after its close was refused as busy; a refused busy close must leave the binding live", h, err)})
			return
		}
	}
	m.violateLocked(rules.Violation{Rule: rules.DCaps, Row: -1,
		Detail: fmt.Sprintf("a %v batch of %d rows that the declared capabilities (MaxRowsPerOp=%d) allow was refused as invalid: %v",
			rec.batch.Dir, len(rec.batch.Rows), m.caps.MaxRowsPerOp, err)})
}

// wrapCallback is the onChange the driver gets: it checks D-CB-5 and D-SUB-2,
// probes for D-CB-4, snapshots the state for D-CB-1/2 and D-DRAIN-2, then
// runs the caller's onChange.
func (m *Monitor) wrapCallback(rec *callRec, user func()) func() {
	return func() {
		m.mu.Lock()
		if rec.cbBegun++; rec.cbBegun-rec.cbEnded == 1 {
			rec.runIdx = len(m.running)
			m.running = append(m.running, rec)
		}
		inner := rec.inner
		if m.shutdown {
			m.violateLocked(rules.Violation{Rule: rules.DCB5, Call: uint64(rec.id), Row: -1, Detail: "callback ran after Shutdown returned"})
		}
		if rec.refused {
			m.violateLocked(rules.Violation{Rule: rules.DSub2, Row: -1, Detail: "callback of a refused Submit"})
		}
		if inner == nil {
			rec.callbacks++
			rec.early++
			m.mu.Unlock()
		} else {
			m.mu.Unlock()
			v := rec.facts.Load()
			buf, lent := rec.lendBuf()
			res, acc, pr := m.snapshot(inner, buf)
			m.mu.Lock()
			rec.callbacks++
			m.callbackEventLocked(rec)
			switch pr.Verdict {
			case ReadReturned:
				m.observeLocked(rec, res, acc, v)
				m.signalLocked(rec, res, acc)
			case ReadBlocked:
				rec.unknown = true
				m.violateLocked(rules.Violation{Rule: rules.DCB4, Call: uint64(rec.id), Row: -1, Detail: pr.Observed})
			default:
				rec.unknown = true
				if len(m.undecided) >= MaxUndecided {
					m.undecidedMore++
					break
				}
				m.undecided = append(m.undecided, fmt.Sprintf("%s at %v seed=%d call %d: could not decide whether the callback ran under a lock the read needs: %s",
					rules.DCB4, m.now(), m.opts.Seed, rec.id, pr.Observed))
			}
			m.mu.Unlock()
			rec.returnBuf(lent)
		}
		if user != nil {
			user()
		}
		m.mu.Lock()
		if rec.cbEnded++; rec.cbEnded == rec.cbBegun {
			last := m.running[len(m.running)-1]
			m.running[rec.runIdx], last.runIdx = last, rec.runIdx
			m.running = m.running[:len(m.running)-1]
			rec.runIdx = -1
		}
		m.mu.Unlock()
	}
}

func (m *Monitor) callbackEventLocked(c *callRec) {
	if len(m.cbObs) == 0 {
		return
	}
	at := m.now()
	for _, co := range m.cbObs {
		co.Callback(at, c.id)
	}
}

// snapshot reads the call's state from inside its callback without
// deadlocking on a driver that calls back under its lock (D-CB-4); the
// results go into buf (readResults). Unless the verdict is ReadReturned,
// res and acc are not the call's state and Observed says what was seen
// instead.
func (m *Monitor) snapshot(c drivers.Call, buf []drivers.Status) (res []drivers.Status, acc drivers.Access, pr ProbeResult) {
	if m.opts.LockProbe != nil {
		var r []drivers.Status
		var a drivers.Access
		// Not into buf: a read the probe gave up on may still be under way
		// when the buffer is given back.
		pr = m.opts.LockProbe(func() { r, a = readState(c, nil) })
		switch pr.Verdict {
		case ReadReturned:
			return r, a, ProbeResult{}
		case ReadBlocked:
			pr.Observed = "a read of the call from inside its callback " + pr.Observed + ": the callback ran while the driver held a lock the read needs"
		}
		return nil, 0, pr
	}
	if p, ok := c.(LockProber); ok && p.Locked() {
		return nil, 0, ProbeResult{Verdict: ReadBlocked, Observed: "the call's lock was held while its callback ran (LockProber)"}
	}
	if m.prober != nil && m.prober.Locked() {
		return nil, 0, ProbeResult{Verdict: ReadBlocked, Observed: "the driver's lock was held while a callback ran (LockProber)"}
	}
	res, acc = readState(c, buf)
	return res, acc, ProbeResult{}
}

// refresh reads a call's state (outside the lock) and records it.
func (m *Monitor) refresh(c *callRec) {
	v := c.facts.Load()
	buf, lent := c.lendBuf()
	res, acc := readState(c.inner, buf)
	m.mu.Lock()
	m.observeLocked(c, res, acc, v)
	m.mu.Unlock()
	c.returnBuf(lent)
}

// observeLocked compares one read of a call's state with the facts seen so
// far (D-STATUS, D-CB-3, D-ACCESS, D-MISS-HONEST) and reports new facts to
// the observers.
// v is the call's fact count taken before the read (see callRec.facts).
func (m *Monitor) observeLocked(c *callRec, res []drivers.Status, acc drivers.Access, v uint64) {
	m.observeRowsLocked(c, res, acc, v)
	m.observeAccessLocked(c, acc, v)
}

func (m *Monitor) observeRowsLocked(c *callRec, res []drivers.Status, acc drivers.Access, v uint64) {
	if len(res) != len(c.known) {
		if len(res) != 0 || acc.Evidenced() || c.knownAcc.Evidenced() {
			c.badLen = true
			m.violateLocked(rules.Violation{Rule: rules.DStatus, Call: uint64(c.id), Row: -1,
				Detail: fmt.Sprintf("Results() has %d entries for %d rows", len(res), len(c.known))})
		}
		return
	}
	for i, s := range res {
		k := c.known[i]
		switch {
		case s > drivers.NotAttempted:
			m.violateLocked(rules.Violation{Rule: rules.DStatus, Call: uint64(c.id), Row: i, Key: c.batch.Rows[i].Key,
				Detail: fmt.Sprintf("invalid status value %d", s)})
		case k.Final() && s != k && (s.Final() || c.facts.Load() == v):
			// A different final value is a regression whatever the timing; a
			// PENDING only when no fact was learned during the read.
			m.violateLocked(rules.Violation{Rule: rules.DCB3, Call: uint64(c.id), Row: i, Key: c.batch.Rows[i].Key,
				Detail: fmt.Sprintf("final result %v changed to %v", k, s)})
		case !k.Final() && s.Final():
			c.known[i] = s
			c.facts.Add(1)
			if len(m.opts.Observers) > 0 {
				at := m.now()
				for _, o := range m.opts.Observers {
					o.RowFinal(at, c.id, i, s)
				}
			}
			m.honestyLocked(c, i, s)
		}
	}
}

// honestyLocked is D-MISS-HONEST against the harness's ground truth.
func (m *Monitor) honestyLocked(c *callRec, row int, s drivers.Status) {
	if m.opts.Truth == nil || c.batch.Dir != drivers.Fetch || (s != drivers.Miss && s != drivers.Fault) {
		return
	}
	key := c.batch.Rows[row].Key
	present, known := m.opts.Truth(key)
	switch {
	case !known:
	case present && s == drivers.Miss:
		m.violateLocked(rules.Violation{Rule: rules.DMissHonest, Call: uint64(c.id), Row: row, Key: key,
			Detail: "FETCH answered MISS for a key known present (a fault reported as a miss?)"})
	case !present && s == drivers.Fault && m.caps.AbsentIsMiss && (m.opts.Injected == nil || !m.opts.Injected(c.id, row)):
		// Only a driver that declares AbsentIsMiss promises MISS for an
		// absent key; without it an absent FETCH may honestly FAULT.
		m.violateLocked(rules.Violation{Rule: rules.DMissHonest, Call: uint64(c.id), Row: row, Key: key,
			Detail: "FETCH answered FAULT for a key known absent, with no fault injected (a miss reported as a fault?)"})
	}
}

func (m *Monitor) observeAccessLocked(c *callRec, acc drivers.Access, v uint64) {
	switch {
	case acc > drivers.AccessUnprovable:
		m.violateLocked(rules.Violation{Rule: rules.DAccess, Call: uint64(c.id), Row: -1, Detail: fmt.Sprintf("invalid access value %d", acc)})
	case !c.knownAcc.CanBecome(acc) && c.facts.Load() != v:
		// Every illegal move is backwards: the read may predate a fact
		// learned while it was under way.
	case !c.knownAcc.CanBecome(acc):
		rule := rules.DAccess
		if c.knownAcc == drivers.AccessEnded {
			rule = rules.DCB3
		}
		m.violateLocked(rules.Violation{Rule: rule, Call: uint64(c.id), Row: -1,
			Detail: fmt.Sprintf("access went %v → %v", c.knownAcc, acc)})
	case acc != c.knownAcc:
		c.knownAcc = acc
		c.facts.Add(1)
		at := m.now()
		for _, o := range m.opts.Observers {
			o.AccessChanged(at, c.id, acc)
		}
	}
}

// signalLocked joins one callback snapshot into the call's signalled state
// and checks D-DRAIN-2 for callbacks after a Done drain.
func (m *Monitor) signalLocked(c *callRec, res []drivers.Status, acc drivers.Access) {
	if len(res) != len(c.cbRes) {
		c.unknown = true
		return
	}
	rows := false
	for i, s := range res {
		if s.Final() && !c.cbRes[i].Final() {
			c.cbRes[i] = s
			rows = true
		}
	}
	accMoved, evidence := false, false
	if acc != c.cbAcc && c.cbAcc.CanBecome(acc) && acc <= drivers.AccessUnprovable {
		accMoved = true
		evidence = c.cbAcc == drivers.AccessUnprovable && acc == drivers.AccessEnded
		c.cbAcc = acc
	}
	if !rows && !accMoved {
		c.empty++
		c.idle++
		if c.idle > m.storm.Idle {
			m.storm = Storm{Call: c.id, Idle: c.idle}
		}
		if c.id == m.storm.Call {
			m.storm.Callbacks = c.callbacks
		}
	} else {
		c.idle = 0
	}
	if !c.settled && c.cbAcc == drivers.AccessEnded && c.knownAcc == drivers.AccessEnded && !c.unknown && !c.badLen &&
		!slices.ContainsFunc(c.cbRes, func(s drivers.Status) bool { return !s.Final() }) {
		m.settleLocked(c)
	}
	// After a Done drain, only new evidence (UNPROVABLE → ENDED) may still be
	// signalled: anything else is a callback Drain said had already run.
	if m.drainDone && c.index < m.drainDoneBefore && (rows || !evidence) {
		m.violateLocked(rules.Violation{Rule: rules.DDrain2, Call: uint64(c.id), Row: -1,
			Detail: "a callback ran after Drain reported Done, without new evidence (UNPROVABLE → ENDED) to signal"})
	}
}

// settleLocked forgets a call whose final state a callback has seen: its
// outcome goes into the size stats and it leaves Monitor.order, which is
// compacted once half of it is settled.
func (m *Monitor) settleLocked(c *callRec) {
	c.settled = true
	if len(m.sizes) > len(c.known) {
		countOutcome(m.sizes, c)
	}
	m.nlive--
	if len(m.order) > 64 && m.nlive < len(m.order)/2 {
		m.order = slices.DeleteFunc(m.order, func(o *callRec) bool { return o.settled })
	}
}
