package backend_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/model/lender"
)

// memRule is one row of the rule table run against both reference drivers
// (memdriver.Driver, memdriver.TogetherDriver) with AbsentIsMiss true and
// false. Each body drives a world and fails with the rule it checks; every
// run ends with the lender oracle (w.check).
type memRule struct {
	name string
	body func(t *testing.T, w *world, fl flavour)
}

var memRules = []memRule{
	{"B-SUBMIT/unregistered-row-fails-before-any-call", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("b", epOpts{fl: fl})
		h, _ := ep.b.Handle("b0")
		a, err := ep.b.Fetch(drivers.View{Rows: []drivers.Row{{Key: "k", Handle: h + 100, Position: 0}}, Mask: []bool{true}})
		if err != nil {
			t.Fatalf("admission: %v %s", err, w.repro)
		}
		w.run()
		if a.State() != backend.Failed || !errors.Is(a.Outcome().Reason, backend.ErrNotRegistered) || len(ep.spy.lookups)+len(ep.spy.submits) != 0 {
			t.Fatalf("outcome %v, driver asked %d times; want Failed(not registered), none %s", a.Outcome(), len(ep.spy.lookups)+len(ep.spy.submits), w.repro)
		}
	}},
	{"B-CUT/repeated-key-distinct-keys-in-order", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("k1", "k2", "k3", "k4")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl})
		keys := []string{"k1", "k1", "k2", "k1", "k3", "k4", "k2"}
		ln, a := ep.fetch(keys...)
		w.run()
		asked := ep.spy.submits
		if !fl.absent {
			asked = ep.spy.lookups
		}
		if got := slices.Concat(asked...); !slices.Equal(got, keys) {
			t.Fatalf("batches %q do not cover the view %q in order %s", asked, keys, w.repro)
		}
		for _, b := range append(ep.spy.submits, ep.spy.lookups...) {
			if len(b) > 4 || len(slices.Compact(slices.Sorted(slices.Values(b)))) != len(b) {
				t.Fatalf("batch %q repeats a key or exceeds MaxRowsPerOp (D-BATCH-KEYS) %s", b, w.repro)
			}
		}
		if servedString(a.Outcome()) != "1111111" {
			t.Fatalf("outcome %v, want all served %s", a.Outcome(), w.repro)
		}
		for i, k := range keys {
			if got := ep.l.Peek(ln, i); ln.State() == lender.Lent && !bytes.Equal(got, content(k)) {
				t.Fatalf("row %d (%s) holds %q %s", i, k, got, w.repro)
			}
		}
	}},
	{"B-CUT/5-rows-max-2", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("a", "b", "c", "d", "e")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl, maxRows: 2})
		ep.fetch("a", "b", "c", "d", "e")
		w.run()
		var sizes []int
		for _, s := range ep.spy.submits {
			sizes = append(sizes, len(s))
		}
		if !slices.Equal(sizes, []int{2, 2, 1}) {
			t.Fatalf("call sizes %v, want [2 2 1] %s", sizes, w.repro)
		}
	}},
	{"B-FETCH/known-plus-unknown", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("k1", "k2", "k3")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl})
		ln, a := ep.fetch("k1", "k2", "nope", "k3")
		w.run()
		if servedString(a.Outcome()) != "1101" || !slices.Equal(ln.Marks(), a.Outcome().Served) {
			t.Fatalf("outcome %v marks %v, want served 1101 and the same marks %s", a.Outcome(), ln.Marks(), w.repro)
		}
		if s := ep.b.Stats(); s.Served != 3 || s.Missed != 1 {
			t.Fatalf("stats %+v, want 3 served 1 missed %s", s, w.repro)
		}
	}},
	{"B-FETCH/fault-fails-the-whole-attempt", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("k1", "k2", "k3", "k4", "k5", "k6")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl, maxRows: 2, faults: memdriver.FaultMix{RowFault: 1}})
		ln, a := ep.fetch("k1", "k2", "k3", "k4", "k5", "k6")
		w.run()
		if a.State() != backend.Failed || a.Outcome().Served != nil || slices.Contains(ln.Marks(), true) {
			t.Fatalf("outcome %v marks %v, want Failed with nothing marked %s", a.Outcome(), ln.Marks(), w.repro)
		}
	}},
	{"B-FETCH/lookup-outage-is-never-a-miss", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("b", epOpts{fl: fl, faults: memdriver.FaultMix{LookupError: 1}})
		_, a := ep.fetch("k1")
		w.run()
		want := backend.Delivered // AbsentIsMiss: no look-up, an honest miss
		if !fl.absent {
			want = backend.Failed
		}
		if a.State() != want || ep.b.Stats().Missed != uint64(btoi(fl.absent)) {
			t.Fatalf("outcome %v missed %d, want %v %s", a.Outcome(), ep.b.Stats().Missed, want, w.repro)
		}
	}},
	{"B-PUBLISH/merge-not-replace", func(t *testing.T, w *world, fl flavour) {
		a1 := w.endpoint("a", epOpts{fl: fl})
		ln, _, err := a1.l.Publish(a1.b, []string{"k"}, [][]byte{[]byte("first-object-16b")})
		if err != nil {
			t.Fatal(err)
		}
		w.run()
		_, p2 := a1.publish("k", "j")
		w.run()
		if servedString(p2.Outcome()) != "11" || len(a1.spy.submits) != 2 || !slices.Equal(a1.spy.submits[1], []string{"j"}) {
			t.Fatalf("second publish %v, submits %q; want served 11 with only j sent %s", p2.Outcome(), a1.spy.submits, w.repro)
		}
		if got, _ := w.store.Get("k"); string(got) != "first-object-16b" || ln.State() != lender.Released {
			t.Fatalf("store holds %q (loan %v), want the first object %s", got, ln.State(), w.repro)
		}
	}},
	{"B-PUBLISH/declined", func(t *testing.T, w *world, fl flavour) {
		w2 := newWorld(t, 5, memdriver.StoreOptions{Evicting: true})
		ep := w2.endpoint("a", epOpts{fl: fl, faults: memdriver.FaultMix{RowMiss: 1}})
		_, a := ep.publish("k1", "k2")
		w2.run()
		if servedString(a.Outcome()) != "00" || ep.b.Stats().Declined != 2 {
			t.Fatalf("outcome %v stats %+v, want Delivered(00), 2 declined %s", a.Outcome(), ep.b.Stats(), w.repro)
		}
		w2.check()
	}},
	{"B-BOUND/calls-in-flight", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl, slots: 32, cfg: backend.Config{MaxCallsInFlight: 2, MaxQueuedCalls: 10}, faults: memdriver.FaultMix{Delay: 0.5}})
		keys := make([]string, 28)
		for i := range keys {
			keys[i] = string(rune('a' + i))
		}
		_, a := pub.publish(keys[:24]...)
		if s := pub.b.Stats(); s.InFlight != 2 || s.Queued != 4 {
			t.Fatalf("after admission %+v, want 2 in flight, 4 queued %s", s, w.repro)
		}
		if _, err := pub.b.Fetch(drivers.View{}); err != nil {
			t.Fatalf("empty view refused at full capacity: %v %s", err, w.repro)
		}
		if _, _, err := pub.l.Fetch(pub.b, keys); !errors.Is(err, backend.ErrOverCapacity) {
			t.Fatalf("7 more batches with 6 free: %v, want ErrOverCapacity %s", err, w.repro)
		}
		w.run()
		if pub.spy.maxLive > 2 || a.State() != backend.Delivered {
			t.Fatalf("driver saw %d calls without evidence (limit 2), outcome %v %s", pub.spy.maxLive, a.Outcome(), w.repro)
		}
	}},
	{"B-ACCESS/late-write-keeps-slots-lent", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("k1", "k2")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl, faults: memdriver.FaultMix{LateWrite: 1}})
		ln, a := ep.fetch("k1", "k2")
		for a.State() == backend.Pending && w.s.Step() {
		}
		if a.State() != backend.Delivered {
			t.Fatalf("outcome %v %s", a.Outcome(), w.repro)
		}
		if a.Access() == drivers.AccessPending && (ln.State() != lender.Lent || ep.b.Quiesce(a)) {
			t.Fatalf("access PENDING but loan %v / Quiesce true %s", ln.State(), w.repro)
		}
		w.run()
		if !ep.b.Quiesce(a) || ln.State() != lender.Released {
			t.Fatalf("after the late writes: access %v loan %v %s", a.Access(), ln.State(), w.repro)
		}
	}},
	{"B-CANCEL/drops-queue-and-releases-at-evidence", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("a", epOpts{fl: fl, maxRows: 1, cfg: backend.Config{MaxCallsInFlight: 2}})
		ln, a := ep.publish("a", "b", "c", "d", "e", "f")
		if !a.Cancel() {
			t.Fatalf("cancel did not commit %s", w.repro)
		}
		w.run()
		if a.State() != backend.Cancelled || len(ep.spy.submits) > 2 || ln.State() != lender.Released {
			t.Fatalf("outcome %v, %d calls sent, loan %v; want Cancelled, <= 2, released %s", a.Outcome(), len(ep.spy.submits), ln.State(), w.repro)
		}
	}},
	{"B-OUTCOME/cancel-racing-completion", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("a", epOpts{fl: fl})
		_, a := ep.publish("a", "b")
		for len(ep.spy.calls) == 0 || !ep.spy.calls[0].Access().Evidenced() {
			if !w.s.Step() {
				t.Fatalf("call never ended %s", w.repro)
			}
		}
		// The driver is done; the backend has not run the callback yet.
		if a.State() != backend.Pending || !a.Cancel() {
			t.Fatalf("state %v before the callback; cancel should commit %s", a.Outcome(), w.repro)
		}
		w.run()
		if a.State() != backend.Cancelled || a.Access() != drivers.AccessEnded {
			t.Fatalf("outcome %v access %v, want the first committed (Cancelled) %s", a.Outcome(), a.Access(), w.repro)
		}
	}},
	{"B-SHUT/clean", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("a", epOpts{fl: fl})
		ep.publish("a", "b", "c")
		if labels := ep.shutdown(); len(labels) != 0 || ep.l.Held() {
			t.Fatalf("labels %q held %v, want none and released %s", labels, ep.l.Held(), w.repro)
		}
	}},
	{"B-SHUT/never-ending-call-retained-and-labelled", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("a", epOpts{fl: fl, faults: memdriver.FaultMix{NeverEnds: 1}, cfg: backend.Config{DrainTimeout: time.Millisecond}})
		ln, a := ep.publish("a")
		w.s.RunUntil(time.Millisecond) // the row starts and hangs
		labels := ep.shutdown()
		region := "region:" + ln.Slots()[0].Region + ":retained"
		if !slices.Contains(labels, region) || !slices.ContainsFunc(labels, func(l string) bool { return strings.HasSuffix(l, ":unprovable") }) {
			t.Fatalf("labels %q, want %s and a call:…:unprovable %s", labels, region, w.repro)
		}
		if !ep.l.Held() || ln.State() != lender.Retained || a.Access() != drivers.AccessUnprovable || ep.l.Stats().RetainedBytes != 16 {
			t.Fatalf("held %v loan %v access %v stats %+v %s", ep.l.Held(), ln.State(), a.Access(), ep.l.Stats(), w.repro)
		}
		if again := ep.shutdown(); !slices.Equal(again, labels) {
			t.Fatalf("second shutdown %q, want the same %q (D-SHUT-2) %s", again, labels, w.repro)
		}
	}},
	{"S-RELEASE/unprovable-then-proven-stays-retained", func(t *testing.T, w *world, fl flavour) {
		ep := w.endpoint("a", epOpts{fl: fl, faults: memdriver.FaultMix{UnprovableLater: 1}})
		ln, a := ep.publish("a", "b")
		sawUnprovable := false
		for w.s.Step() {
			sawUnprovable = sawUnprovable || a.Access() == drivers.AccessUnprovable
		}
		if !sawUnprovable || a.Access() != drivers.AccessEnded || ln.State() != lender.Retained || ep.b.Stats().Unprovable != 0 {
			t.Fatalf("saw UNPROVABLE %v, access %v, loan %v, gauge %d; want UNPROVABLE then ENDED, retained, gauge 0 %s",
				sawUnprovable, a.Access(), ln.State(), ep.b.Stats().Unprovable, w.repro)
		}
		if labels := ep.shutdown(); len(labels) != 0 || ep.l.Held() {
			t.Fatalf("labels %q held %v: proof arrived, so everything is released %s", labels, ep.l.Held(), w.repro)
		}
	}},
	{"S-NO-LATE-ACCESS/transport-error-mid-transfer", func(t *testing.T, w *world, fl flavour) {
		pub := w.endpoint("a", epOpts{fl: fl})
		pub.publish("k1", "k2", "k3", "k4")
		w.run()
		ep := w.endpoint("b", epOpts{fl: fl, faults: memdriver.FaultMix{ErrorAfter: 1}})
		ln, a := ep.fetch("k1", "k2", "k3", "k4")
		w.run()
		if a.State() != backend.Failed || slices.Contains(ln.Marks(), true) {
			t.Fatalf("outcome %v marks %v, want Failed and nothing marked %s", a.Outcome(), ln.Marks(), w.repro)
		}
		// w.check: no transfer landed in a released slot
	}},
	{"S-HOLD/registration-failure", func(t *testing.T, w *world, fl flavour) {
		f := memdriver.FaultMix{RegisterRefused: 1}
		if fl.kind.together {
			f = memdriver.FaultMix{TogetherFail: 1, RollbackFail: 1}
		}
		ep := w.endpoint("a", epOpts{fl: fl, faults: f})
		if !errors.Is(ep.err, backend.ErrRegistration) {
			t.Fatalf("New: %v, want ErrRegistration %s", ep.err, w.repro)
		}
		labels := ep.shutdown()
		doubt := slices.ContainsFunc(labels, func(l string) bool { return strings.HasSuffix(l, ":in-doubt") })
		if fl.kind.together && doubt != ep.l.Held() {
			t.Fatalf("labels %q held %v: an in-doubt region must keep the hold %s", labels, ep.l.Held(), w.repro)
		}
		if !fl.kind.together && (len(labels) != 0 || ep.l.Held()) {
			t.Fatalf("refused at the first region: labels %q held %v, want none %s", labels, ep.l.Held(), w.repro)
		}
	}},
}

// TestRulesMem runs every memRule on both reference drivers with
// AbsentIsMiss true and false.
func TestRulesMem(t *testing.T) {
	for _, r := range memRules {
		t.Run(r.name, func(t *testing.T) {
			for _, fl := range flavours() {
				t.Run(fl.String(), func(t *testing.T) {
					w := newWorld(t, 1, memdriver.StoreOptions{})
					r.body(t, w, fl)
					w.check()
				})
			}
		})
	}
}
