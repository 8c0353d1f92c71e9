package drivertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
)

func violation(rule rules.ID, at time.Duration, detail string) rules.Violation {
	return rules.Violation{Rule: rule, Class: rule.Class(), Row: -1, At: at, Seed: 1, Detail: detail}
}

// TestCausalOrder: a run's findings in causal order — time first; at one
// instant a case finding marked before the monitor's k-th comes before it,
// the monitor's in the order it found them, the end-of-run oracles after
// them (contract before safety before liveness); a harness finding last.
func TestCausalOrder(t *testing.T) {
	reg1 := violation(rules.DReg1, 5, "alias accepted")           // the monitor's 1st (index 0)
	shut := violation(rules.DShut1, 5, "label")                   // the monitor's 2nd
	reg6 := violation(rules.DReg6, 5, "refused close forgot")     // the case's, marked when the monitor had found 0
	late := violation(rules.SNoLateAccess, 5, "touch")            // an oracle's
	hang := violation(rules.LiveHang, 5, "hang")                  // an oracle's, liveness
	early := violation(rules.DStatus, 3, "earlier")               // an oracle's, earlier
	harness := violation(rules.HarnessErr, 1, "could not set up") // never a cause
	pos := map[string]int64{reg1.String(): 1, shut.String(): 3, reg6.String(): 0}
	vs := []rules.Violation{harness, hang, late, shut, reg1, reg6, early}
	causalSort(vs, func(v rules.Violation) causeKey {
		k := endKey(v)
		if p, ok := pos[v.String()]; ok {
			k.pos = p
		}
		return k
	})
	var got []string
	for _, v := range vs {
		got = append(got, v.Rule.String())
	}
	want := []string{"D-STATUS", "D-REG-6", "D-REG-1", "D-SHUT-1", "S-NO-LATE-ACCESS", "liveness", "harness"}
	if !slices.Equal(got, want) {
		t.Fatalf("causal order %v, want %v (repro: go test ./drivers/drivertest -run '^TestCausalOrder$')", got, want)
	}
}

// TestFirstCauseReported: the first cause of each run is credited, what
// followed it is "only a consequence", Failed lists the first cause first,
// and the table says so.
func TestFirstCauseReported(t *testing.T) {
	c := newCertifier(Registered("memory"), short)
	c.probe = probe{caps: memdriverCaps()}
	for i := range 3 {
		c.recordRun("D-REG-6", []rules.Violation{
			violation(rules.DReg6, 5, fmt.Sprintf("refused close forgot %d", i)),
			violation(rules.DReg1, 5, fmt.Sprintf("alias accepted %d", i)),
		}, fmt.Sprintf("case D-REG-6/x, seed %d", i), Rerun{Group: "D-REG-6", Case: "x", Seed: uint64(i + 1)})
	}
	rep := c.report()
	if f := rep.Failed(); !slices.Equal(f, []string{"D-REG-6", "D-REG-1"}) {
		t.Fatalf("Failed() = %v, want D-REG-6 then D-REG-1 (repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", f)
	}
	r6, _ := rep.Rule("D-REG-6")
	r1, _ := rep.Rule("D-REG-1")
	if r6.FirstCause != 3 || r6.ConsequenceOf != "" || r1.FirstCause != 0 || r1.ConsequenceOf != "D-REG-6" || r1.After["D-REG-6"] != 3 {
		t.Fatalf("D-REG-6 %+v, D-REG-1 %+v: want 3 first causes, and D-REG-1 a consequence of it (repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", r6, r1)
	}
	// Neither was any run's first cause but D-REG-6's: both rerun the first.
	for _, rr := range []RuleResult{r6, r1} {
		if want := (Rerun{Group: "D-REG-6", Case: "x", Seed: 1}); rr.First == nil || *rr.First != want || rr.Repro != c.repro(want) {
			t.Fatalf("%s: first %v, repro %q; want %v (repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", rr.Rule, rr.First, rr.Repro, want)
		}
	}
	table := rep.Table()
	for _, want := range []string{"failed only as a consequence of D-REG-6", "failed D-REG-6 D-REG-1", "D-REG-1 only as a consequence of D-REG-6"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s(repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", want, table)
		}
	}
	// A rule that others failed after comes first even when it was the
	// first cause of fewer runs.
	for i := range 5 {
		c.recordRun("D-REG-1", []rules.Violation{violation(rules.DReg1, 5, fmt.Sprintf("plain overlap %d", i))}, fmt.Sprintf("case D-REG-1/y, seed %d", i), Rerun{Group: "D-REG-1", Case: "y", Seed: uint64(i + 1)})
	}
	rep = c.report()
	if f := rep.Failed(); !slices.Equal(f, []string{"D-REG-6", "D-REG-1"}) {
		t.Fatalf("Failed() = %v, want D-REG-6 (which D-REG-1 followed) first (repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", f)
	}
	// D-REG-1 is now the first cause of runs: its repro reruns the first of
	// them, whose finding its row shows first.
	r1, _ = rep.Rule("D-REG-1")
	if want := (Rerun{Group: "D-REG-1", Case: "y", Seed: 1}); r1.First == nil || *r1.First != want || !strings.Contains(r1.Violations[0], "plain overlap 0") {
		t.Fatalf("D-REG-1: first %v, shown first %q; want %v and its finding (repro: go test ./drivers/drivertest -run '^TestFirstCauseReported$')", r1.First, r1.Violations[0], want)
	}
}

// TestShownFindings: every finding is counted; at most 20 are shown, the
// runs' first causes first, a swarm finding always among them (here one
// that followed another rule's first cause, after 30 such from the cases),
// then "… and K more".
func TestShownFindings(t *testing.T) {
	c := newCertifier(Registered("memory"), short)
	c.probe = probe{caps: memdriverCaps()}
	for i := range 30 { // D-STATUS only after another rule's first cause
		c.recordRun("D-CB-2", []rules.Violation{
			violation(rules.DCB2, 1, fmt.Sprintf("lost %d", i)),
			violation(rules.DStatus, 2, fmt.Sprintf("row %d", i)),
		}, fmt.Sprintf("case D-CB-2/x, seed %d", i), Rerun{Group: "D-CB-2", Case: "x", Seed: uint64(i + 1)})
	}
	c.recordRun("D-STATUS", []rules.Violation{violation(rules.DStatus, 9, "its own")}, "case D-STATUS/y, seed 99", Rerun{Group: "D-STATUS", Case: "y", Seed: 99})
	c.recordRun("other", []rules.Violation{violation(rules.DCB2, 8, "lost in the swarm"), violation(rules.SLin, 9, "the swarm saw it")}, "swarm default seed 7", Rerun{Group: SwarmGroup, Case: "default", Seed: 7})
	rep := c.report()
	rr, _ := rep.Rule("D-STATUS")
	if rr.Found != 32 || rr.FirstCause != 1 || len(rr.Violations) != maxShown+1 {
		t.Fatalf("found %d (want 32), first causes %d (want 1), %d lines (want %d) (repro: go test ./drivers/drivertest -run '^TestShownFindings$')", rr.Found, rr.FirstCause, len(rr.Violations), maxShown+1)
	}
	if !strings.Contains(rr.Violations[0], "its own") {
		t.Fatalf("first line %q, want the run's first cause (repro: go test ./drivers/drivertest -run '^TestShownFindings$')", rr.Violations[0])
	}
	if !slices.ContainsFunc(rr.Violations, func(l string) bool { return strings.Contains(l, "the swarm saw it") }) {
		t.Fatalf("no swarm finding shown among %v (repro: go test ./drivers/drivertest -run '^TestShownFindings$')", rr.Violations)
	}
	if last := rr.Violations[maxShown]; !strings.HasPrefix(last, "… and 12 more (32 found in all: first cause of 1 run(s), 1 from the swarm)") {
		t.Fatalf("last line %q (repro: go test ./drivers/drivertest -run '^TestShownFindings$')", last)
	}
	if want := (Rerun{Group: "D-STATUS", Case: "y", Seed: 99}); rr.First == nil || *rr.First != want {
		t.Fatalf("first %v, want %v: the run its first line came from (repro: go test ./drivers/drivertest -run '^TestShownFindings$')", rr.First, want)
	}
}

// TestFirstRunOfShown: a rule's First is the run whose finding its row
// shows first — with no run's first cause among its findings and more
// than maxShown from the cases, the swarm's (shown first), else the first
// case run's.
func TestFirstRunOfShown(t *testing.T) {
	for _, swarm := range []bool{false, true} {
		c := newCertifier(Registered("memory"), short)
		c.probe = probe{caps: memdriverCaps()}
		for i := range maxShown + 5 {
			c.recordRun("D-CB-2", []rules.Violation{
				violation(rules.DCB2, 1, fmt.Sprintf("lost %d", i)),
				violation(rules.DStatus, 2, fmt.Sprintf("row %d", i)),
			}, fmt.Sprintf("case D-CB-2/x, seed %d", i+1), Rerun{Group: "D-CB-2", Case: "x", Seed: uint64(i + 1)})
		}
		want, line := Rerun{Group: "D-CB-2", Case: "x", Seed: 1}, "row 0 "
		if swarm {
			line = "the swarm saw it"
			want = Rerun{Group: SwarmGroup, Case: "evicting", Seed: 7}
			c.recordRun("other", []rules.Violation{violation(rules.DCB2, 8, "lost in the swarm"), violation(rules.SLin, 9, "the swarm saw it")}, "swarm evicting seed 7", want)
		}
		rep := c.report()
		rr, _ := rep.Rule("D-STATUS")
		if rr.First == nil || *rr.First != want || !strings.Contains(rr.Violations[0], line) {
			t.Fatalf("swarm %v: first %v, want %v; shown first %q (repro: go test ./drivers/drivertest -run '^TestFirstRunOfShown$')", swarm, rr.First, want, rr.Violations[0])
		}
	}
}

// TestLookupLinFiled: an S-LIN failure whose first unplaceable operation is
// a lookup is filed under D-LOOK-2; one of a FETCH stays D-STATUS.
func TestLookupLinFiled(t *testing.T) {
	c := newCertifier(Registered("memory"), short)
	lookup := model.Op{Kind: model.KindLookup, Key: "k", Status: drivers.Miss, Call: 3, Return: 3}
	fetch := model.Op{Kind: model.KindFetch, Key: "k", Status: drivers.OK, Value: 1 << 40, Call: 3, Return: 4}
	for _, tc := range []struct {
		op   model.Op
		want string
	}{{lookup, "D-LOOK-2"}, {fetch, "D-STATUS"}} {
		v := violation(rules.SLin, 1, "the key's history is not linearizable against the durable store model: the longest linearization places 1 of its 2 operations; the first one it cannot place: "+tc.op.String())
		if got := c.target("other", v); got != tc.want {
			t.Fatalf("%v filed under %s, want %s (repro: go test ./drivers/drivertest -run '^TestLookupLinFiled$')", tc.op, got, tc.want)
		}
	}
}

func memdriverCaps() drivers.Capabilities {
	return drivers.Capabilities{MaxRowsPerOp: 4, AbsentIsMiss: true, CanFetch: true, CanPublish: true, CanCancel: true}
}
