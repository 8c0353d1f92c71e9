// Package memcachedriver is a real store driver: it moves rows between
// registered memory and a memcached server through
// github.com/bradfitz/gomemcache, and keeps every rule of the driver
// contract (drivers.Driver, SPEC §2) with real goroutines and a real
// network.
//
// It is a driver package allowed goroutines and the wall clock: each
// submitted call runs on its own goroutine (its worker), the client runs one
// per multi-get, and a call with a deadline has a timer.
//
// # Store layout
//
// A row key K is stored as Config.Prefix+K, a plain memcached item whose
// value is the slot's bytes, when that is a legal memcached key (at most 250
// bytes, no space or control byte) and K does not begin with '#'; any other
// key is stored as Config.Prefix+"#"+hex(sha256(K)). The two forms never
// meet (only the second has '#' after the prefix), so two row keys never
// share an item. Memcached has no memory registration, so regions are
// registered in a local handle table; the store is never asked (D-REG-1..6
// are kept by that table). A region whose SlotBytes exceeds
// Config.MaxValueBytes (default: what a server with the default 1 MB item
// limit, -I 1m, stores under any legal key) is refused at Register: its
// objects could never be stored.
//
// # Commands
//
//   - Contains: one multi-get (`gets k1 k2 …`, one round trip) of the keys.
//     An item in the answer is present; a key without one is absent, which
//     is memcached's own answer, not a guess. An error, or an answer naming
//     a key that was not asked, is an error wrapping ErrLookupFailed, never
//     "absent" (D-LOOK-2). Memcached has no EXISTS, and the client speaks no
//     meta protocol (`mg` without a value), so a lookup transfers the
//     values it does not need.
//   - PUBLISH: one `add` per row, in row order on the call's worker. add
//     stores only if the key is absent: first writer wins (D-SUB-4).
//     STORED is OK. NOT_STORED means the key is present — the store holds
//     the first writer's object, which is kept — and is OK too ("already
//     there", the OK row of the PUBLISH table; MISS would be as legal, but
//     it costs the backend a second lookup). SERVER_ERROR out of memory or
//     object too large is a definite refusal: MISS ("declined: no room").
//     Any other error (transport, timeout, an unexpected line) is FAULT —
//     the server may or may not have stored it — and the driver stops: the
//     rows after it were never sent and are NOT_ATTEMPTED.
//   - FETCH: one multi-get of the batch's keys. A key without an item is
//     MISS and its slot is untouched (D-MISS-HONEST: memcached said so); an
//     item of the wrong length is FAULT and its slot is untouched; an item
//     of exactly SlotBytes is written into the slot and only then is the row
//     reported OK. An error of the multi-get fails every row (FAULT) and
//     touches no slot.
//
// # Eviction and TTL
//
// Memcached is a cache: under its memory limit (-m) it evicts the least
// recently used items at any time, and Config.TTL > 0 stores every object
// with that expiry (whole seconds). A FETCH of an evicted or expired key
// answers MISS, honestly (the store no longer holds it). This is the
// "evicting" profile of the reference model (S-LIN): certify this driver
// with Harness.Evicting (`storesim certify --driver memcached://… --evicting`).
//
// # Access evidence
//
// The call's worker does every touch of registered memory itself, through
// Region.Mem: the client and the server only ever see private copies. So
// once the worker has made its last touch, nothing can touch the call's
// rows again, and that is the evidence for ENDED. A PUBLISH ends access
// right after it copied its slots, before the first add; a FETCH when the
// worker is done with its slot writes. A transport error, a broken
// connection or a client timeout in the middle of a transfer reaches the
// worker as an error before any slot was written, so its rows are FAULT and
// its access still ends provably, when the worker returns.
//
// Access is UNPROVABLE whenever the driver stops waiting for a worker that
// may still touch the rows: when the call's deadline (Config.Timeout)
// passes while a FETCH worker is still inside the client or its slot
// writes, the rows without result become FAULT and access UNPROVABLE at
// once (the backend need not wait for a stalled server); when Shutdown
// gives up on a worker; and after a panic of the worker (in the client or a
// Memory), for good. A worker that returns later is new evidence: access
// moves UNPROVABLE → ENDED, once, with a callback (none after Shutdown:
// D-CB-5). A timeout never ends access by itself (D-ACCESS).
//
// # Cancellation
//
// The client takes no context: a command on the wire cannot be called back,
// so Cancel is best effort. It marks the call cancelled and the worker
// checks before each command and each slot write: rows whose command was
// never sent become NOT_ATTEMPTED, a FETCH row whose value arrived but
// whose slot was not yet written becomes NOT_ATTEMPTED (the slot is
// untouched and a get changes no object), and a command already sent runs
// to its reply, which decides the row. So a cancelled PUBLISH row is never
// ambiguous: it is OK, MISS or NOT_ATTEMPTED, FAULT only on a real error.
//
// # Broken variants
//
// Nothing here is broken on purpose. The broken memcached drivers that
// prove the conformance suite catches a real driver's violations are
// wrappers around this driver in package broken/memcachedbroken.
package memcachedriver
