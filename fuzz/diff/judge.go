package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// obj names one published object: the publish row (op, position) whose
// bytes it is. Every publish row of a log writes bytes of its own
// (content), so a fetched slot names the publish it came from.
type obj struct{ op, pos int }

func (o obj) String() string { return fmt.Sprintf("op %d row %d", o.op, o.pos) }

// knowledge is what one side's own answers prove about its store, key by
// key, under the store model of SPEC §5.1 played one call at a time: per
// key absent or one value; a PUBLISH OK of an absent key stores its
// value, of a present key keeps the first; a FAULT publish may take effect
// now or later (while the key is absent); a FETCH MISS requires the key
// absent unless the store evicts. It is pure: no clock, no goroutines.
type knowledge struct {
	evicting bool
	keys     map[string]*keyState
}

// keyState is one key on one side.
type keyState struct {
	// held: an answer proved the key present (a PUBLISH or FETCH OK, a
	// lookup "present"), and nothing since proved it gone; vals are the
	// objects it may hold then (one, unless a FAULT publish may have won).
	held bool
	vals []obj
	// maybe are publishes that may still take effect: answered FAULT, left
	// without an answer, or escaped with a Submit error (D-SUB-2).
	maybe []obj
	// publishes are every publish row of the key so far, with its answer,
	// so a wrong object is named by where it came from.
	publishes []published
}

type published struct {
	o      obj
	answer string
}

func newKnowledge(evicting bool) *knowledge {
	return &knowledge{evicting: evicting, keys: map[string]*keyState{}}
}

func (k *knowledge) key(key string) *keyState {
	s := k.keys[key]
	if s == nil {
		s = &keyState{}
		k.keys[key] = s
	}
	return s
}

func addObj(set []obj, os ...obj) []obj {
	for _, o := range os {
		if !slices.Contains(set, o) {
			set = append(set, o)
		}
	}
	return set
}

// verdict is the judgement of one answer: forbidden (with the rule it
// breaks and why), or allowed, with the freedom it used ("" when the
// answer is the one a fault-free store gives).
type verdict struct {
	rule    rules.ID // 0: allowed
	why     string
	freedom string
}

func forbid(rule rules.ID, format string, args ...any) verdict {
	return verdict{rule: rule, why: fmt.Sprintf(format, args...)}
}

// The freedoms (SPEC §5, "Differential runs"), counted per side.
const (
	freeFault        = "FAULT (a transport error is always allowed)"
	freeNotAttempted = "NOT_ATTEMPTED (the row never started)"
	freeDeclined     = "PUBLISH MISS (the store declined the object)"
	freeRefused      = "Submit refused (Rejected, Closed: nothing escaped)"
	freeEscaped      = "Submit error (the rows may have escaped: D-SUB-2)"
	freeNoAnswer     = "no final answer within the wait (treated as FAULT)"
	freeLookupErr    = "lookup error (ErrLookupFailed, never \"absent\")"
	freeEvicted      = "MISS or \"absent\" of a held key on an evicting store"
	freeUncertain    = "MISS or \"absent\" of a key only a FAULT publish may have stored"
	freeMaybeLanded  = "a FAULT publish's object found later (it took effect after all)"
	freeAbsentFault  = "FAULT of a key the store does not hold (AbsentIsMiss not declared)"
)

// publish records a PUBLISH row's answer. No PUBLISH answer is forbidden by
// itself (OK: stored or already there; MISS: declined; FAULT: maybe;
// NOT_ATTEMPTED: not stored); what it proves constrains later fetches.
func (k *knowledge) publish(key string, o obj, st drivers.Status, answered bool) verdict {
	s := k.key(key)
	s.publishes = append(s.publishes, published{o, statusWord(st, answered)})
	switch {
	case !answered:
		if !s.held || k.evicting {
			s.maybe = addObj(s.maybe, o)
		}
		return verdict{freedom: freeNoAnswer}
	case st == drivers.OK:
		if s.held && !k.evicting {
			return verdict{} // D-SUB-4: the first object stays
		}
		if !s.held {
			s.vals = nil
		}
		// The key was absent (or may have been evicted): this object, or a
		// FAULT publish that took effect first, is what it holds now.
		s.vals = addObj(addObj(s.vals, s.maybe...), o)
		s.held = true
		if !k.evicting {
			s.maybe = nil // present for good: no later put can take effect
		}
		return verdict{}
	case st == drivers.Miss:
		return verdict{freedom: freeDeclined}
	case st == drivers.NotAttempted:
		return verdict{freedom: freeNotAttempted}
	}
	if !s.held || k.evicting {
		s.maybe = addObj(s.maybe, o)
	}
	return verdict{freedom: freeFault}
}

// escaped records a PUBLISH row whose Submit failed with an error that does
// not prove nothing escaped (D-SUB-2): it may take effect.
func (k *knowledge) escaped(key string, o obj) {
	s := k.key(key)
	s.publishes = append(s.publishes, published{o, "Submit error"})
	if !s.held || k.evicting {
		s.maybe = addObj(s.maybe, o)
	}
}

// refused records a PUBLISH row whose Submit was refused (nothing escaped).
func (k *knowledge) refused(key string, o obj) {
	s := k.key(key)
	s.publishes = append(s.publishes, published{o, "Submit refused"})
}

// fetch judges a FETCH row's answer: got is the object its slot holds (ok
// false: bytes of no publish of the log, described by what).
func (k *knowledge) fetch(key string, st drivers.Status, answered bool, got obj, gotOK bool, what string, absentIsMiss bool) verdict {
	s := k.key(key)
	switch {
	case !answered:
		return verdict{freedom: freeNoAnswer}
	case st == drivers.Fault && !absentIsMiss && !s.held && len(s.maybe) == 0:
		return verdict{freedom: freeAbsentFault}
	case st == drivers.Fault:
		return verdict{freedom: freeFault}
	case st == drivers.NotAttempted:
		return verdict{freedom: freeNotAttempted}
	case st == drivers.Miss:
		return k.absent(s, "MISS")
	case st != drivers.OK:
		return verdict{freedom: freeFault}
	}
	var cands []obj
	if s.held {
		cands = slices.Clone(s.vals)
	}
	cands = addObj(cands, s.maybe...)
	if gotOK && slices.Contains(cands, got) {
		free := ""
		if !s.held || !slices.Contains(s.vals, got) {
			free = freeMaybeLanded
		}
		s.held, s.vals = true, []obj{got}
		if !k.evicting {
			s.maybe = nil
		}
		return verdict{freedom: free}
	}
	return k.wrongObject(key, s, cands, got, gotOK, what)
}

// wrongObject is an OK fetch whose bytes are none of the objects the key
// may hold: the rule depends on where the bytes came from.
func (k *knowledge) wrongObject(key string, s *keyState, cands []obj, got obj, gotOK bool, what string) verdict {
	want := "the key holds nothing: no publish of it stored (" + k.history(s) + ")"
	if len(cands) > 0 {
		want = "the key holds " + objList(cands) + " (" + k.history(s) + ")"
	}
	if !gotOK {
		return forbid(rules.DStatus, "an OK FETCH must put the whole object of the key in the slot, but the slot holds %s; %s", what, want)
	}
	for _, p := range s.publishes {
		if p.o != got {
			continue
		}
		switch p.answer {
		case "MISS", "NOT_ATTEMPTED", "Submit refused":
			return forbid(rules.DStatus, "the slot holds the object of %s, a PUBLISH of %s answered %s, which says it did not store it; %s", got, key, p.answer, want)
		}
		return forbid(rules.DSub4, "the slot holds the object of %s, a PUBLISH of %s answered %s, which is not what the key holds: a PUBLISH never rewrites a held key (first writer wins); %s", got, key, p.answer, want)
	}
	return forbid(rules.DStatus, "the slot holds the object of %s, a publish of another key; %s", got, want)
}

// lookup judges one key of a lookup's answer.
func (k *knowledge) lookup(key string, present bool) verdict {
	s := k.key(key)
	if !present {
		return k.absent(s, `"absent"`)
	}
	if s.held {
		return verdict{}
	}
	if len(s.maybe) > 0 {
		s.held, s.vals = true, slices.Clone(s.maybe)
		if !k.evicting {
			s.maybe = nil
		}
		return verdict{freedom: freeMaybeLanded}
	}
	return forbid(rules.DLook1, "the lookup answered present, but no publish of %s can have stored it (%s)", key, k.history(s))
}

// absent judges a MISS or an "absent" of s.
func (k *knowledge) absent(s *keyState, answer string) verdict {
	switch {
	case s.held && !k.evicting:
		rule := rules.DStatus // a FETCH MISS means the store does not hold the key
		if answer != "MISS" {
			rule = rules.DLook2 // an answer the store contradicts (SPEC §5.1)
		}
		return forbid(rule, "%s of a key the store holds (%s) on a store that does not evict", answer, k.historyOf(s))
	case s.held:
		s.held, s.vals = false, nil
		return verdict{freedom: freeEvicted}
	case len(s.maybe) > 0:
		return verdict{freedom: freeUncertain}
	}
	return verdict{}
}

func (k *knowledge) history(s *keyState) string { return k.historyOf(s) }

// historyOf says what the side answered for the key's publishes.
func (k *knowledge) historyOf(s *keyState) string {
	if len(s.publishes) == 0 {
		return "never published"
	}
	parts := make([]string, 0, len(s.publishes))
	for _, p := range s.publishes {
		parts = append(parts, fmt.Sprintf("%s %s", p.o, p.answer))
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more", len(parts)-6))
	}
	return "its publishes: " + strings.Join(parts, ", ")
}

func objList(os []obj) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = "the object of " + o.String()
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}

func statusWord(st drivers.Status, answered bool) string {
	if !answered {
		return "no answer"
	}
	return st.String()
}
