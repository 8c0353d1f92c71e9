package backend

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// The tests in this file drive each B-rule against the scripted fake driver,
// completing calls by hand so every interleaving is exact.

var (
	ok   = drivers.OK
	miss = drivers.Miss
	flt  = drivers.Fault
	na   = drivers.NotAttempted

	pend  = drivers.AccessPending
	ended = drivers.AccessEnded
	unpr  = drivers.AccessUnprovable
)

func TestSubmitAdmission(t *testing.T) {
	cases := []struct {
		name  string
		view  func(e *env) drivers.View
		dir   drivers.Direction
		caps  *drivers.Capabilities
		want  error
		state State // when admitted
	}{
		{"mask-length", func(e *env) drivers.View { v := e.view("a", "b"); v.Mask = v.Mask[:1]; return v }, drivers.Fetch, nil, drivers.ErrInvalidSubmission, 0},
		{"position", func(e *env) drivers.View { v := e.view("a", "b"); v.Rows[1].Position = 0; return v }, drivers.Fetch, nil, drivers.ErrInvalidSubmission, 0},
		{"empty-key", func(e *env) drivers.View { return e.view("a", "") }, drivers.Publish, nil, drivers.ErrInvalidSubmission, 0},
		{"same-slot-twice", func(e *env) drivers.View { v := e.view("a", "b"); v.Rows[1].Slot = 0; return v }, drivers.Fetch, nil, drivers.ErrInvalidSubmission, 0},
		{"unsupported-direction", func(e *env) drivers.View { return e.view("a") }, drivers.Publish,
			&drivers.Capabilities{MaxRowsPerOp: 2, AbsentIsMiss: true, CanFetch: true}, drivers.ErrInvalidSubmission, 0},
		{"empty-view", func(e *env) drivers.View { v := e.view("a", "b"); v.Mask = []bool{false, false}; return v }, drivers.Fetch, nil, nil, Delivered},
		{"masked-out-rows-never-checked", func(e *env) drivers.View { v := e.view("a", ""); v.Rows[1].Handle = 99; v.Mask[1] = false; return v }, drivers.Fetch, nil, nil, Pending},
		{"unregistered-handle", func(e *env) drivers.View { v := e.view("a", "b"); v.Rows[1].Handle = 99; return v }, drivers.Fetch, nil, nil, Failed},
		{"slot-outside-region", func(e *env) drivers.View { v := e.view("a"); v.Rows[0].Slot = 16; return v }, drivers.Publish, nil, nil, Failed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caps := defaultCaps
			if c.caps != nil {
				caps = *c.caps
			}
			e := newEnv(t, caps, Config{})
			v := c.view(e)
			var a *Attempt
			var err error
			if c.dir == drivers.Fetch {
				a, err = e.b.Fetch(v)
			} else {
				a, err = e.b.Publish(v)
			}
			if c.want != nil {
				if !errors.Is(err, c.want) || a != nil {
					t.Fatalf("admission = %v, %v; want %v %s", a, err, c.want, e.repro)
				}
				e.wantLog() // B-SUBMIT: nothing escaped
				return
			}
			if err != nil {
				t.Fatalf("admission: %v %s", err, e.repro)
			}
			e.run()
			if a.State() != c.state {
				t.Fatalf("state %v, want %v %s", a.Outcome(), c.state, e.repro)
			}
			switch c.state {
			case Delivered:
				e.wantOutcome(a, Delivered, bools("00"), ended)
				e.wantLog()
				if !slices.Equal(e.changes, []string{"a1 DELIVERED ENDED"}) {
					t.Fatalf("OnChange log %q, want one DELIVERED ENDED %s", e.changes, e.repro)
				}
			case Failed:
				// B-SUBMIT: not a miss; no store call at all.
				if !errors.Is(a.Outcome().Reason, ErrNotRegistered) || a.Access() != ended || e.b.Stats().Missed != 0 {
					t.Fatalf("outcome %v access %v missed %d; want Failed(not registered), ENDED, 0 %s", a.Outcome(), a.Access(), e.b.Stats().Missed, e.repro)
				}
				e.wantLog()
			case Pending:
				e.wantLog("submit FETCH a")
			}
		})
	}
}

// TestSubmitClosed: after Shutdown, admission is refused with nothing sent.
func TestSubmitClosed(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{})
	e.shutdown()
	n := len(e.f.Log())
	if a, err := e.b.Fetch(e.view("a")); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrSubmissionRejected) || a != nil {
		t.Fatalf("Fetch after shutdown = %v, %v; want ErrClosed %s", a, err, e.repro)
	}
	if len(e.f.Log()) != n || e.b.Stats().Rejected != 1 {
		t.Fatalf("refused Fetch reached the driver (%q) or was not counted %s", e.f.Log()[n:], e.repro)
	}
}

// TestCutCalls is B-CUT through the driver: calls and look-ups.
func TestCutCalls(t *testing.T) {
	cases := []struct {
		name    string
		dir     drivers.Direction
		absent  bool // AbsentIsMiss
		keys    []string
		wantLog []string
	}{
		{"5-rows-max-2", drivers.Fetch, true, []string{"a", "b", "c", "d", "e"},
			[]string{"submit FETCH a b", "submit FETCH c d", "submit FETCH e"}},
		{"repeated-key", drivers.Fetch, true, []string{"a", "a", "b", "a"},
			[]string{"submit FETCH a", "submit FETCH a b", "submit FETCH a"}},
		{"lookups-cut-the-same", drivers.Fetch, false, []string{"a", "a", "b"},
			[]string{"contains a", "submit FETCH a", "contains a b", "submit FETCH a b"}},
		{"publish-repeated-key", drivers.Publish, true, []string{"x", "y", "x"},
			[]string{"contains x y", "submit PUBLISH x y", "contains x", "submit PUBLISH x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caps := defaultCaps
			caps.AbsentIsMiss = c.absent
			e := newEnv(t, caps, Config{})
			for _, k := range c.keys {
				e.f.Present[k] = c.dir == drivers.Fetch
			}
			a := e.mustAdmit(c.dir, e.view(c.keys...))
			e.wantLog(c.wantLog...)
			for _, fc := range e.f.Calls() {
				fc.Finish(ended, ok)
			}
			e.run()
			e.wantOutcome(a, Delivered, bools("11111"[:len(c.keys)]), ended)
		})
	}
}

// TestBound is B-BOUND: in-flight slots free at evidence, whole-attempt
// admission, the unprovable gauge.
func TestBound(t *testing.T) {
	t.Run("slot-frees-at-evidence-not-at-results", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 1, MaxQueuedCalls: 2})
		a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c"))
		e.wantLog("submit FETCH a b")
		e.call(0).Finish(pend, ok) // results final, access not
		e.run()
		e.wantLog("submit FETCH a b")
		e.call(0).Finish(ended)
		e.run()
		e.wantLog("submit FETCH a b", "submit FETCH c")
		e.call(1).Finish(ended, miss)
		e.run()
		e.wantOutcome(a, Delivered, bools("110"), ended)
	})
	t.Run("whole-attempt-admission", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 1, MaxQueuedCalls: 1})
		e.mustAdmit(drivers.Fetch, e.view("a", "b")) // 1 call in flight
		big := e.view("c", "d", "e", "f")
		for i := range big.Rows {
			big.Rows[i].Slot += 4
		}
		if _, err := e.b.Fetch(big); !errors.Is(err, ErrOverCapacity) {
			t.Fatalf("4-row view with 1 free slot: %v, want ErrOverCapacity %s", err, e.repro)
		}
		e.wantLog("submit FETCH a b")
		big.Rows, big.Mask = big.Rows[:2], big.Mask[:2]
		if _, err := e.b.Fetch(big); err != nil { // the refusal consumed nothing
			t.Fatalf("2-row view after a refusal: %v %s", err, e.repro)
		}
		if s := e.b.Stats(); s.InFlight != 1 || s.Queued != 1 || s.Rejected != 1 {
			t.Fatalf("stats %+v, want 1 in flight, 1 queued, 1 rejected %s", s, e.repro)
		}
	})
	t.Run("unprovable-gauge", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 1, MaxUnprovable: 1})
		a1 := e.mustAdmit(drivers.Fetch, e.view("a"))
		e.call(0).Finish(unpr, flt)
		e.run()
		e.wantOutcome(a1, Failed, nil, unpr)
		v := e.view("x", "b")
		v.Mask[0] = false
		a2 := e.mustAdmit(drivers.Fetch, v) // the UNPROVABLE call freed its slot
		e.call(1).Finish(unpr, ok)
		e.run()
		e.wantOutcome(a2, Delivered, bools("01"), unpr) // results stand; memory stays retained
		if s := e.b.Stats(); s.Unprovable != 2 || s.RetainedBytes != 16 || s.InFlight != 0 {
			t.Fatalf("stats %+v, want gauge 2, 16 retained bytes, 0 in flight %s", s, e.repro)
		}
		if _, err := e.b.Fetch(e.view("c")); !errors.Is(err, ErrTooManyUnprovable) {
			t.Fatalf("admission with gauge 2 > 1: %v, want ErrTooManyUnprovable %s", err, e.repro)
		}
		e.call(0).Finish(ended) // proof arrives later (D-ACCESS)
		e.run()
		e.wantOutcome(a1, Failed, nil, ended)
		if s := e.b.Stats(); s.Unprovable != 1 || s.RetainedBytes != 8 || s.UnprovableTotal != 2 {
			t.Fatalf("stats %+v, want gauge 1, 8 bytes, total 2 %s", s, e.repro)
		}
		if _, err := e.b.Fetch(e.view("c")); err != nil {
			t.Fatalf("admission with gauge 1 <= 1: %v %s", err, e.repro)
		}
	})
}

// fold is a scripted run: the attempt's calls are completed in order with
// the given access and statuses.
type finishStep struct {
	acc drivers.Access
	sts []drivers.Status
}

func step(acc drivers.Access, sts ...drivers.Status) finishStep { return finishStep{acc, sts} }

// TestFetch is B-FETCH.
func TestFetch(t *testing.T) {
	cases := []struct {
		name    string
		absent  bool // AbsentIsMiss
		present []string
		setup   func(f *fakeDriver)
		steps   []finishStep
		state   State
		served  string
		access  drivers.Access
		log     []string
	}{
		{"all-ok", true, nil, nil, []finishStep{step(ended, ok), step(ended, ok)}, Delivered, "111", ended,
			[]string{"submit FETCH a b", "submit FETCH c"}},
		{"all-miss-is-delivered-nothing", true, nil, nil, []finishStep{step(ended, miss), step(ended, miss)}, Delivered, "000", ended,
			[]string{"submit FETCH a b", "submit FETCH c"}},
		{"mixed", true, nil, nil, []finishStep{step(ended, ok, miss), step(ended, ok)}, Delivered, "101", ended,
			[]string{"submit FETCH a b", "submit FETCH c"}},
		{"fault-in-later-batch-fails-whole", true, nil, nil, []finishStep{step(ended, ok), step(ended, flt)}, Failed, "", ended,
			[]string{"submit FETCH a b", "submit FETCH c"}},
		{"not-attempted-is-not-a-miss", true, nil, nil, []finishStep{step(ended, ok, na)}, Failed, "", ended,
			[]string{"submit FETCH a b"}},
		{"unprovable-call", true, nil, nil, []finishStep{step(unpr, flt)}, Failed, "", unpr,
			[]string{"submit FETCH a b"}},
		{"submit-rejected-nothing-escaped", true, nil, func(f *fakeDriver) {
			f.SubmitErr = func(drivers.RowBatch) error { return drivers.ErrRejected }
		}, nil, Failed, "", ended, []string{"submit FETCH a b"}},
		{"submit-error-is-unprovable", true, nil, func(f *fakeDriver) {
			f.SubmitErr = func(drivers.RowBatch) error { return errors.New("connection reset") }
		}, nil, Failed, "", unpr, []string{"submit FETCH a b"}},
		{"lookup-first-fetch-only-present", false, []string{"a", "c"}, nil, []finishStep{step(ended, ok), step(ended, ok)}, Delivered, "101", ended,
			[]string{"contains a b", "submit FETCH a", "contains c", "submit FETCH c"}},
		{"present-at-lookup-miss-at-fetch", false, []string{"a", "b", "c"}, nil, []finishStep{step(ended, miss, ok), step(ended, ok)}, Delivered, "011", ended,
			[]string{"contains a b", "submit FETCH a b", "contains c", "submit FETCH c"}},
		{"nothing-present-no-call", false, nil, nil, nil, Delivered, "000", ended,
			[]string{"contains a b", "contains c"}},
		{"lookup-outage-is-not-a-miss", false, []string{"a"}, func(f *fakeDriver) {
			f.ContainsErr = func([]string) error { return drivers.ErrLookupFailed }
		}, nil, Failed, "", ended, []string{"contains a b"}},
		{"lookup-wrong-length", false, []string{"a"}, func(f *fakeDriver) { f.ContainsShort = true }, nil, Failed, "", ended,
			[]string{"contains a b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caps := defaultCaps
			caps.AbsentIsMiss = c.absent
			e := newEnv(t, caps, Config{MaxCallsInFlight: 1})
			for _, k := range c.present {
				e.f.Present[k] = true
			}
			if c.setup != nil {
				c.setup(e.f)
			}
			a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c"))
			for i, s := range c.steps {
				e.call(i).Finish(s.acc, s.sts...)
				e.run()
			}
			e.run()
			e.wantLog(c.log...)
			e.wantOutcome(a, c.state, bools(c.served), c.access)
			if c.state == Failed && a.Outcome().Served != nil {
				t.Fatalf("Failed attempt reports served rows %v %s", a.Outcome().Served, e.repro)
			}
		})
	}
}

// TestFetchWrongLength: a wrong number of results fails the attempt and
// makes the call UNPROVABLE whatever the driver claims (D-STATUS).
func TestFetchWrongLength(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{})
	a := e.mustAdmit(drivers.Fetch, e.view("a", "b"))
	e.call(0).Short = true
	e.call(0).Finish(ended, ok)
	e.run()
	e.wantOutcome(a, Failed, nil, unpr)
	if !errors.Is(a.Outcome().Reason, ErrWrongLength) || e.b.Stats().Unprovable != 1 {
		t.Fatalf("reason %v gauge %d; want ErrWrongLength, 1 %s", a.Outcome().Reason, e.b.Stats().Unprovable, e.repro)
	}
	e.call(0).Short = false // a later right-length answer claiming ENDED changes nothing
	e.call(0).Finish(ended, ok)
	e.run()
	e.wantOutcome(a, Failed, nil, unpr)
}

// TestPublish is B-PUBLISH.
func TestPublish(t *testing.T) {
	cases := []struct {
		name     string
		present  []string // before the first look-up
		later    []string // present at the re-check
		setup    func(f *fakeDriver)
		steps    []finishStep
		state    State
		served   string
		log      []string
		declined uint64
		raced    uint64
	}{
		{"absent-published", nil, nil, nil, []finishStep{step(ended, ok)}, Delivered, "11",
			[]string{"contains a b", "submit PUBLISH a b"}, 0, 0},
		{"present-served-without-rewriting", []string{"a"}, nil, nil, []finishStep{step(ended, ok)}, Delivered, "11",
			[]string{"contains a b", "submit PUBLISH b"}, 0, 0},
		{"all-present-no-call", []string{"a", "b"}, nil, nil, nil, Delivered, "11",
			[]string{"contains a b"}, 0, 0},
		{"declined-then-present-is-raced", nil, []string{"a"}, nil, []finishStep{step(ended, miss, ok)}, Delivered, "11",
			[]string{"contains a b", "submit PUBLISH a b", "contains a"}, 0, 1},
		{"declined-then-absent-is-declined", nil, nil, nil, []finishStep{step(ended, miss, ok)}, Delivered, "01",
			[]string{"contains a b", "submit PUBLISH a b", "contains a"}, 1, 0},
		{"fault-fails", nil, nil, nil, []finishStep{step(ended, ok, flt)}, Failed, "",
			[]string{"contains a b", "submit PUBLISH a b"}, 0, 0},
		{"lookup-outage-puts-nothing", nil, nil, func(f *fakeDriver) {
			f.ContainsErr = func([]string) error { return drivers.ErrLookupFailed }
		}, nil, Failed, "", []string{"contains a b"}, 0, 0},
		{"recheck-outage-fails", nil, nil, func(f *fakeDriver) {
			n := 0
			f.ContainsErr = func([]string) error {
				if n++; n > 1 {
					return drivers.ErrLookupFailed
				}
				return nil
			}
		}, []finishStep{step(ended, miss, ok)}, Failed, "", []string{"contains a b", "submit PUBLISH a b", "contains a"}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, defaultCaps, Config{})
			for _, k := range c.present {
				e.f.Present[k] = true
			}
			if c.setup != nil {
				c.setup(e.f)
			}
			a := e.mustAdmit(drivers.Publish, e.view("a", "b"))
			for _, k := range c.later {
				e.f.Present[k] = true
			}
			for i, s := range c.steps {
				e.call(i).Finish(s.acc, s.sts...)
			}
			e.run()
			e.wantLog(c.log...)
			e.wantOutcome(a, c.state, bools(c.served), ended)
			if s := e.b.Stats(); s.Declined != c.declined || s.Raced != c.raced {
				t.Fatalf("declined %d raced %d, want %d %d %s", s.Declined, s.Raced, c.declined, c.raced, e.repro)
			}
		})
	}
}

// TestOutcome is B-OUTCOME: set once, the first committed wins.
func TestOutcome(t *testing.T) {
	t.Run("cancel-before-completion-event-wins", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		a := e.mustAdmit(drivers.Fetch, e.view("a"))
		e.call(0).Finish(ended, ok) // the driver completed; our event has not run
		if !a.Cancel() {
			t.Fatalf("Cancel did not commit %s", e.repro)
		}
		e.run()
		e.wantOutcome(a, Cancelled, nil, ended)
	})
	t.Run("completion-before-cancel-wins", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{})
		a := e.mustAdmit(drivers.Fetch, e.view("a"))
		e.call(0).Finish(pend, ok)
		e.run()
		if a.Cancel() {
			t.Fatalf("Cancel committed over Delivered %s", e.repro)
		}
		e.call(0).Finish(ended)
		e.run()
		e.wantOutcome(a, Delivered, bools("1"), ended)
		if e.call(0).Cancels() != 0 {
			t.Fatalf("a call with final results was cancelled %s", e.repro)
		}
	})
	t.Run("late-success-never-overrides-failure", func(t *testing.T) {
		e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 2})
		a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c"))
		e.call(1).Finish(ended, flt)
		e.run()
		e.call(0).Finish(ended, ok)
		e.run()
		e.wantOutcome(a, Failed, nil, ended)
		if e.call(0).Cancels() != 1 {
			t.Fatalf("the failed attempt's other call got %d cancels, want 1 %s", e.call(0).Cancels(), e.repro)
		}
	})
}

// TestAccess is B-ACCESS and Quiesce.
func TestAccess(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 2})
	a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c"))
	e.call(0).Finish(pend, ok)
	e.call(1).Finish(unpr, ok)
	e.run()
	e.wantOutcome(a, Delivered, bools("111"), unpr) // UNPROVABLE as soon as one is
	e.call(0).Finish(ended)
	e.run()
	if e.b.Quiesce(a) {
		t.Fatalf("Quiesce true with one call UNPROVABLE %s", e.repro)
	}
	e.call(1).Finish(ended)
	e.run()
	if !e.b.Quiesce(a) || a.Access() != ended {
		t.Fatalf("Quiesce false / access %v after every call ENDED %s", a.Access(), e.repro)
	}
	want := []string{"a1 PENDING PENDING", "a1 DELIVERED UNPROVABLE", "a1 DELIVERED ENDED"}
	if !slices.Equal(e.changes, want) && !slices.Equal(e.changes, want[1:]) {
		t.Fatalf("OnChange log %q, want %q %s", e.changes, want[1:], e.repro)
	}
}

// TestCancel is B-CANCEL.
func TestCancel(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{MaxCallsInFlight: 1})
	a := e.mustAdmit(drivers.Fetch, e.view("a", "b", "c", "d", "e"))
	if !a.Cancel() || a.Cancel() {
		t.Fatalf("Cancel should commit once %s", e.repro)
	}
	e.wantOutcome(a, Cancelled, nil, pend) // the in-flight call has no evidence yet
	if e.call(0).Cancels() != 1 {
		t.Fatalf("in-flight call got %d cancels, want exactly 1 %s", e.call(0).Cancels(), e.repro)
	}
	e.call(0).Finish(ended, na)
	e.run()
	e.wantLog("submit FETCH a b") // queued batches were dropped
	e.wantOutcome(a, Cancelled, nil, ended)
	if s := e.b.Stats(); s.Cancelled != 1 || s.Queued != 0 || s.InFlight != 0 {
		t.Fatalf("stats %+v %s", s, e.repro)
	}
}

// TestOnChangeFromEvents: OnChange never runs inside the caller's call.
func TestOnChangeFromEvents(t *testing.T) {
	e := newEnv(t, defaultCaps, Config{})
	a := e.mustAdmit(drivers.Fetch, e.view("a"))
	a.Cancel()
	if len(e.changes) != 0 {
		t.Fatalf("OnChange ran inline: %q %s", e.changes, e.repro)
	}
	e.run()
	if len(e.changes) == 0 {
		t.Fatalf("OnChange never ran %s", e.repro)
	}
}

// TestSameSlotNamesBothRows: a view that uses one slot twice is refused
// naming both rows, whether checkView scans it (short) or indexes it (past
// smallView), and a masked-out row never counts as the first use.
func TestSameSlotNamesBothRows(t *testing.T) {
	for _, n := range []int{4, smallView + 6} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			e := newEnv(t, defaultCaps, Config{})
			keys := make([]string, n)
			for i := range keys {
				keys[i] = "k" + strconv.Itoa(i)
			}
			v := e.view(keys...)
			v.Mask[1] = false
			v.Rows[n-2].Slot = 1 // masked-out row 1's slot: allowed
			v.Rows[n-1].Slot = 0 // row 0's
			_, err := e.b.Fetch(v)
			want := fmt.Sprintf("view rows 0 and %d use the same slot", n-1)
			if !errors.Is(err, drivers.ErrInvalidSubmission) || !strings.Contains(err.Error(), want) {
				t.Fatalf("admission error %v, want %q %s", err, want, e.repro)
			}
		})
	}
}
