// Package fuzz holds storesim's go test -fuzz targets over op logs; with the
// rapid state machine tests of package fuzz/machine they are the search half
// of "find and replay". The rapid tests live beside the machine so that
// this package's test binary does not link rapid: go test -fuzz instruments
// every package linked in and walks all their coverage counters per exec.
// For the same reason of cost, each target calls engine.TuneFuzzWorker: a
// fuzz worker process takes NumCPU/-parallel Ps, not one per CPU.
//
// # Targets
//
//   - TestBackendStateMachine / FuzzBackendStateMachine (in fuzz/machine):
//     the state machine over the backend with the reference drivers
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
// rapid writes a failing case to testdata/rapid/<Test>/<Test>-*.fail (of
// fuzz/machine) and replays every such file first on each later run (it
// globs that directory), so a committed fail file is a regression test;
// replay one alone with
// go test ./fuzz/machine -run TestBackendStateMachine -rapid.failfile=FILE.
// go test -fuzz writes failing inputs to testdata/fuzz/<Target>/ of the
// target's package, which plain go test replays as subtests; the seed
// corpus lives there too (regenerate the generated part with
// go test ./fuzz -run TestSeedCorpus -writecorpus, and
// go test ./fuzz/machine -run TestSeedCorpus -writecorpus).
// fuzz/machine/testdata/fuzz/FuzzMachine/ seeds fuzz/targets.Machine, the
// byte-driven state machine (machine.Generate's inputs; regenerate with
// go test ./fuzz/machine -run TestBytesMachine -writecorpus); fuzz/fuzztool
// zips every corpus directory for fuzzing builders outside go test.
//
// rapid skips a fail file that no longer replays (its draws run out, or
// another rapid version wrote it) with a log line only, and go test skips a
// corpus input its target finds invalid; either would let a regression file
// go dead in silence. TestRapidFailFilesReplay (fuzz/machine) fails
// instead when a committed fail file does not replay to its end (or fails
// again), and TestCorpusFilesReplay (in both packages) when a committed
// corpus file no longer runs.
//
// # Regression
//
// The state machine found an attempt whose UNPROVABLE call was later proven
// ENDED, while another of its batches was still pending, going from access
// UNPROVABLE back to PENDING — against the D-ACCESS table. The backend now
// keeps such an attempt UNPROVABLE until every call has ENDED, and the
// committed fail file TestBackendStateMachine-unprovable-to-pending.fail (one
// FETCH of k0,k0,k0,k0 with MaxRowsPerOp 1 under unprovable-later) replays it.
// The fixed backend's run goes on past the draws rapid recorded for the
// buggy one, so 64 zero draws follow them (its header says so): without
// them rapid called the file "no longer valid" and skipped it.
//
// scripts/fuzz-smoke.sh (make fuzz-smoke) runs every fuzz target of both
// packages for a while.
// It passes -fuzzminimizetime 100x: go minimizes each input that adds
// coverage for up to 60 s by default without counting those runs, and these
// millisecond-long targets find new coverage often, so without the limit a
// short fuzz run mostly minimizes. Use the same flag when fuzzing by hand.
package fuzz
