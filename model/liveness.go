package model

import (
	"fmt"
	"time"

	"github.com/storesim/storesim/drivers/rules"
)

// CheckLiveness is the call-level liveness check, run when the simulation
// has no runnable event left (quiescence, SPEC §5.5): after a successful
// submit the driver owns the call until every row has a final result and
// the call has access evidence (D-SUB-3). A call that has not, and that no
// shutdown label names (a driver may honestly give up: D-SHUT-1), is a hang
// — a lost final result or a lost wake-up (D-CB-2) looks exactly like this
// from the boundary. One Liveness violation per pending call, at time at.
func CheckLiveness(calls []CallInfo, at time.Duration, seed uint64) []rules.Violation {
	var out []rules.Violation
	for i := range calls {
		if v, hung := hang(&calls[i], calls[i].Labelled, at, seed); hung {
			out = append(out, v)
		}
	}
	rules.Sort(out)
	return out
}

// hang is CheckLiveness's verdict on one call, named by label labelled.
func hang(c *CallInfo, labelled string, at time.Duration, seed uint64) (rules.Violation, bool) {
	if labelled != "" {
		return rules.Violation{}, false
	}
	var pending []int
	for i, r := range c.Rows {
		if !r.Status.Final() {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 && c.Access.Evidenced() {
		return rules.Violation{}, false
	}
	v := rules.Violation{Rule: rules.DSub3, Class: rules.Liveness, Call: uint64(c.ID), Row: -1, At: at, Seed: seed}
	if len(pending) > 0 {
		v.Row, v.Key = pending[0], c.Rows[pending[0]].Key
	}
	v.Detail = fmt.Sprintf("hang: %v call %d (%d rows) still pending at quiescence: rows %v without a final result, access %v; no shutdown label names it",
		c.Dir, c.ID, len(c.Rows), pending, c.Access)
	return v, true
}

// LivenessViolations runs CheckLiveness over the recorded calls, reading
// them in place (no copy of every call's rows).
func (r *Recorder) LivenessViolations(at time.Duration) []rules.Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rules.Violation
	for _, c := range r.order {
		if v, hung := hang(&c.CallInfo, r.labels[c.ID], at, r.opts.Seed); hung {
			out = append(out, v)
		}
	}
	rules.Sort(out)
	return out
}
