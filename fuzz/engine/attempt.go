package engine

import (
	"fmt"
	"strings"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/model/lender"
)

// Note tags of the run function's own notes (next to the recorder's, in
// Result.Notes): what became of each attempt and of its loan.
const (
	TagAttempt = "attempts"
	TagLender  = "lender"
)

// attemptSeen is what the timeline last noted of one attempt.
type attemptSeen struct {
	op     int
	ep     *Endpoint
	loan   *lender.Loan
	state  backend.State
	access drivers.Access
	loaned lender.LoanState
}

// attemptAdmitted starts following an admitted attempt (simulated runs
// only: the notes take their place in the recorders' shared sequence).
func (r *run) attemptAdmitted(op int, ep *Endpoint, a *backend.Attempt, loan *lender.Loan) {
	if r.s == nil || a == nil {
		return
	}
	if r.attempts == nil {
		r.attempts = map[*backend.Attempt]*attemptSeen{}
	}
	r.attempts[a] = &attemptSeen{op: op, ep: ep, loan: loan, state: backend.Pending, access: drivers.AccessPending, loaned: lender.Lent}
	r.note(ep.Name, TagAttempt, fmt.Sprintf("attempt %d (op %d, %v of %d rows) admitted in %d batch(es)", a.ID(), op, a.Dir(), len(a.View().Rows), a.Batches()))
}

// attemptChanged notes a committed outcome, an access change and the
// lender's release or retention of the attempt's slots, each once, after
// the lender saw the change (EndpointOptions.OnAttempt).
func (r *run) attemptChanged(endpoint string, a *backend.Attempt) {
	seen := r.attempts[a]
	if seen == nil {
		return
	}
	if st := a.State(); st != seen.state {
		seen.state = st
		r.note(endpoint, TagAttempt, fmt.Sprintf("attempt %d (op %d): %v", a.ID(), seen.op, a.Outcome()))
	}
	if acc := a.Access(); acc != seen.access {
		seen.access = acc
		r.note(endpoint, TagAttempt, fmt.Sprintf("attempt %d (op %d): access %v", a.ID(), seen.op, acc))
	}
	if seen.loan == nil {
		return
	}
	if st := seen.loan.State(); st != seen.loaned {
		seen.loaned = st
		var slots []string
		for _, s := range seen.loan.Slots() {
			slots = append(slots, fmt.Sprintf("%s/%d", s.Region, s.Slot))
		}
		r.note(endpoint, TagLender, fmt.Sprintf("loan %d of attempt %d %s: slots %s", seen.loan.ID(), a.ID(), st, strings.Join(slots, " ")))
	}
}

// note adds a run-function note at the current place in the sequence the
// recorders share, without taking a number of its own (so nothing the
// oracles order by moves). Like a recorder's, they stop at model.MaxNotes
// (bounds.go); the rest are counted, and attemptNotesOut says so.
func (r *run) note(endpoint, tag, text string) {
	if len(r.attemptNotes) >= model.MaxNotes {
		r.attemptNotesDropped++
		return
	}
	r.attemptNotes = append(r.attemptNotes, EndpointNote{Endpoint: endpoint, Note: model.Note{Seq: r.seq.Load(), At: r.rt.Now(), Tag: tag, Text: text}})
}

// attemptNotesOut is the run function's notes, the last one saying how many
// more were dropped at the bound.
func (r *run) attemptNotesOut() []EndpointNote {
	if r.attemptNotesDropped == 0 {
		return r.attemptNotes
	}
	last := r.attemptNotes[len(r.attemptNotes)-1]
	last.Text = fmt.Sprintf("… and %d more attempt notes, dropped (a run keeps %d)", r.attemptNotesDropped, model.MaxNotes)
	return append(r.attemptNotes, last)
}
