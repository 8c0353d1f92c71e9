package model

import (
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// CheckMemory is the memory oracle over a touch log (arena.Options.Log)
// ordered by virtual time; calls are the recorder's facts (Recorder.Calls).
// It checks, per touch:
//
//   - D-SUB-6: a touch by (call, row) is inside exactly that row's slot of
//     that row's region (and by a call the monitor saw submitted);
//   - D-ACCESS-END: no touch by a call after the monitor saw its access
//     ENDED — here "after" is a later virtual time, so a touch at the same
//     instant as ENDED passes (Recorder.MemoryViolations with the OnTouch
//     hook orders them exactly);
//   - D-STATUS: a FETCH row reported MISS or NOT_ATTEMPTED leaves its slot
//     untouched — no write by that call and row, before or after the result.
//
// Recorder.MemoryViolations adds the store side of D-STATUS: a PUBLISH row
// reported NOT_ATTEMPTED never started, so the store never ran its put — a
// put the harness reported for that call and row (Recorder.Put, from the
// simulated store's event log) is a violation, whenever it ran.
//
// S-NO-LATE-ACCESS is judged by the arena at the touch (slot ownership);
// Recorder.MemoryViolations collects those too.
func CheckMemory(touches []arena.Touch, calls []CallInfo, seed uint64) []rules.Violation {
	ts := make([]stampedTouch, len(touches))
	for i, t := range touches {
		ts[i] = stampedTouch{Touch: t}
	}
	byID := make(map[drivers.CallID]*CallInfo, len(calls))
	for i := range calls {
		byID[calls[i].ID] = &calls[i]
	}
	return checkTouches(ts, func(id drivers.CallID) *CallInfo { return byID[id] }, nil, false, nil, seed)
}

// MemoryViolations runs the memory oracle: the arenas' own S-NO-LATE-ACCESS
// and D-SUB-6 findings, then CheckMemory's rules over the touches the
// recorder saw through OnTouch (ordered exactly against the monitor's
// events) or, if it saw none, over the arenas' touch logs.
func (r *Recorder) MemoryViolations(arenas ...*arena.Arena) []rules.Violation {
	r.mu.Lock()
	online := len(r.touches) > 0
	r.mu.Unlock()
	var avs []arena.Violation
	for _, a := range arenas {
		avs = append(avs, a.Violations()...)
	}
	var touches []stampedTouch
	if !online {
		for _, a := range arenas {
			for _, t := range a.Touches() {
				touches = append(touches, stampedTouch{Touch: t})
			}
		}
	}
	// The check runs under the lock, on the recorder's own records of the
	// calls and touches: nothing to copy.
	r.mu.Lock()
	defer r.mu.Unlock()
	if online {
		touches = r.touches
	}
	dropped, first := r.touchDropped, r.firstDropped
	out := checkTouches(touches, r.callInfo, avs, r.escaped > 0, r.refusedIn, r.opts.Seed)
	resort := false
	if puts := r.notAttemptedPutsLocked(); len(puts) > 0 {
		out = append(out, puts...)
		resort = true
	}
	if dropped > 0 {
		out = append(out, rules.Violation{Rule: rules.HarnessErr, Class: rules.Harness, Call: uint64(first.By.Call), Row: first.By.Row, At: first.At, Seed: r.opts.Seed,
			Detail: fmt.Sprintf("the driver touched memory in more than %d distinct ways (toucher, read or write, region, slot) in one run; the memory oracle did not judge %d of them, the first: %s", MaxTouches, dropped, first)})
		resort = true
	}
	if resort {
		rules.Sort(out)
	}
	return out
}

// notAttemptedPutsLocked is D-STATUS on the store's side: every put the harness
// reported (Recorder.Put) for a PUBLISH row that the call reports
// NOT_ATTEMPTED. Such a row "never started: the store was not written"
// (SPEC §1), so the history's TookEffect for it is what really happened and
// the answer is the lie. One violation per call and row.
func (r *Recorder) notAttemptedPutsLocked() []rules.Violation {
	var out []rules.Violation
	for _, c := range r.order {
		if c.Dir != drivers.Publish {
			continue
		}
		for i, row := range c.Rows {
			if row.Status != drivers.NotAttempted {
				continue
			}
			put, ok := r.putOf(c, i)
			if !ok {
				continue
			}
			out = append(out, rules.Violation{Rule: rules.DStatus, Class: rules.Safety, Call: uint64(c.ID), Row: i, Key: row.Key,
				At: put.at, Seed: r.opts.Seed,
				Detail: fmt.Sprintf("PUBLISH row reported NOT_ATTEMPTED (never started, the store not written), but the store ran its put (#%d)", put.seq)})
		}
	}
	return out
}

// callInfo is the facts of call id, nil if the recorder has none (r.mu
// held).
func (r *Recorder) callInfo(id drivers.CallID) *CallInfo {
	if c := r.calls.get(id); c != nil {
		return &c.CallInfo
	}
	return nil
}

// seqSpan is a span of the recorder's event sequence, [from, to).
type seqSpan struct{ from, to int64 }

// maxRefusedSpans bounds the spans a recorder keeps of refused Submits: a
// run refusing more than this has told its story.
const maxRefusedSpans = 4096

// checkTouches: call finds a call's facts by id (nil: none);
// tolerateUnknown excuses touches by calls the monitor never saw, when a
// submit failed after which rows may have escaped (D-SUB-2); refused are
// the spans of Submits refused with a nothing-escaped error: a touch by no
// known call inside one was made by the refused Submit itself, before it
// refused — the batch was not validated first (D-SUB-1). Where a Submit
// escaped (tolerateUnknown) the touch may be that call's, and is excused.
func checkTouches(touches []stampedTouch, call func(drivers.CallID) *CallInfo, avs []arena.Violation, tolerateUnknown bool, refused []seqSpan, seed uint64) []rules.Violation {
	keyOf := func(by drivers.Toucher) string {
		if c := call(by.Call); c != nil && by.Row >= 0 && by.Row < len(c.Rows) {
			return c.Rows[by.Row].Key
		}
		return ""
	}
	type once struct {
		rule rules.ID
		by   drivers.Toucher
	}
	seen := map[once]bool{}
	var out []rules.Violation
	// One violation per rule, call and row: the first touch tells the story.
	add := func(rule rules.ID, t arena.Touch, detail string) {
		k := once{rule, t.By}
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, rules.Violation{Rule: rule, Class: rules.Safety, Call: uint64(t.By.Call), Row: t.By.Row,
			Key: keyOf(t.By), At: t.At, Seed: seed, Detail: detail + ": " + t.String()})
	}
	for _, av := range avs {
		add(av.Rule, av.Touch, av.Detail)
	}
	for _, t := range touches {
		c := call(t.By.Call)
		switch {
		case c == nil && tolerateUnknown:
			continue
		case c == nil && t.online && slices.ContainsFunc(refused, func(s seqSpan) bool { return t.seq >= s.from && t.seq < s.to }):
			add(rules.DSub1, t.Touch, "touch during a Submit that then refused the batch as invalid, closed or rejected: the batch must be validated before any access")
			continue
		case c == nil:
			add(rules.DSub6, t.Touch, fmt.Sprintf("touch by call %d, which the monitor never saw submitted", t.By.Call))
			continue
		case t.By.Row < 0 || t.By.Row >= len(c.Rows):
			add(rules.DSub6, t.Touch, fmt.Sprintf("touch names row %d of a call with %d rows", t.By.Row, len(c.Rows)))
			continue
		}
		row := c.Rows[t.By.Row]
		switch {
		case t.Slot < 0:
			add(rules.DSub6, t.Touch, "access crosses a slot boundary or leaves the slot area")
		case t.Region != row.Region || t.Slot != row.Slot:
			add(rules.DSub6, t.Touch, fmt.Sprintf("touch outside the row's slot: the row is %s slot %d", row.Region, row.Slot))
		}
		if c.EndedSeq != 0 && touchedAfterEnd(t, c) {
			add(rules.DAccessEnd, t.Touch, fmt.Sprintf("%v after the monitor saw the call's access ENDED (#%d at %v)", t.Op, c.EndedSeq, c.EndedAt))
		}
		if c.Dir == drivers.Fetch && t.Op == arena.Write && (row.Status == drivers.Miss || row.Status == drivers.NotAttempted) {
			add(rules.DStatus, t.Touch, fmt.Sprintf("FETCH row reported %v must leave its slot untouched, but it was written", row.Status))
		}
	}
	rules.Sort(out)
	return out
}

// touchedAfterEnd orders a touch against the ENDED the monitor saw: by event
// sequence for touches stamped online, else by virtual time (strictly later).
func touchedAfterEnd(t stampedTouch, c *CallInfo) bool {
	if t.online {
		return t.seq >= c.EndedSeq
	}
	return t.At > c.EndedAt
}
