package model

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

const (
	v1 uint64 = 0x1111_0000_0000_0001
	v2 uint64 = 0x2222_0000_0000_0002
	v9 uint64 = 0x9999_0000_0000_0009
)

// Hand-made operations on key "k" unless said otherwise; times are event
// sequence numbers.
func pub(v uint64, call, ret int64, st drivers.Status) Op {
	return Op{Kind: KindPublish, Key: "k", Value: v, Status: st, Call: call, Return: ret, CallID: drivers.CallID(call)}
}

func get(v uint64, call, ret int64) Op {
	op := Op{Kind: KindFetch, Key: "k", Status: drivers.Miss, Call: call, Return: ret, CallID: drivers.CallID(call)}
	if v != 0 {
		op.Status, op.Value = drivers.OK, v
	}
	return op
}

func lookup(found bool, at int64) Op {
	op := Op{Kind: KindLookup, Key: "k", Status: drivers.Miss, Call: at, Return: at}
	if found {
		op.Status = drivers.OK
	}
	return op
}

func on(key string, op Op) Op { op.Key = key; return op }

func effect(op Op, e Effect, seq int64) Op { op.Effect, op.EffectSeq = e, seq; return op }

func TestCheckProfiles(t *testing.T) {
	const ok, bad = porcupine.Ok, porcupine.Illegal
	cases := []struct {
		name              string
		h                 History
		durable, evicting porcupine.CheckResult
	}{
		// Histories that must fail.
		{"stale read after publish", History{pub(v1, 1, 2, drivers.OK), get(0, 3, 4)}, bad, ok},
		{"value changed after first writer", History{pub(v1, 1, 2, drivers.OK), pub(v2, 3, 4, drivers.OK), get(v2, 5, 6)}, bad, ok},
		{"value changed after first writer was read", History{pub(v1, 1, 2, drivers.OK), get(v1, 3, 4), pub(v2, 5, 6, drivers.OK), get(v2, 7, 8), get(v1, 9, 10)}, bad, bad},
		{"value reappearing after eviction", History{pub(v1, 1, 2, drivers.OK), get(0, 3, 4), get(v1, 5, 6)}, bad, bad},
		{"MISS after OK", History{pub(v1, 1, 2, drivers.OK), get(v1, 3, 4), get(0, 5, 6)}, bad, ok},
		{"read of a value never published", History{pub(v1, 1, 2, drivers.OK), get(v9, 3, 4)}, bad, bad},
		{"read before the publish was called", History{get(v1, 1, 2), pub(v1, 3, 4, drivers.OK)}, bad, bad},
		{"readers disagree after both publishes", History{pub(v1, 1, 10, drivers.OK), pub(v2, 2, 11, drivers.OK), get(v1, 12, 13), get(v2, 14, 15)}, bad, bad},
		{"lookup absent after publish", History{pub(v1, 1, 2, drivers.OK), lookup(false, 3)}, bad, ok},
		{"lookup found on a never-published key", History{lookup(true, 1)}, bad, bad},
		{"violation on one key among many", History{on("a", pub(v1, 1, 2, drivers.OK)), pub(v2, 3, 4, drivers.OK), on("a", get(v1, 5, 6)), get(0, 7, 8)}, bad, ok},
		// Histories that must pass.
		{"empty", nil, ok, ok},
		{"concurrent publishes, either may win", History{pub(v1, 1, 5, drivers.OK), pub(v2, 2, 6, drivers.OK), get(v2, 7, 8), get(v2, 9, 10)}, ok, ok},
		{"read concurrent with the publish", History{pub(v1, 1, 10, drivers.OK), get(0, 2, 3), get(v1, 4, 5)}, ok, ok},
		{"declined publish of an absent key", History{pub(v1, 1, 2, drivers.Miss), get(0, 3, 4)}, ok, ok},
		{"declined publish of a present key", History{pub(v1, 1, 2, drivers.OK), pub(v2, 3, 4, drivers.Miss), get(v1, 5, 6)}, ok, ok},
		{"first writer kept", History{pub(v1, 1, 2, drivers.OK), pub(v2, 3, 4, drivers.OK), get(v1, 5, 6)}, ok, ok},
		{"re-published after eviction", History{pub(v1, 1, 2, drivers.OK), get(0, 3, 4), pub(v2, 5, 6, drivers.OK), get(v2, 7, 8)}, bad, ok},
		{"faulted fetches constrain nothing", History{pub(v1, 1, 2, drivers.OK), {Kind: KindFetch, Key: "k", Status: drivers.Fault, Call: 3, Return: 4}, get(v1, 5, 6)}, ok, ok},
		{"lookups agree", History{lookup(false, 1), pub(v1, 2, 3, drivers.OK), lookup(true, 4)}, ok, ok},
		// Ambiguous publishes (FAULT / NOT_ATTEMPTED / no result).
		{"observed ambiguous write makes the read legal", History{pub(v1, 1, 2, drivers.Fault), get(v1, 3, 4)}, ok, ok},
		{"ambiguous write may land late", History{pub(v1, 1, 2, drivers.NotAttempted), get(0, 3, 4), get(v1, 5, 6)}, ok, ok},
		{"unobserved ambiguous write is dropped", History{pub(v1, 1, 2, drivers.Fault), get(0, 3, 4)}, ok, ok},
		{"unanswered publish observed", History{pub(v1, 1, Never, drivers.Pending), get(v1, 3, 4)}, ok, ok},
		{"ambiguous write may precede the first writer", History{pub(v1, 1, 2, drivers.Fault), pub(v2, 3, 4, drivers.OK), get(v1, 5, 6)}, ok, ok},
		{"ambiguous write cannot replace an observed value", History{pub(v2, 1, 2, drivers.OK), get(v2, 3, 4), pub(v1, 5, 6, drivers.Fault), get(v1, 7, 8)}, bad, ok},
		{"no-effect publish read anyway", History{effect(pub(v1, 1, 2, drivers.Fault), NoEffect, 0), get(v1, 3, 4)}, bad, bad},
		{"took-effect publish then a stale MISS", History{effect(pub(v1, 1, 2, drivers.NotAttempted), TookEffect, 5), get(0, 6, 7)}, bad, ok},
		{"took-effect publish read", History{effect(pub(v1, 1, 2, drivers.NotAttempted), TookEffect, 5), get(v1, 6, 7)}, ok, ok},
		{"took-effect publish without a point stays ambiguous", History{effect(pub(v1, 1, 2, drivers.Fault), TookEffect, 0), get(0, 3, 4), get(v1, 5, 6)}, ok, ok},
		{"took-effect publish cannot land after a MISS", History{effect(pub(v1, 1, 2, drivers.Fault), TookEffect, 3), get(0, 4, 5), get(v1, 6, 7)}, bad, bad},
	}
	for _, c := range cases {
		for _, p := range []struct {
			profile StoreModel
			want    porcupine.CheckResult
		}{{DurableStore, c.durable}, {EvictingStore, c.evicting}} {
			t.Run(c.name+"/"+p.profile.String(), func(t *testing.T) {
				res := Check(c.h, p.profile, 0)
				if res.Err != nil || res.Outcome != p.want {
					t.Fatalf("got %v, want %v\nhistory:\n%s(repro: go test ./model -run 'TestCheckProfiles/%s')",
						res, p.want, dump(c.h), t.Name()[len("TestCheckProfiles/"):])
				}
				vs := res.Violations(7)
				if (p.want == porcupine.Illegal) != (len(vs) > 0) {
					t.Fatalf("outcome %v but violations %v (repro: go test ./model -run 'TestCheckProfiles')", res.Outcome, vs)
				}
				for _, v := range vs {
					if v.Rule != rules.SLin || v.Class != rules.Safety || v.Seed != 7 || v.Key == "" {
						t.Fatalf("bad violation %v (repro: go test ./model -run 'TestCheckProfiles')", v)
					}
				}
			})
		}
	}
}

func dump(h History) string {
	var b strings.Builder
	for _, op := range h {
		b.WriteString("  " + op.String() + "\n")
	}
	return b.String()
}

func TestCheckNamesFailingKeyAndOp(t *testing.T) {
	h := History{
		on("a", pub(v1, 1, 2, drivers.OK)), on("a", get(v1, 3, 4)),
		on("b", pub(v1, 5, 6, drivers.OK)), on("b", get(v2, 7, 8)),
	}
	res := Check(h, DurableStore, 0)
	vs := res.Violations(1)
	const repro = "(repro: go test ./model -run TestCheckNamesFailingKeyAndOp)"
	if len(res.IllegalKeys) != 1 || res.IllegalKeys[0] != "b" || len(vs) != 1 {
		t.Fatalf("illegal keys %q, violations %v %s", res.IllegalKeys, vs, repro)
	}
	if vs[0].Key != "b" || vs[0].Call != 7 || !strings.Contains(vs[0].Detail, "places 1 of its 2") {
		t.Fatalf("violation %v should name key b, the read of call 7 and the count %s", vs[0], repro)
	}
	if !strings.HasPrefix(vs[0].String(), "S-LIN [safety] call 7") {
		t.Fatalf("String() = %q, want the rule first %s", vs[0].String(), repro)
	}
}

// TestCheckPrePass: what the pre-pass hands porcupine and what it drops,
// and that dropping never hides a violation.
func TestCheckPrePass(t *testing.T) {
	settled := History{pub(v1, 1, 2, drivers.OK), get(v1, 3, 4), get(v1, 5, 6), pub(v2, 7, 8, drivers.OK), lookup(true, 9), get(v1, 10, 11)}
	cases := []struct {
		name             string
		h                History
		profile          StoreModel
		want             porcupine.CheckResult
		checked, dropped int
	}{
		{"faults and no-effect publishes", History{
			pub(v1, 1, 2, drivers.Fault), // unobserved ambiguous: dropped
			pub(v2, 3, 4, drivers.Fault), // observed: kept
			get(v2, 5, 6),                // kept
			{Kind: KindFetch, Key: "k", Status: drivers.NotAttempted, Call: 7, Return: 8}, // dropped
			effect(pub(v9, 9, 10, drivers.NotAttempted), NoEffect, 0),                     // dropped
		}, DurableStore, porcupine.Ok, 2, 3},
		{"declined publishes", History{pub(v1, 1, 2, drivers.Miss), pub(v2, 3, 4, drivers.OK), pub(v1, 5, 6, drivers.Miss), get(v2, 7, 8)}, EvictingStore, porcupine.Ok, 2, 2},
		{"durable: agreeing ops after the first read", settled, DurableStore, porcupine.Ok, 2, 4},
		{"evicting keeps them", settled, EvictingStore, porcupine.Ok, 6, 0},
		{"durable: a disagreeing read after the first read stays", append(append(History(nil), settled...), get(v2, 12, 13)), DurableStore, porcupine.Illegal, 3, 4},
		{"durable: a MISS after the first read stays", append(append(History(nil), settled...), get(0, 12, 13)), DurableStore, porcupine.Illegal, 3, 4},
		{"durable: overlapping the first read is kept", History{pub(v1, 1, 2, drivers.OK), get(v1, 3, 6), get(v1, 6, 7)}, DurableStore, porcupine.Ok, 3, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Check(c.h, c.profile, 0)
			if res.Outcome != c.want || res.Err != nil || res.Checked != c.checked || res.Dropped != c.dropped || res.Keys != 1 {
				t.Fatalf("%v: want %v with %d checked, %d dropped, 1 key (repro: go test ./model -run 'TestCheckPrePass/%s')",
					res, c.want, c.checked, c.dropped, t.Name()[len("TestCheckPrePass/"):])
			}
		})
	}
}

func TestCheckBadInput(t *testing.T) {
	cases := []struct {
		name    string
		h       History
		profile StoreModel
		want    error
	}{
		{"unknown profile", nil, StoreModel(9), ErrBadStoreModel},
		{"return before call", History{get(v1, 5, 4)}, DurableStore, ErrBadHistory},
		{"publish without value", History{pub(0, 1, 2, drivers.OK)}, DurableStore, ErrBadHistory},
		{"fetch OK without value", History{{Kind: KindFetch, Key: "k", Status: drivers.OK, Call: 1, Return: 2}}, DurableStore, ErrBadHistory},
		{"no key", History{on("", get(0, 1, 2))}, DurableStore, ErrBadHistory},
		{"unknown kind", History{{Kind: 0, Key: "k", Call: 1, Return: 2}}, DurableStore, ErrBadHistory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Check(c.h, c.profile, 0)
			if !errors.Is(res.Err, c.want) || res.Outcome != porcupine.Unknown || res.Ok() {
				t.Fatalf("got %v, want error %v and outcome Unknown (repro: go test ./model -run 'TestCheckBadInput/%s')", res, c.want, t.Name())
			}
			if err := WriteVisualization(&bytes.Buffer{}, res, nil); err == nil {
				t.Fatalf("visualization of a failed check should be refused (repro: go test ./model -run 'TestCheckBadInput')")
			}
		})
	}
}

// TestCheckTimeoutIsUnknown: one key with 40 overlapping operations and a
// read no order explains is far beyond any search budget; a 20 ms timeout
// must give Unknown, never Ok.
func TestCheckTimeoutIsUnknown(t *testing.T) {
	var h History
	for i := range 40 {
		if i%2 == 0 {
			h = append(h, pub(Digest([]byte{byte(i)}), int64(i+1), 1000, drivers.OK))
		} else {
			h = append(h, get(Digest([]byte{byte(i - 1)}), int64(i+1), 1000))
		}
	}
	h = append(h, get(v9, 1001, 1002))
	res := Check(h, DurableStore, 20*time.Millisecond)
	if res.Outcome != porcupine.Unknown || res.Ok() || len(res.Violations(1)) != 0 {
		t.Fatalf("got %v, want Unknown with no S-LIN violation (repro: go test ./model -run TestCheckTimeoutIsUnknown)", res)
	}
}

func TestWriteVisualization(t *testing.T) {
	h := History{
		on("a", pub(v1, 1, 2, drivers.OK)), on("a", get(v1, 3, 4)),
		on("b", pub(v1, 5, 6, drivers.OK)), on("b", get(0, 7, 8)),
	}
	notes := []Note{
		{Seq: 6, Tag: TagCallback, Call: 5, Text: "callback of call 5"},
		{Seq: 7, Tag: TagFault, Key: "b", Text: "injected delay"},
		{Seq: 3, Tag: TagFault, Key: "a", Call: 3, Text: "note about key a only"},
	}
	const repro = "(repro: go test ./model -run TestWriteVisualization)"
	for _, c := range []struct {
		name    string
		profile StoreModel
		has     []string
		hasNot  []string
	}{
		{"illegal shows failing key", DurableStore, []string{"callback of call 5", "injected delay", "FETCH → MISS"}, []string{"note about key a only"}},
		{"legal shows everything", EvictingStore, []string{"callback of call 5", "note about key a only", "FETCH → OK"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Check(h, c.profile, 0)
			var buf bytes.Buffer
			if err := WriteVisualization(&buf, res, notes); err != nil {
				t.Fatalf("%v %s", err, repro)
			}
			out := buf.String()
			if !strings.Contains(out, "<html") {
				t.Fatalf("no HTML written %s", repro)
			}
			for _, s := range c.has {
				if !strings.Contains(out, s) {
					t.Errorf("visualization lacks %q %s", s, repro)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(out, s) {
					t.Errorf("visualization shows %q, which concerns no visualized key %s", s, repro)
				}
			}
		})
	}
}

func TestDigest(t *testing.T) {
	seen := map[uint64]int{}
	for n := range 64 {
		for _, fill := range []byte{0, 1, 0xDB} {
			b := bytes.Repeat([]byte{fill}, n)
			d := Digest(b)
			if d == 0 {
				t.Fatalf("Digest of %d bytes of %#x is 0, which means absent (repro: go test ./model -run TestDigest)", n, fill)
			}
			if prev, dup := seen[d]; dup && n > 0 {
				t.Fatalf("Digest collision between lengths %d and %d (repro: go test ./model -run TestDigest)", prev, n)
			}
			seen[d] = n
		}
	}
	if Digest([]byte("abcdefgh1")) == Digest([]byte("abcdefgh2")) {
		t.Fatalf("tail byte ignored (repro: go test ./model -run TestDigest)")
	}
}
