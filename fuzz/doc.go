// Package fuzz holds storesim's property tests and go test -fuzz targets: the
// search half of "find and replay".
//
// # Targets
//
//   - TestBackendStateMachine / FuzzBackendStateMachine: the state machine
//     of package fuzz/machine over the backend with the reference drivers
//     (memory and together, AbsentIsMiss true and false, two endpoints on
//     one memdriver.Store), driven by rapid. rapid draws the operations, the
//     faults and the schedule (which queued event runs next), so it shrinks
//     all three together. Invariants are checked after every action (the ""
//     action); the full checks of SPEC §5 run at the end. The machine draws
//     through machine.T, so fuzz/targets drives the same machine from raw
//     bytes for fuzzing builders that cannot run rapid.
//   - FuzzOpLog: bytes → op log (Decode, a compact decoder of this package)
//     → engine.Run; any verdict but pass fails with the report and the log.
//   - FuzzParseOpLog: workload.Parse never panics, and what parses prints
//     and parses back to the same log.
//
// # Regressions
//
// rapid writes a failing case to testdata/rapid/<Test>/<Test>-*.fail and
// replays every such file first on each later run (it globs that directory),
// so a committed fail file is a regression test; replay one alone with
// go test ./fuzz -run TestBackendStateMachine -rapid.failfile=FILE.
// go test -fuzz writes failing inputs to testdata/fuzz/<Target>/, which plain
// go test replays as subtests; the seed corpus lives there too (regenerate
// the generated part with go test ./fuzz -run TestSeedCorpus -writecorpus).
// testdata/fuzz/FuzzMachine/ seeds fuzz/targets.Machine, the byte-driven
// state machine (machine.Generate's inputs; regenerate with
// go test ./fuzz -run TestBytesMachine -writecorpus); fuzz/fuzztool zips
// every corpus directory for fuzzing builders outside go test.
//
// # Regression
//
// The state machine found an attempt whose UNPROVABLE call was later proven
// ENDED, while another of its batches was still pending, going from access
// UNPROVABLE back to PENDING — against the D-ACCESS table. The backend now
// keeps such an attempt UNPROVABLE until every call has ENDED, and the
// committed fail file TestBackendStateMachine-unprovable-to-pending.fail (one
// FETCH of k0,k0,k0,k0 with MaxRowsPerOp 1 under unprovable-later) replays it.
//
// scripts/fuzz-smoke.sh (make fuzz-smoke) runs every fuzz target for a while.
// It passes -fuzzminimizetime 100x: go minimizes each input that adds
// coverage for up to 60 s by default without counting those runs, and these
// millisecond-long targets find new coverage often, so without the limit a
// short fuzz run mostly minimizes. Use the same flag when fuzzing by hand.
package fuzz
