package diff

import (
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// TestKnowledge holds the comparison rules of SPEC §5 ("Differential
// runs") against short histories of one side: each step is an answer, and
// the last one is judged.
func TestKnowledge(t *testing.T) {
	const k = "k"
	o1, o2, o3 := obj{1, 0}, obj{2, 0}, obj{3, 0}
	type step func(kn *knowledge) verdict
	pub := func(o obj, st drivers.Status) step {
		return func(kn *knowledge) verdict { return kn.publish(k, o, st, true) }
	}
	fetchOK := func(o obj) step {
		return func(kn *knowledge) verdict { return kn.fetch(k, drivers.OK, true, o, true, o.String(), true) }
	}
	fetch := func(st drivers.Status) step {
		return func(kn *knowledge) verdict { return kn.fetch(k, st, true, obj{}, false, "", true) }
	}
	look := func(present bool) step {
		return func(kn *knowledge) verdict { return kn.lookup(k, present) }
	}
	for _, tc := range []struct {
		name     string
		evicting bool
		steps    []step
		want     rules.ID // 0: allowed
	}{
		{"first writer served", false, []step{pub(o1, drivers.OK), pub(o2, drivers.OK), fetchOK(o1)}, 0},
		{"last writer served", false, []step{pub(o1, drivers.OK), pub(o2, drivers.OK), fetchOK(o2)}, rules.DSub4},
		{"declined publish served", false, []step{pub(o1, drivers.OK), pub(o2, drivers.Miss), fetchOK(o2)}, rules.DStatus},
		{"not attempted publish served", false, []step{pub(o1, drivers.NotAttempted), fetchOK(o1)}, rules.DStatus},
		{"never published, OK", false, []step{fetchOK(o1)}, rules.DStatus},
		{"never published, MISS", false, []step{fetch(drivers.Miss)}, 0},
		{"never published, present", false, []step{look(true)}, rules.DLook1},
		{"held, MISS on a durable store", false, []step{pub(o1, drivers.OK), fetch(drivers.Miss)}, rules.DStatus},
		{"held, absent on a durable store", false, []step{pub(o1, drivers.OK), look(false)}, rules.DLook2},
		{"held, MISS on an evicting store", true, []step{pub(o1, drivers.OK), fetch(drivers.Miss)}, 0},
		{"evicted, then republished", true, []step{pub(o1, drivers.OK), fetch(drivers.Miss), pub(o2, drivers.OK), fetchOK(o2)}, 0},
		{"evicted, old object served", true, []step{pub(o1, drivers.OK), fetch(drivers.Miss), pub(o2, drivers.OK), fetchOK(o1)}, rules.DSub4},
		{"held, FAULT", false, []step{pub(o1, drivers.OK), fetch(drivers.Fault)}, 0},
		{"held, NOT_ATTEMPTED", false, []step{pub(o1, drivers.OK), fetch(drivers.NotAttempted)}, 0},
		{"FAULT publish may land", false, []step{pub(o1, drivers.Fault), fetchOK(o1)}, 0},
		{"FAULT publish may land late", false, []step{pub(o1, drivers.Fault), fetch(drivers.Miss), look(true), fetchOK(o1)}, 0},
		{"FAULT publish may not land", false, []step{pub(o1, drivers.Fault), fetch(drivers.Miss)}, 0},
		{"FAULT publish then OK: either", false, []step{pub(o1, drivers.Fault), pub(o2, drivers.OK), fetchOK(o1)}, 0},
		{"FAULT then OK, the OK one", false, []step{pub(o1, drivers.Fault), pub(o2, drivers.OK), fetchOK(o2)}, 0},
		{"FAULT then OK, then fixed", false, []step{pub(o1, drivers.Fault), pub(o2, drivers.OK), fetchOK(o2), fetchOK(o1)}, rules.DSub4},
		{"FAULT publish of a held key never lands", false, []step{pub(o1, drivers.OK), pub(o2, drivers.Fault), fetchOK(o2)}, rules.DSub4},
		{"no answer publish may land", false, []step{func(kn *knowledge) verdict { return kn.publish(k, o1, drivers.Pending, false) }, fetchOK(o1)}, 0},
		{"escaped publish may land", false, []step{func(kn *knowledge) verdict { kn.escaped(k, o1); return verdict{} }, look(true)}, 0},
		{"refused publish never lands", false, []step{func(kn *knowledge) verdict { kn.refused(k, o1); return verdict{} }, look(true)}, rules.DLook1},
		{"another key's object", false, []step{pub(o1, drivers.OK), func(kn *knowledge) verdict { kn.publish("other", o3, drivers.OK, true); return verdict{} }, fetchOK(o3)}, rules.DStatus},
		{"bytes of no publish", false, []step{pub(o1, drivers.OK), func(kn *knowledge) verdict { return kn.fetch(k, drivers.OK, true, obj{}, false, "poison", true) }}, rules.DStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kn := newKnowledge(tc.evicting)
			var v verdict
			for i, s := range tc.steps {
				v = s(kn)
				if i < len(tc.steps)-1 && v.rule != 0 {
					t.Fatalf("step %d: %s (%s), want it allowed (repro: go test ./fuzz/diff -run 'TestKnowledge')", i, v.rule, v.why)
				}
			}
			if v.rule != tc.want {
				t.Fatalf("last step: rule %v (%s), want %v (repro: go test ./fuzz/diff -run 'TestKnowledge')", v.rule, v.why, tc.want)
			}
		})
	}
}
