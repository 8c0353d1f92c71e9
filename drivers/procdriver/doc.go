// Package procdriver runs a store driver written in any language as a child
// process and presents it as a drivers.Driver: storesim's conformance suite
// certifies it and storesim run drives a backend on it, in real time, with
// the same monitor, oracles and model as any driver
// (`storesim certify --driver 'exec:python3 python/reference_driver.py'`).
//
// The process speaks the protocol of docs/PROTOCOL.md — versioned JSON
// lines on its stdin and stdout — and this package is the parent's side of
// it: hello (protocol version and capabilities), register and unregister
// (single and together), contains, submit and start, cancel, drain,
// shutdown, and the process's change notifications, which carry each
// call's row results and access evidence. The parent decides nothing the
// process should decide: it validates no batch and checks no registration,
// so what is certified is the process's own behaviour.
//
// # Memory
//
// Every registered region has a shared mapping, which the process maps
// read-write and reads and writes directly, whenever it likes: a late
// write lands in it at the moment the process makes it. Which file that is
// depends on the caller's memory:
//
// Shared: memory that already lives in a file-backed shared mapping — a
// SharedMemory, such as an arena placed in an arena.Shared, which is what
// the conformance suite registers with a driver process
// (drivertest.Harness.SharedMemory, set by package proctest) — is mapped
// by the process itself, at its offset in the file: the process moves the
// caller's bytes, and nothing is copied, neither the PUBLISH slots out nor
// the fetched objects back.
//
// Mirrored: any other drivers.Memory (Go heap memory, drivers.Bytes),
// which another process cannot map, gets a file of the parent's (in
// /dev/shm when it can), and the parent keeps the two in step at fixed
// points, the way a DMA engine's writes reach a host's memory: once the
// process accepted a PUBLISH it fills the rows' slots from the caller's
// memory, before it sends start; every slot an audit finds changed is
// written into the caller's memory.
//
// Either way the parent cannot see each touch, so it audits: at every
// change notification (before the state it carries is applied), at every
// submit (for its slots), at every unregister and when the process has
// exited, it checks every slot of every mapping against a checksum
// (hash/maphash). A slot whose bytes changed is recorded as a write by the
// call and row that last named the slot — a SharedMemory records it itself
// (SharedMemory.Audit) with the slot's state at that moment, and checks a
// slot before each of the caller's own writes too (a Release poisons the
// slot: a late write just before it is found then) — so what the process
// wrote reaches the caller's memory before the result that reports it
// (D-CB-1), and a write it had no right to make is the touch of the guilty
// call and row, which the arena (S-NO-LATE-ACCESS) and the memory oracle
// (D-ACCESS-END, D-STATUS, D-SUB-6) judge exactly as they judge an
// in-process driver's touch. Driver.Findings lists the same for a caller
// without oracles.
//
// In mirrored memory, while no live call may touch a slot its file holds
// Canary bytes (at registration, once the slot's call reported access
// ENDED, and over the whole region once it is unregistered); shared memory
// is the caller's and is never overwritten by the parent (a released slot
// holds the arena's poison). A late read of a PUBLISH slot returns those
// bytes, which the store then holds and a later FETCH shows (S-LIN). What
// an audit cannot see: a read as such; a write that leaves the bytes as
// they were; and a write the process made after a notification line but
// before the parent read the line, which counts as made before it (in the
// caller's timeline it was: the caller had not yet seen the state). A
// FETCH row reported OK whose bytes no audit saw change (the object equals
// what the slot held) is recorded as the row's write when the row becomes
// OK.
//
// # Incidents
//
// A process that exits, stops reading or answering (Config.ReplyTimeout),
// writes something that is not a protocol message, or floods a call with
// notifications (Config.MaxNotes) is an Incident: it is killed by its
// process id (and its process group: the process runs in a group of its
// own, and dies with its parent through PR_SET_PDEATHSIG), reaped, its
// calls end — every row without a final result FAULT, every access ENDED,
// the process's exit being the evidence that nothing will touch the
// mappings again —, the driver refuses new work (ErrClosed) and the
// incident is reported once (Config.OnIncident, Driver.Incident). The run
// goes on: package proctest turns a certification's incidents into gaps
// (not certified), storesim run into the seed's cleanup error.
//
// # Goroutines
//
// A driver runs five: the writer (the only writer of the process's stdin,
// every write bounded by ReplyTimeout), the reader (the only reader of its
// stdout), the stderr reader (the last 8 KiB are kept for reports), the
// waiter (os/exec's Wait) and the callback dispatcher, which runs every
// onChange with no lock held (D-CB-4), so a receiver may even call the
// driver back without deadlocking the reader. Shutdown waits for all of
// them: no callback runs after it returned (D-CB-5) and nothing is left.
package procdriver
