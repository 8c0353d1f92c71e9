// Package blobdriver is a real store driver for object stores: it moves
// rows between registered memory and any bucket that gocloud.dev/blob
// opens by URL — a directory (file:///DIR, fileblob), S3 or an
// S3-compatible server (s3://BUCKET?endpoint=…, s3blob), and any other
// scheme whose gocloud package the program links (gs://, azblob://) — and
// keeps every rule of the driver contract (drivers.Driver, SPEC §2) with
// real goroutines and real I/O.
//
// gocloud.dev/blob is the one portable API over these stores: the same
// calls, the same error codes (gcerrors.NotFound, FailedPrecondition) and
// the same conditional write (WriterOptions.IfNotExist) for every bucket,
// so one driver, certified once per store, serves them all.
//
// It is a driver package allowed goroutines and the wall clock: each
// submitted call runs on its own worker goroutine, and a call with a
// deadline has a timer.
//
// # Store layout
//
// Row key K is stored as the object Config.Prefix + name(K), one object
// per key whose bytes are the slot's. name(K) keeps letters, digits, '-'
// and '_' and writes every other byte as %XX, '/' and '.' included, so
// every key is one flat object under the prefix: no key's directory can
// shadow another key's file in a file bucket, no name has a ".." or ends in
// fileblob's ".tmp" or ".attrs". A name longer than 200 bytes is "%h" and
// the hex SHA-256 of K (escaping never writes "%h"). A bucket has no
// memory registration, so regions are registered in a local handle table
// and the store is never asked (D-REG-1..6 are kept by that table).
//
// # First writer wins
//
// Every PUBLISH row is one write with WriterOptions.IfNotExist (D-SUB-4).
// A write the store refuses because the key is there (FailedPrecondition)
// is OK — the store holds the first writer's object, which is kept — as is
// a write that succeeded; any other error is FAULT (the store may or may
// not hold the object) and the driver stops, so the rows after it are
// NOT_ATTEMPTED.
//
// A store that ignores the condition would silently overwrite. So New
// probes the store once per bucket URL and process: it writes one object
// twice with IfNotExist under the prefix (a name no row key has) and
// deletes it. If the second write succeeds, New fails with
// ErrNoIfNotExist and no driver exists to publish: a store that cannot keep
// the first object is refused, never used with a racy check-then-write.
// (Declaring CanPublish=false skips the probe: a fetch-only driver.)
//
// What each store does with IfNotExist:
//
//   - S3 (s3blob) sends PutObject with If-None-Match: *, which the server
//     decides atomically (AWS S3 since 2024; MinIO; the gofakes3 server of
//     this package's tests, whose in-memory backend checks the condition
//     under its lock, v1.2.0). Objects are at most MaxObjectBytes (4 MiB by
//     default), below the transfer manager's 16 MiB multipart threshold,
//     so every object is one PutObject, visible whole or not at all
//     (D-SUB-5); a larger MaxObjectBytes makes multipart uploads, which
//     carry the condition on their completion and appear whole too.
//   - A directory (fileblob) writes each object to a temporary file and
//     renames it over the object's name, so a reader opens the old file or
//     the new one, whole (D-SUB-5). Its IfNotExist is a stat of the name
//     followed by the rename, under a mutex that each writer allocates for
//     itself: two concurrent writers can both see the name free and both
//     rename, the second replacing the first. The driver closes that race
//     within the process: the conditional writes of all its drivers into
//     one directory are serialised by one mutex per directory. Across
//     processes it stays open, so a file bucket must not be published into
//     by two processes at once (a certification or a run is one process).
//     The driver opens file:// URLs with no_tmp_dir=true and
//     metadata=skip unless they say otherwise: the temporary file then sits
//     beside the object, so the rename never crosses a file system, and no
//     sidecar file is written.
//
// # Commands
//
//   - Contains: the attributes of each key's object (Bucket.Attributes),
//     one after the other. An object is present; NotFound is absent, the
//     store's own answer; any other error is an error wrapping
//     ErrLookupFailed, never "absent" (D-LOOK-2). A file bucket whose
//     directory is gone answers NotFound for every path: that is an outage,
//     not an answer, so there NotFound counts as absent only while the
//     directory exists. (S3 answers a HEAD of a missing bucket 404, like a
//     missing key: a bucket deleted under the driver reads as empty.)
//   - FETCH: one reader per row, in row order. NotFound is MISS and the
//     slot is untouched (D-MISS-HONEST). An object whose size is not the
//     slot's, or whose read fails or runs short or long, is FAULT and its
//     slot is untouched; the driver then stops (the rows after it are
//     NOT_ATTEMPTED). The object is read whole into a private buffer, and
//     only then written into the slot and the row reported OK.
//   - PUBLISH: see "First writer wins". A write is WriteAll: the object's
//     bytes, then Close, whose error decides the row; a failed Close is
//     FAULT, never OK.
//
// Every store operation is bounded by Config.OpTimeout (10 s by default):
// one that runs out is FAULT or a lookup error.
//
// # Access evidence
//
// The call's worker does every touch of registered memory itself, through
// Region.Mem: the blob client only ever sees private copies. So once the
// worker has made its last touch, nothing can touch the call's rows again,
// and that is the evidence for ENDED. A PUBLISH's last touch is the copy of
// its slots, before the first write; a FETCH's its last slot write. Both
// report ENDED when the worker returns, with the rows' results: a PUBLISH
// could claim it right after the copy, but a caller that waits for access
// evidence and then reads the results (the conformance suite's settle
// does) would find them still pending while an object store answers, and
// take every publish for failed. When the driver stops waiting for a
// PUBLISH that has copied (deadline, Shutdown), ENDED is what it reports. A store error in the middle of a
// read reaches the worker before any slot was written, so its row is
// FAULT and access still ends provably when the worker returns.
//
// Access is UNPROVABLE whenever the driver stops waiting for a worker that
// may still touch the rows: when the call's deadline (Config.Timeout)
// passes while the worker runs (its rows without result become FAULT, or
// NOT_ATTEMPTED if never begun, and its store operation is cancelled),
// when Shutdown gives up on a worker, and after a panic of the worker, for
// good. A worker that returns later is new evidence: access moves
// UNPROVABLE → ENDED, once, with a callback (none after Shutdown: D-CB-5).
// A timeout never ends access by itself (D-ACCESS).
//
// # Cancellation
//
// Cancel marks the call cancelled and the worker checks before each row
// and each slot write: rows not begun become NOT_ATTEMPTED, a FETCH row
// whose object arrived but whose slot was not yet written becomes
// NOT_ATTEMPTED, and a store operation already begun runs to its answer,
// which decides the row: a cancelled PUBLISH row is OK, NOT_ATTEMPTED, or
// FAULT only on a real error.
//
// # Broken variants
//
// Nothing here is broken on purpose. The broken blob drivers that prove
// the conformance suite catches a real driver's violations are wrappers
// around this driver in package broken/blobbroken.
package blobdriver
