package refine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// head is the next batch the backend must dispatch: the oldest queued batch
// of an attempt that is still Pending (a committed attempt's queued batches
// are dropped, B-CANCEL and B-OUTCOME).
func (m *Model) head() *batch {
	i := 0
	for ; i < len(m.queue); i++ {
		b := m.queue[i]
		if b.phase == queued && !m.committed(b.a) {
			break
		}
		if b.phase == queued {
			b.phase, b.a.settled = dropped, false
		}
	}
	// One shift for every batch dropped: in place, the queue keeps its
	// capacity.
	m.queue = slices.Delete(m.queue, 0, i)
	if len(m.queue) == 0 {
		return nil
	}
	return m.queue[0]
}

// committed reports whether the backend committed a's outcome (an attempt
// still being admitted is not).
func (m *Model) committed(a *attempt) bool {
	return a.view != nil && a.view.State() != backend.Pending
}

func (m *Model) needsLookup(dir drivers.Direction) bool {
	return dir == drivers.Publish || !m.caps.AbsentIsMiss
}

// rest is what a batch still sends after its lookup: Fetch the present keys,
// Publish the absent ones (B-FETCH, B-PUBLISH).
func rest(b *batch) []drivers.Row {
	if b.present == nil {
		return b.rows
	}
	var out []drivers.Row
	for i, r := range b.rows {
		if b.present[i] == (b.a.dir == drivers.Fetch) {
			out = append(out, r)
		}
	}
	return out
}

// restLen is len(rest(b)) without building it.
func restLen(b *batch) int {
	if b.present == nil {
		return len(b.rows)
	}
	n := 0
	for i := range b.rows {
		if b.present[i] == (b.a.dir == drivers.Fetch) {
			n++
		}
	}
	return n
}

// isRest: rows equal rest(b), without building it.
func isRest(rows []drivers.Row, b *batch) bool {
	if b.present == nil {
		return slices.Equal(rows, b.rows)
	}
	j := 0
	for i, r := range b.rows {
		if b.present[i] != (b.a.dir == drivers.Fetch) {
			continue
		}
		if j >= len(rows) || rows[j] != r {
			return false
		}
		j++
	}
	return j == len(rows)
}

// keysAre: keys equal keysOf(rows), without building it.
func keysAre(keys []string, rows []drivers.Row) bool {
	if len(keys) != len(rows) {
		return false
	}
	for i, r := range rows {
		if keys[i] != r.Key {
			return false
		}
	}
	return true
}

// foldRule is the folding rule of a direction (B-FETCH or B-PUBLISH).
func foldRule(dir drivers.Direction) rules.ID {
	if dir == drivers.Publish {
		return rules.BPublish
	}
	return rules.BFetch
}

// keysIn: every row's key is one of batch's rows' keys.
func keysIn(rows, batch []drivers.Row) bool {
	for _, r := range rows {
		if !slices.ContainsFunc(batch, func(b drivers.Row) bool { return b.Key == r.Key }) {
			return false
		}
	}
	return true
}

func keysOf(rows []drivers.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

func (m *Model) lookedUp(keys []string, present []bool, err error) {
	m.count.Lookups++
	if err == nil && len(present) != len(keys) {
		err = fmt.Errorf("%d answers for %d keys", len(present), len(keys))
	}
	if c := m.recheck; c != nil {
		m.recheck = nil
		m.answerRecheck(c, keys, present, err)
		return
	}
	m.lookFailed = nil
	b := m.head()
	switch {
	case b == nil:
		rule, detail := m.stray(fmt.Sprintf("a lookup of %q", keys))
		m.fail(rule, nil, 0, fmt.Sprintf("lookup/%d", len(m.found)), detail)
		return
	case !m.needsLookup(b.a.dir):
		m.fail(rules.BCut, b.a, 0, "lookup-unneeded", fmt.Sprintf("a lookup of %q, but the next batch %q is a %v on a driver with AbsentIsMiss and needs none", keys, keysOf(b.rows), b.a.dir))
	case !keysAre(keys, b.rows):
		m.fail(rules.BCut, b.a, 0, "lookup-keys", fmt.Sprintf("a lookup of %q, but the next batch to dispatch is %q (B-CUT: in admission order, cut at MaxRowsPerOp %d or a repeated key)", keys, keysOf(b.rows), m.caps.MaxRowsPerOp))
	}
	m.touch(b.a)
	b.phase = waiting
	if err != nil {
		b.phase, m.lookFailed = dropped, b
		if keysAre(keys, b.rows) {
			b.lookupErr = err // formatted from the batch's own rows, if ever
			b.a.failCause = (*lookupCause)(b)
			b.a.why |= whyLookup
		} else {
			b.a.failCause = textCause(fmt.Sprintf("the lookup of %q failed: %v", keys, err)) // keys are the backend's: formatted now
			b.a.why |= whyLookup
		}
		return
	}
	b.present = presentOf(b)
	if len(present) == len(b.rows) {
		copy(b.present, present)
	} else {
		clear(b.present)
	}
	for i, r := range b.rows {
		switch {
		case b.a.dir == drivers.Publish && b.present[i]:
			b.a.served[r.Position] = true // present: served without a put
		case b.a.dir == drivers.Fetch && !b.present[i]:
			b.a.missed++ // absent: a miss, never fetched
		}
	}
	m.pending = b
}

// presentOf is b's share of its attempt's lookup storage: the batches cut
// the masked-in rows in order, so b's rows start after the earlier ones'.
func presentOf(b *batch) []bool {
	off := 0
	for i := range b.a.batches {
		if &b.a.batches[i] == b {
			break
		}
		off += len(b.a.batches[i].rows)
	}
	return b.a.present[off : off+len(b.rows) : off+len(b.rows)]
}

// settleLookup ends a first lookup that no Submit followed: its batch needs
// nothing more from the store, or the backend forgot it. Most events have
// none pending: that check is inlined.
func (m *Model) settleLookup() {
	if m.pending != nil {
		m.settlePending()
	}
}

func (m *Model) settlePending() {
	b := m.pending
	m.pending = nil
	if restLen(b) > 0 && !m.committed(b.a) {
		m.fail(rules.BProgress, b.a, 0, "lookup-no-submit", fmt.Sprintf("the lookup of %q left %q to send, but no call followed",
			keysOf(b.rows), keysOf(rest(b))))
	}
	m.completeLookupOnly(b)
}

func (m *Model) completeLookupOnly(b *batch) {
	b.phase, b.a.settled = complete, false
}

func (m *Model) submitted(dir drivers.Direction, rows []drivers.Row, dc drivers.Call, err error) *call {
	var b *batch
	afterFailed := false // b is the batch whose lookup failed
	if f := m.lookFailed; f != nil {
		m.lookFailed = nil
		if dir == f.a.dir && len(rows) > 0 && keysIn(rows, f.rows) {
			// The failed batch's own call: the fold ignored the failure.
			m.fail(foldRule(dir), f.a, 0, "submit-after-failed-lookup", fmt.Sprintf("%s: the attempt must fail and send nothing more, but a %v call of %q followed", f.a.failCause, dir, keysOf(rows)))
			b, afterFailed = f, true
		}
	}
	if p := m.pending; b == nil && p != nil && (dir != p.a.dir || restLen(p) == 0) {
		m.settleLookup() // that lookup needed no call; this one is the next batch's
	}
	if afterFailed {
		// its rows are judged by the fold rule above, not as a cut
	} else if p := m.pending; p != nil {
		m.pending = nil
		b = p
	} else if h := m.head(); h != nil {
		b = h
		if m.needsLookup(h.a.dir) {
			m.fail(rules.BCut, h.a, 0, "no-lookup", fmt.Sprintf("a %v call of %q without the lookup the contract asks first", dir, keysOf(rows)))
			b.present = presentOf(b)
			for i := range b.present {
				b.present[i] = dir == drivers.Fetch
			}
		}
	}
	if b == nil {
		rule, detail := m.stray(fmt.Sprintf("a %v call of %q", dir, keysOf(rows)))
		m.fail(rule, nil, 0, fmt.Sprintf("submit/%d", len(m.found)), detail)
		return nil
	}
	a := b.a
	m.touch(a)
	if !afterFailed && (dir != a.dir || !isRest(rows, b)) {
		m.fail(rules.BCut, a, 0, "submit-rows", fmt.Sprintf("a %v call of %q, but the batch's rows that need the store are %v %q",
			dir, keysOf(rows), a.dir, keysOf(rest(b))))
	}
	if in, _ := m.openCalls(); in+1 > m.bcfg.MaxCallsInFlight && m.ready {
		m.fail(rules.BBound, a, 0, "inflight", fmt.Sprintf("a call was submitted with %d calls already in flight (MaxCallsInFlight %d)", in, m.bcfg.MaxCallsInFlight))
	}
	c := m.callSlab.New()
	c.b, c.rows, c.acc = b, rows, drivers.AccessPending
	if dc != nil && err == nil {
		c.id = dc.ID()
		m.count.Calls++
	}
	b.call, b.phase = c, calling
	if err != nil && err != errPanicked {
		a.submitErr = err
	}
	switch {
	case err == nil && dc == nil:
		err = errors.New("Submit returned no call and no error")
		fallthrough
	case err != nil && !nothingEscaped(err):
		c.stuck, c.acc = true, drivers.AccessUnprovable // D-SUB-2: the rows may be touched
		m.count.UnprovableTotal++
		c.folded = true
		a.failCause, a.why = errCause{"Submit failed (%v): the rows are UNPROVABLE", err}, a.why|whySubmit
	case err != nil:
		b.phase, b.call = dropped, nil // D-SUB-2: nothing escaped
		a.failCause, a.why = errCause{"Submit refused (%v)", err}, a.why|whySubmit
		return nil
	}
	m.calls = append(m.calls, c)
	return c
}

// keep returns rows as the model keeps them: the rows of the batch waiting
// next (or looked up) when they are equal, as they are in a Submit that
// follows B-CUT; else a copy. A batch's rows are the model's own and never
// change, so a call may share them.
func (m *Model) keep(rows []drivers.Row) []drivers.Row {
	if b := m.pending; b != nil && slices.Equal(b.rows, rows) {
		return b.rows
	}
	for _, b := range m.queue[:min(len(m.queue), 2)] {
		if slices.Equal(b.rows, rows) {
			return b.rows
		}
	}
	out := m.rowSlab.Make(len(rows))
	copy(out, rows)
	return out
}

func nothingEscaped(err error) bool {
	return errors.Is(err, drivers.ErrInvalidSubmission) || errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrRejected)
}

// readResults is a Results read by the backend.
func (m *Model) readResults(c *call, res []drivers.Status) {
	m.settleLookup()
	m.readDuringDrain()
	a := c.b.a
	m.touch(a)
	if c.stuck {
		return
	}
	if len(res) != len(c.rows) {
		// D-STATUS: a wrong number of results is a whole-call failure.
		c.stuck, c.folded = true, true
		if c.acc == drivers.AccessPending {
			m.count.UnprovableTotal++
		}
		if c.acc != drivers.AccessEnded {
			c.acc = drivers.AccessUnprovable
		}
		a.failCause, a.why = countCause{c, len(res)}, a.why|whyWrongLength
		return
	}
	if c.res == nil {
		c.res = m.resSlab.Make(len(res))
	}
	final := true
	for i, s := range res {
		if !c.res[i].Final() && s.Final() {
			c.res[i] = s
		}
		if !c.res[i].Final() {
			final = false
		} else if c.res[i] == drivers.Fault || c.res[i] == drivers.NotAttempted {
			if a.maybeFail == nil {
				c.maybeRow = rowCause{c, i}
				a.maybeFail, a.why = &c.maybeRow, a.why|whyRow
			}
		}
	}
	if !final || c.folded {
		return
	}
	c.folded = true
	wasPending := !m.committed(a)
	var declined []drivers.Row
	bad := -1 // the last row that fails the attempt
	for i, s := range c.res {
		r := c.rows[i]
		if r.Position < 0 || r.Position >= len(a.served) {
			continue // not this attempt's row: reported as B-CUT at its Submit
		}
		switch {
		case s == drivers.OK:
			a.served[r.Position] = true
		case s == drivers.Miss && a.dir == drivers.Publish:
			declined = append(declined, r)
		case s == drivers.Miss:
			a.missed++
		default:
			bad = i
			declined = nil
		}
	}
	if bad >= 0 {
		c.failRow = rowCause{c, bad}
		a.failCause, a.why = &c.failRow, a.why|whyRow
	}
	c.b.phase = complete
	if len(declined) > 0 && a.failCause == nil && wasPending {
		c.recheckRows = declined
		c.b.phase = calling // complete once the recheck answered
		m.recheck = c
	}
}

func (m *Model) answerRecheck(c *call, keys []string, present []bool, err error) {
	a := c.b.a
	m.touch(a)
	c.b.phase = complete
	if want := keysOf(c.recheckRows); !slices.Equal(keys, want) {
		m.fail(rules.BPublish, a, c.id, "recheck-keys", fmt.Sprintf("the declined rows %q must be looked up again, but the lookup asked %q", want, keys))
		return
	}
	if err != nil {
		a.failCause, a.why = errCause{"the lookup after a declined publish failed: %v", err}, a.why|whyLookup
		return
	}
	for i, r := range c.recheckRows {
		if present[i] && r.Position >= 0 && r.Position < len(a.served) {
			a.served[r.Position] = true // raced: someone else's object is there
			a.raced++
		} else {
			a.declined++
		}
	}
}

// readAccess is an Access read by the backend: legal changes only (D-ACCESS).
func (m *Model) readAccess(c *call, acc drivers.Access) {
	m.settleLookup()
	m.readDuringDrain()
	m.touch(c.b.a)
	if c.stuck || c.acc == acc || !c.acc.CanBecome(acc) {
		return // a stuck call stays UNPROVABLE whatever the driver says later
	}
	if acc == drivers.AccessUnprovable {
		m.count.UnprovableTotal++
	}
	c.acc = acc
}

func (m *Model) drained(st drivers.DrainStatus) {
	m.shut.readSincePoll = false
	m.shut.polled = m.shut.polled || m.shut.asked
	if m.shut.asked && st.Done {
		m.shut.drainDone = true
	}
}

// readDuringDrain notes a read of a call while the shutdown drains: the
// backend polls Drain from every change callback (SPEC §3), so a Drain
// must follow in the same step (checked in afterStep).
func (m *Model) readDuringDrain() {
	if m.shut.asked && !m.shut.everShut && !m.shut.drainDone {
		m.shut.readSincePoll = true
	}
}

// A cause is why an attempt must fail, or may have: kept as its parts and
// formatted only when a finding names it, which a passing run never does.
type cause = fmt.Stringer

type textCause string

func (t textCause) String() string { return string(t) }

// errCause is a failure reported by an error (errors are values: it reads
// the same when it is formatted later).
type errCause struct {
	format string // one %v, the error
	err    error
}

func (e errCause) String() string { return fmt.Sprintf(e.format, e.err) }

// rowCause is a row result that fails the attempt; a final result is kept
// for good, so c.res[row] reads the same later.
type rowCause struct {
	c   *call
	row int
}

func (r rowCause) String() string {
	return fmt.Sprintf("call %d row %d (key %q) is %v", r.c.id, r.row, r.c.rows[r.row].Key, r.c.res[r.row])
}

// lookupCause is a batch's failed lookup of exactly its keys (the batch's
// lookup fails at most once: it is dropped then).
type lookupCause batch

func (c *lookupCause) String() string {
	return fmt.Sprintf("the lookup of %q failed: %v", keysOf(c.rows), c.lookupErr)
}

// countCause is a Results read of the wrong length.
type countCause struct {
	c   *call
	got int
}

func (n countCause) String() string {
	return fmt.Sprintf("call %d answered %d results for %d rows", n.c.id, n.got, len(n.c.rows))
}

// stray names the rule a lookup or call broke when no batch waits for it:
// B-CUT, unless it comes while a view is being admitted that the backend
// must refuse or fail at once — nothing of that view may reach the driver
// (B-SUBMIT), nor of one it has no room for (B-BOUND).
func (m *Model) stray(what string) (rules.ID, string) {
	if a := m.admitting; a != nil {
		why := a.bad
		if why == "" {
			why = m.closed()
		}
		switch {
		case why != "":
			return rules.BSubmit, fmt.Sprintf("%s while a %v view is admitted that must be refused, as %s: nothing of it may reach the driver", what, a.dir, why)
		case a.expectFail:
			return rules.BSubmit, fmt.Sprintf("%s while a %v view is admitted with a row outside any live registration: it fails at once, before any store call", what, a.dir)
		case a.noRoom.full:
			return rules.BBound, fmt.Sprintf("%s while a %v view is admitted that there is no room for (%s): it must be refused whole", what, a.dir, m.gauges())
		}
	}
	return rules.BCut, what + " while no batch waits to be dispatched"
}
