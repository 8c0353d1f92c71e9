// Package refine is the reference model of the backend (docs/SPEC.md §5,
// B-MODEL and B-PROGRESS): from the facts seen at the driver boundary it
// derives what the backend rules demand, and judges the backend against it
// after every step of the simulation.
//
// # What it sees
//
// The model is a tap: [Model.Wrap] wraps the driver the backend is built on
// (above the contract monitor), so it sees exactly what the backend asked
// and exactly what the backend was told — every registration, lookup and
// Submit with its answer, every Results and Access read of every call, every
// Cancel, Drain, Unregister and Shutdown. The run engine adds what happens
// above the backend: an admission (Admitting/Admitted), a cancel
// (Cancelling/Cancelled), a shutdown (ShutdownAsked/ShutdownReturned), and
// the end of every scheduler step (AfterStep). It reads a backend attempt
// only through its outcome and access ([AttemptView]).
//
// Because the model knows what the backend has read, it knows what the
// backend knows: there is no lag to allow for. A correct backend's state
// after every step is a function of those facts, and the model computes it
// from the contract, not from the backend's code.
//
// # What it judges
//
//   - B-SUBMIT: admission refused exactly when the contract says (closed,
//     malformed, no room, too many UNPROVABLE, failed registration); an
//     empty view Delivered at once; a row outside a live registration
//     Failed before any store call; a refused view sends nothing.
//   - B-CUT: batches are dispatched in admission order, each one the model's
//     cut of the masked-in rows; a lookup asks exactly its batch's keys; a
//     Submit carries exactly the rows that still need the store.
//   - B-BOUND: calls in flight never exceed MaxCallsInFlight; Stats' in
//     flight, queued, unprovable and retained-bytes gauges equal the model's.
//   - B-FETCH, B-PUBLISH, B-OUTCOME: the outcome class and the exact served
//     set; a declined publish is looked up again; any fault, lookup error,
//     wrong-length answer or unprovable submit error fails the attempt; the
//     first commit wins and never changes.
//   - B-ACCESS: the attempt's access equals the model's after every step.
//   - B-CANCEL: a cancel commits Cancelled when nothing was committed, drops
//     the queued batches (none is ever sent afterwards) and forwards a
//     cancel to every call still running.
//   - B-SHUT: admission closed; the driver shut down only after its drain is
//     done or the deadline passed, and by that deadline; every free binding
//     closed first; the labels name exactly what is still held.
//   - B-PROGRESS: at every quiescent point (nothing runnable at the current
//     instant) the backend does not idle with queued batches and room in
//     flight, or with an attempt that should have been committed.
//
// A finding is reported once per attempt and rule. When the monitor found
// the driver breaking the contract, the engine drops this model's findings
// for that endpoint: a backend fed illegal answers owes no exact behaviour,
// only safety, which the other oracles keep judging.
package refine
