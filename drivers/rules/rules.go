// Package rules is the rule table of storesim's contract (docs/SPEC.md): one
// typed id per rule, with its class, a one-line title and the section of the
// contract that states it.
//
// Every check, report, exit code and certificate names its rule with an [ID],
// never with a string, so a misspelt rule does not compile and a report
// cannot cite a rule the contract does not have. A test holds this table
// against docs/SPEC.md in both directions.
package rules

import (
	"errors"
	"fmt"
)

// ID names one rule of the contract. The zero ID is no rule.
type ID uint8

// Class is what breaking a rule means for a verdict, and so its exit code.
type Class uint8

const (
	// Contract: a driver broke the driver contract (§2), seen at the driver
	// boundary.
	Contract Class = iota + 1
	// Safety: the backend (or the system as a whole) broke a backend or
	// safety rule: wrong outcome, touched memory, history that does not
	// linearize.
	Safety
	// Liveness: something that must happen did not (a hang, an attempt
	// left without progress or outcome).
	Liveness
	// Harness: the framework itself could not do its job; not a verdict on
	// the code under test.
	Harness
)

func (c Class) String() string {
	switch c {
	case Contract:
		return "contract"
	case Safety:
		return "safety"
	case Liveness:
		return "liveness"
	case Harness:
		return "harness"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Rule is one row of the table.
type Rule struct {
	ID      ID
	Name    string // as the contract spells it: "D-ACCESS-END"
	Class   Class
	Section string // the contract's section: "§2 submit"
	Title   string // one line
}

// The rules, in the contract's order.
const (
	none ID = iota

	// §1 data model
	DGeom       // D-GEOM
	DBatchKeys  // D-BATCH-KEYS
	DBatchValid // D-BATCH-VALID
	DStatus     // D-STATUS
	DMissHonest // D-MISS-HONEST
	DAccess     // D-ACCESS
	DAccessEnd  // D-ACCESS-END

	// §2 driver contract
	DCaps // capabilities
	DReg1
	DReg2
	DReg3
	DReg4
	DReg5
	DReg6
	DTog1
	DTog2
	DTog3
	DTog4
	DLook1
	DLook2
	DSub1
	DSub2
	DSub3
	DSub4
	DSub5
	DSub6
	DCB1
	DCB2
	DCB3
	DCB4
	DCB5
	DCan1
	DCan2
	DDrain1
	DDrain2
	DShut1
	DShut2
	DQuar

	// §3 backend
	BSubmit
	BCut
	BBound
	BFetch
	BPublish
	BOutcome
	BAccess
	BCancel
	BShut
	BDet

	// §4 lender and safety
	SRelease
	SNoLateAccess
	SHold
	SMarks

	// §5 checks
	SLin
	LiveHang // liveness
	BProgress
	BModel

	// the framework
	HarnessErr // harness

	count
)

var table = [count]Rule{
	DGeom:       {Name: "D-GEOM", Class: Contract, Section: "§1 data model", Title: "bad region geometry is refused at construction, nothing registered, the store not asked"},
	DBatchKeys:  {Name: "D-BATCH-KEYS", Class: Contract, Section: "§1 data model", Title: "the keys of one row batch are pairwise distinct"},
	DBatchValid: {Name: "D-BATCH-VALID", Class: Contract, Section: "§1 data model", Title: "an invalid batch is refused synchronously with InvalidSubmission, before any access"},
	DStatus:     {Name: "D-STATUS", Class: Contract, Section: "§1 row statuses", Title: "exactly one final status per row, in batch order, meaning what the status table says"},
	DMissHonest: {Name: "D-MISS-HONEST", Class: Contract, Section: "§1 row statuses", Title: "a miss is never reported as a fault, a fault never as a miss"},
	DAccess:     {Name: "D-ACCESS", Class: Contract, Section: "§1 access evidence", Title: "access moves PENDING → ENDED or PENDING → UNPROVABLE (→ ENDED once); nothing proves an end but evidence"},
	DAccessEnd:  {Name: "D-ACCESS-END", Class: Contract, Section: "§1 access evidence", Title: "after ENDED, no byte of the call's rows is read or written again"},

	DCaps:   {Name: "capabilities", Class: Contract, Section: "§2 capabilities", Title: "a driver handles every batch its declared capabilities admit (MaxRowsPerOp rows, the directions it claims)"},
	DReg1:   {Name: "D-REG-1", Class: Contract, Section: "§2 register", Title: "geometry errors and overlap with a live or in-progress registration are refused without asking the store"},
	DReg2:   {Name: "D-REG-2", Class: Contract, Section: "§2 register", Title: "a refused registration leaves nothing registered"},
	DReg3:   {Name: "D-REG-3", Class: Contract, Section: "§2 register", Title: "closing is by handle and idempotent; a stale handle never closes a newer registration"},
	DReg4:   {Name: "D-REG-4", Class: Contract, Section: "§2 register", Title: "a close that fails has not closed; a later close retries"},
	DReg5:   {Name: "D-REG-5", Class: Contract, Section: "§2 register", Title: "registration during or after shutdown is refused or undone"},
	DReg6:   {Name: "D-REG-6", Class: Contract, Section: "§2 register", Title: "closing a region a call with live access names is refused; the binding stays live"},
	DTog1:   {Name: "D-TOG-1", Class: Contract, Section: "§2 register together", Title: "together-registration is all or nothing"},
	DTog2:   {Name: "D-TOG-2", Class: Contract, Section: "§2 register together", Title: "a failed rollback is in doubt and names every region that may still be registered"},
	DTog3:   {Name: "D-TOG-3", Class: Contract, Section: "§2 register together", Title: "unregistering together releases what it can and names exactly what stays live"},
	DTog4:   {Name: "D-TOG-4", Class: Contract, Section: "§2 register together", Title: "a busy region is not unregistered"},
	DLook1:  {Name: "D-LOOK-1", Class: Contract, Section: "§2 lookup", Title: "one bool per key, in order, at most MaxRowsPerOp keys"},
	DLook2:  {Name: "D-LOOK-2", Class: Contract, Section: "§2 lookup", Title: "an outage or a wrong-length answer is an error, never \"absent\"; no caller memory touched"},
	DSub1:   {Name: "D-SUB-1", Class: Contract, Section: "§2 submit", Title: "the whole batch is validated before any access"},
	DSub2:   {Name: "D-SUB-2", Class: Contract, Section: "§2 submit", Title: "only InvalidSubmission, Closed and Rejected mean nothing escaped"},
	DSub3:   {Name: "D-SUB-3", Class: Contract, Section: "§2 submit", Title: "after a successful submit the driver reports results for every row and access evidence"},
	DSub4:   {Name: "D-SUB-4", Class: Contract, Section: "§2 submit", Title: "a publish of a present key keeps the first object (first writer wins)"},
	DSub5:   {Name: "D-SUB-5", Class: Contract, Section: "§2 submit", Title: "per-row visibility is atomic: a reader sees MISS or the whole object"},
	DSub6:   {Name: "D-SUB-6", Class: Contract, Section: "§2 submit", Title: "every byte access stays inside the row's slot and a live registration"},
	DCB1:    {Name: "D-CB-1", Class: Contract, Section: "§2 change callback", Title: "state before signal: results and access are updated before the callback runs"},
	DCB2:    {Name: "D-CB-2", Class: Contract, Section: "§2 change callback", Title: "the last change of every call is followed by a callback (no lost wake-up)"},
	DCB3:    {Name: "D-CB-3", Class: Contract, Section: "§2 change callback", Title: "facts are monotonic: results final, access per D-ACCESS"},
	DCB4:    {Name: "D-CB-4", Class: Contract, Section: "§2 change callback", Title: "never call back while holding a lock the receiver might need"},
	DCB5:    {Name: "D-CB-5", Class: Contract, Section: "§2 change callback", Title: "no callback after Shutdown returned"},
	DCan1:   {Name: "D-CAN-1", Class: Contract, Section: "§2 cancel", Title: "cancel is best effort, non-blocking and idempotent"},
	DCan2:   {Name: "D-CAN-2", Class: Contract, Section: "§2 cancel", Title: "unstarted rows become NOT_ATTEMPTED; a cancel never proves access ended"},
	DDrain1: {Name: "D-DRAIN-1", Class: Contract, Section: "§2 drain", Title: "drain stops admission and reports honestly: pending is never reported as ended"},
	DDrain2: {Name: "D-DRAIN-2", Class: Contract, Section: "§2 drain", Title: "drain is done only after the last callback of every ended call ran"},
	DShut1:  {Name: "D-SHUT-1", Class: Contract, Section: "§2 shutdown", Title: "shutdown releases what it can and labels every resource it could not release"},
	DShut2:  {Name: "D-SHUT-2", Class: Contract, Section: "§2 shutdown", Title: "shutdown is idempotent: a second call retries and returns what is still held"},
	DQuar:   {Name: "D-QUAR", Class: Contract, Section: "§2 quarantine", Title: "after an in-doubt (un)registration the driver refuses registrations and submissions"},

	BSubmit:  {Name: "B-SUBMIT", Class: Safety, Section: "§3 backend", Title: "admission is synchronous and whole, refused exactly when the contract says; after admission nothing panics or errors to the caller"},
	BCut:     {Name: "B-CUT", Class: Safety, Section: "§3 backend", Title: "masked-in rows are cut in view order at MaxRowsPerOp or a repeated key and dispatched in admission order; lookups and Submits carry exactly their batch's rows"},
	BBound:   {Name: "B-BOUND", Class: Safety, Section: "§3 backend", Title: "calls in flight and batches queued stay within their bounds; Stats' gauges equal what the calls say"},
	BFetch:   {Name: "B-FETCH", Class: Safety, Section: "§3 backend", Title: "fetch folding: OK served, MISS not, any fault or lookup error fails the whole attempt"},
	BPublish: {Name: "B-PUBLISH", Class: Safety, Section: "§3 backend", Title: "publish folding: present served without a put, declined re-checked, any fault fails"},
	BOutcome: {Name: "B-OUTCOME", Class: Safety, Section: "§3 backend", Title: "an outcome is committed once and the first wins; a failure stops the rest of the attempt"},
	BAccess:  {Name: "B-ACCESS", Class: Safety, Section: "§3 backend", Title: "an attempt is ENDED when every call ended, UNPROVABLE as soon as one is"},
	BCancel:  {Name: "B-CANCEL", Class: Safety, Section: "§3 backend", Title: "cancel drops queued batches, forwards one cancel per in-flight call, never blocks"},
	BShut:    {Name: "B-SHUT", Class: Safety, Section: "§3 backend", Title: "shutdown closes, drains to a deadline, releases what is free and labels exactly what is still held"},
	BDet:     {Name: "B-DET", Class: Safety, Section: "§3 backend", Title: "the backend starts no goroutines, sleeps nowhere, reads no wall clock"},

	SRelease:      {Name: "S-RELEASE", Class: Safety, Section: "§4 lender", Title: "a slot goes back only after outcome committed and access ENDED"},
	SNoLateAccess: {Name: "S-NO-LATE-ACCESS", Class: Safety, Section: "§4 lender", Title: "no touch of a released slot or an unregistered region"},
	SHold:         {Name: "S-HOLD", Class: Safety, Section: "§4 lender", Title: "the hold on the regions is released only after shutdown returned no labels"},
	SMarks:        {Name: "S-MARKS", Class: Safety, Section: "§4 lender", Title: "exactly the served rows of a fetch are marked arrived"},

	SLin:       {Name: "S-LIN", Class: Safety, Section: "§5 checks", Title: "the history of row results linearizes against the reference store model"},
	LiveHang:   {Name: "liveness", Class: Liveness, Section: "§5 checks", Title: "at quiescence every attempt has an outcome and evidence and every drain returned"},
	BProgress:  {Name: "B-PROGRESS", Class: Liveness, Section: "§5 checks", Title: "at every quiescent point before shutdown, the backend is not idle while it could act"},
	BModel:     {Name: "B-MODEL", Class: Safety, Section: "§5 checks", Title: "the backend's outcomes, served sets, cuts, cancels, access, releases and labels equal the reference model's"},
	HarnessErr: {Name: "harness", Class: Harness, Section: "§5 checks", Title: "the framework could not set up or finish the run (not a verdict on the code under test)"},
}

var byName = func() map[string]ID {
	m := make(map[string]ID, count)
	for id := ID(1); id < count; id++ {
		m[table[id].Name] = id
	}
	return m
}()

func init() {
	for id := ID(1); id < count; id++ {
		table[id].ID = id
	}
}

// String is the rule's name as the contract spells it; "" for the zero ID
// (no rule), as reports print "no rule".
func (id ID) String() string {
	switch {
	case id == none:
		return ""
	case id >= count:
		return fmt.Sprintf("rule(%d)", uint8(id))
	}
	return table[id].Name
}

// Rule is the table row of id.
func (id ID) Rule() Rule {
	if id >= count {
		return Rule{}
	}
	return table[id]
}

// Class is the class of id.
func (id ID) Class() Class { return id.Rule().Class }

// Valid reports whether id names a rule of the table.
func (id ID) Valid() bool { return id > none && id < count }

// MarshalText writes the rule's name (JSON reports carry names, not numbers).
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads a rule's name ("" is the zero ID).
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = none
		return nil
	}
	v, err := Parse(string(b))
	*id = v
	return err
}

// ErrUnknown is the error of Parse for a name not in the table.
var ErrUnknown = errors.New("unknown rule")

// Parse reads a rule name ("D-ACCESS-END") from a flag, scenario file or op
// log.
func Parse(name string) (ID, error) {
	if id, ok := byName[name]; ok {
		return id, nil
	}
	return none, fmt.Errorf("%w %q (see docs/SPEC.md)", ErrUnknown, name)
}

// All is the table in the contract's order.
func All() []Rule {
	out := make([]Rule, 0, count-1)
	for id := ID(1); id < count; id++ {
		out = append(out, table[id])
	}
	return out
}
