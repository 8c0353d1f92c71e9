// Package redisdriver is a real store driver: it moves rows between
// registered memory and a Redis (or Valkey) server through
// github.com/redis/rueidis, and keeps every rule of the driver contract
// (drivers.Driver, SPEC §2) with real goroutines and a real network.
//
// It is the one driver package allowed goroutines and the wall clock: each
// submitted call runs on its own goroutine, and the client runs its own.
//
// # Store layout
//
// Every key K of a row is stored as Config.Prefix+K, a plain Redis string
// whose value is the slot's bytes. Redis has no memory registration, so
// regions are registered in a local handle table; the store is never asked
// (D-REG-1..6 are kept by that table).
//
// # Commands
//
//   - Contains: one EXISTS per key, pipelined with DoMulti.
//   - PUBLISH: one `SET key value NX [PX ttl]` per row, pipelined. NX keeps
//     the first object (first writer wins, D-SUB-4). A nil NX reply means the
//     key is already there: the row is OK ("already there", D-STATUS). An
//     OOM error reply (maxmemory with a noeviction policy) is a definite
//     refusal: MISS ("declined: no room"). Any other error is FAULT.
//   - FETCH: one GET per row, pipelined. A nil reply is MISS and the slot is
//     untouched; a value of the wrong length is FAULT and the slot is
//     untouched; a value of exactly SlotBytes is written into the slot and
//     only then is the row reported OK.
//
// Multi-key commands (MGET, MSET) are never used: rueidis refuses multi-key
// commands whose keys fall in different cluster slots, even on a standalone
// server (PERF-NOTES), and per-row replies are what D-STATUS needs anyway.
//
// # TTL and eviction
//
// Config.TTL > 0 stores every object with PX ttl: after it expires a FETCH
// answers MISS, honestly (the store no longer holds the key). A server with
// a maxmemory eviction policy (allkeys-lru, volatile-ttl, …) may also evict
// keys at any time; a FETCH then MISSes. Both are the "evicting" profile of
// the reference model (S-LIN): a MISS is never a lie about a key the store
// dropped. Under maxmemory with the noeviction policy a PUBLISH is refused
// with an OOM error and reported MISS (declined). A TTL of 0 stores objects
// without expiry.
//
// # Access evidence
//
// The call's goroutine does every touch of registered memory itself, through
// Region.Mem: rueidis and the server only ever see private copies. So when
// that goroutine has made its last touch, nothing can touch the call's rows
// again and access is ENDED. A PUBLISH ends access right after it copied its
// slots; a FETCH when its last slot write is done. A wrong-length answer from
// the client fails every row (FAULT) but touches no slot, so access still
// ends provably. A panic of the goroutine before its access ended (in the
// client or a Memory), or a goroutine still running when Shutdown stopped
// waiting, make access UNPROVABLE (D-ACCESS): the caller must keep that
// memory retained. An abandoned goroutine that finishes later turns its
// call's access ENDED (new evidence) without a callback (D-CB-5).
//
// # Cancellation and ambiguity
//
// Each call has a context; Cancel cancels it. Rows whose store command was
// never handed to the client become NOT_ATTEMPTED. A PUBLISH whose SET was
// handed to the client and whose reply was lost to the cancellation is
// FAULT: rueidis reports such a write as cancelled even when the server
// applied it (PERF-NOTES), so it is neither OK nor NOT_ATTEMPTED. A FETCH row
// whose value arrived but whose slot was not yet written when the cancel was
// seen becomes NOT_ATTEMPTED (the slot is untouched and GET changes nothing
// in the store); a FETCH's slot is never written after its row's result was
// reported.
//
// One call's cancellation never fails another: rueidis sets its pipelined
// connections up lazily, with the context of the first command that needs
// one, and fails every command waiting for that connection when that
// context ends mid-dial. A pipeline that failed only that way (every reply
// context.Canceled while the call's own context is alive) never reached the
// server and is sent again (a bounded number of times).
//
// # Broken variants
//
// Nothing here is broken on purpose. The broken Redis drivers that prove
// the conformance suite catches a real driver's violations (SPEC §7
// analogues) are wrappers around this driver in package broken/redisbroken.
package redisdriver
