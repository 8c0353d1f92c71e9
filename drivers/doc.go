// Package drivers is the store-driver contract of storesim: the types a backend
// and a store driver exchange, the rules each side must keep, and the
// validation functions that enforce the data model in one place.
//
// It plays the part database/sql/driver plays for database/sql: a driver
// implements [Driver] (and optionally [TogetherRegisterer]); a backend only
// ever talks to that interface. Every method documents its duties with the
// rule ids of docs/SPEC.md (D-…), which the contract monitor, the
// conformance suite and every failure report cite.
//
// # Data model
//
// A [Region] is labelled [Memory] cut into Slots slots of SlotBytes bytes
// (D-GEOM, checked by [CheckGeometry]). A [Row] moves one whole slot under one
// key. A [View] is what a caller submits: rows plus a mask. A [RowBatch] is
// the rows of one driver call; [RowBatch.Validate] enforces D-BATCH-KEYS and
// D-BATCH-VALID so drivers do not re-implement it.
//
// # Results and evidence
//
// Each call reports one [Status] per row (D-STATUS) and one [Access] state
// (D-ACCESS); [Access.CanBecome] is the only legal-transition table.
//
// # Memory
//
// Drivers touch registered memory only through [Memory] (D-SUB-6). Plain
// memory is [Bytes]; the simulator's arenas (package sim/memory) implement the
// same interface and record every touch for the memory oracle.
package drivers
