package engine

import (
	"fmt"
	"strings"
	"time"

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

// attemptEvent is one thing the timeline notes of an attempt, kept as data
// and formatted only when the run's notes are built (result.go): a passing
// seed of the swarm pays no string formatting for it.
type attemptEvent struct {
	endpoint string
	seq      int64
	at       time.Duration
	kind     uint8 // admitted, outcome, access, loan
	a        *backend.Attempt
	op       int
	rows     int
	batches  int
	outcome  backend.Outcome
	access   drivers.Access
	loan     *lender.Loan
	loaned   lender.LoanState
}

const (
	evAdmitted uint8 = iota
	evOutcome
	evAccess
	evLoan
)

// attemptAdmitted starts following an admitted attempt (simulated runs
// only: the notes take their place in the recorders' shared sequence).
func (r *run) attemptAdmitted(op int, ep *Endpoint, a *backend.Attempt, loan *lender.Loan) {
	if r.s == nil || a == nil || !r.notes() {
		return
	}
	if r.attempts == nil {
		r.attempts = map[*backend.Attempt]*attemptSeen{}
	}
	if len(r.seen) == cap(r.seen) { // attemptSeen records come in chunks, one allocation per chunk
		r.seen = make([]attemptSeen, 0, max(16, len(r.log.Ops)/2))
	}
	r.seen = append(r.seen, attemptSeen{op: op, ep: ep, loan: loan, state: backend.Pending, access: drivers.AccessPending, loaned: lender.Lent})
	r.attempts[a] = &r.seen[len(r.seen)-1]
	r.event(attemptEvent{endpoint: ep.Name, kind: evAdmitted, a: a, op: op, rows: a.Rows(), batches: a.Batches()})
}

// notes reports whether the run keeps what only its report reads: the
// attempt events (Config.Lean). A lean run follows no attempt at all.
func (r *run) notes() bool { return !r.cfg.Lean || r.cfg.AllNotes }

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
		r.event(attemptEvent{endpoint: endpoint, kind: evOutcome, a: a, op: seen.op, outcome: a.Outcome()})
	}
	if acc := a.Access(); acc != seen.access {
		seen.access = acc
		r.event(attemptEvent{endpoint: endpoint, kind: evAccess, a: a, op: seen.op, access: acc})
	}
	if seen.loan == nil {
		return
	}
	if st := seen.loan.State(); st != seen.loaned {
		seen.loaned = st
		r.event(attemptEvent{endpoint: endpoint, kind: evLoan, a: a, op: seen.op, loan: seen.loan, loaned: st})
	}
}

// event keeps one attempt event at the current place in the sequence the
// recorders share, without taking a number of its own (so nothing the
// oracles order by moves).
func (r *run) event(e attemptEvent) {
	if len(r.attemptEvents) >= model.MaxNotes {
		r.attemptNotesDropped++ // like a recorder's notes, they stop at model.MaxNotes (bounds.go)
		return
	}
	e.seq, e.at = r.seq.Load(), r.rt.Now()
	r.attemptEvents = append(r.attemptEvents, e)
}

// attemptNotes formats the attempt events as notes.
func (r *run) attemptNotes() []EndpointNote {
	out := make([]EndpointNote, 0, len(r.attemptEvents))
	for _, e := range r.attemptEvents {
		var tag, text string
		switch e.kind {
		case evAdmitted:
			tag, text = TagAttempt, fmt.Sprintf("attempt %d (op %d, %v of %d rows) admitted in %d batch(es)", e.a.ID(), e.op, e.a.Dir(), e.rows, e.batches)
		case evOutcome:
			tag, text = TagAttempt, fmt.Sprintf("attempt %d (op %d): %v", e.a.ID(), e.op, e.outcome)
		case evAccess:
			tag, text = TagAttempt, fmt.Sprintf("attempt %d (op %d): access %v", e.a.ID(), e.op, e.access)
		case evLoan:
			var slots []string
			for _, s := range e.loan.Slots() {
				slots = append(slots, fmt.Sprintf("%s/%d", s.Region, s.Slot))
			}
			tag, text = TagLender, fmt.Sprintf("loan %d of attempt %d %s: slots %s", e.loan.ID(), e.a.ID(), e.loaned, strings.Join(slots, " "))
		}
		out = append(out, EndpointNote{Endpoint: e.endpoint, Note: model.Note{Seq: e.seq, At: e.at, Tag: tag, Text: text}})
	}
	return out
}

// attemptNotesOut is the run function's notes, the last one saying how many
// more were dropped at the bound.
func (r *run) attemptNotesOut() []EndpointNote {
	notes := r.attemptNotes()
	if r.attemptNotesDropped == 0 || len(notes) == 0 {
		return notes
	}
	last := notes[len(notes)-1]
	last.Text = fmt.Sprintf("… and %d more attempt notes, dropped (a run keeps %d)", r.attemptNotesDropped, model.MaxNotes)
	return append(notes, last)
}
