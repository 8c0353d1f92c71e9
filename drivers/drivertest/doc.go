// Package drivertest is storesim's conformance suite: it certifies that a
// store driver keeps the driver contract of SPEC §2, in the manner of
// testing/fstest.TestFS and go-cloud's drivertest.RunConformanceTests.
//
// A driver author hands the suite a [Harness] — a factory for fresh driver
// instances, and optional hooks such as MakeAbsent for a real store — and
// gets back a [Report]: per rule group a verdict (pass, fail with the
// violations, skip with the reason), the directed cases and randomized seeds
// that ran, and how often each dangerous race pair was exercised. [Certify]
// is the core and needs no *testing.T (the CLI's `storesim certify` uses
// it); [Run] is the go test entry point, one subtest per rule group and
// in it one per directed case, each doing its own work.
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{Name: "mine", New: func(env drivertest.Env) (drivers.Driver, error) {
//			return mine.New(env.RT, env.Store, env.Name), nil
//		}})
//	}
//
// # Exact reruns
//
// Every run of the suite is named by a [Rerun]: its rule group and case
// (or the swarm and its store profile), its own seed, and whether it is
// the case's directed run. A violation says which run found it ("case
// D-STATUS/fetch-absent-untouched, random seed N"); a failing group's
// repro reruns the run of the first violation its row shows (the first
// run whose first cause the group was, when there is one: see "First
// cause first"), and on the simulator that run shows the same violation
// first again: Options.Only in [Certify],
// `storesim certify --driver NAME --rule GROUP --case CASE --seed N
// [--directed]` in the CLI (a swarm run: `storesim replay --seed N …`),
// and in [Run] the go test command of the case's subtest with
// -args -drivertest.seed=N [-drivertest.directed]. Options.Repro names
// another command (a driver author's own CLI, cmd/storesim/cli).
//
// # Rule groups
//
// There is one group per rule: D-GEOM, D-BATCH-KEYS, D-BATCH-VALID,
// D-STATUS, D-MISS-HONEST, D-ACCESS, D-ACCESS-END, D-REG-1 … D-REG-6,
// D-TOG-1 … D-TOG-4 and D-QUAR (when together-registration is offered),
// D-LOOK-1/2, D-SUB-1 … D-SUB-6, D-CB-1 … D-CB-5, D-CAN-1/2, D-DRAIN-1/2,
// D-SHUT-1/2 and capabilities ([Rules]). Each has directed cases that
// provoke its rule, each case run once with fixed choices and then with
// Options.Seeds seeds that draw the choices, the callback policy of the
// scheduler and the interleavings. Every case run builds a fresh driver on
// a fresh store, wrapped in the contract monitor (drivers/monitor) with the
// history recorder (model) as observer — engine.NewEndpoint without a
// backend —, gives it arena memory (sim/arena), shuts it down and then
// judges it with engine.Check: the monitor's end-of-run checks, the memory
// oracle, call liveness and S-LIN (porcupine), with the case's own checks. Cases use only the drivers.Driver interface (and
// drivers.TogetherRegisterer), so any driver runs them.
//
// A violation counts against the group its rule names, wherever it was
// found (a late write seen in a status case is D-ACCESS-END); oracle rules
// that name no driver rule are attributed by a fixed table (a touch of
// released memory is D-ACCESS-END, a hang D-SUB-3, an S-LIN failure a row
// result the store contradicts, D-STATUS) or to the group whose case found
// it. An S-LIN failure whose first operation the store model cannot place
// is a lookup is filed under D-LOOK-2: which lookup answer lied cannot be
// told from the history (in the evicting model a stale "absent" surfaces
// as a later honest "present"), and where the suite knows the store the
// monitor tells "present for a key known absent" apart (D-LOOK-1).
//
// On top, a simulated driver runs a swarm of backend-driven workloads
// through the run function of fuzz/engine (Options.Swarm per store
// profile), whose failures are attributed the same way.
//
// # Every answer is judged
//
// Not only the positive answers: a drain that says "not done" at rest,
// with every call evidenced (UNPROVABLE is evidence), is D-DRAIN-1 (the
// monitor's AtRest, asked by the drain cases once nothing is runnable, and
// a directed case with calls that stay UNPROVABLE); a shutdown label names
// a region the driver still holds, and an unlabelled region was released
// (the monitor, with the driver's Live/Bound probes); a PUBLISH row
// reported NOT_ATTEMPTED never wrote the store (the memory oracle holds the
// simulated store's log of puts against the rows' answers, and a directed
// case looks the keys up); after a refused close the memory is still
// registered, so registering it again under another label is refused (a
// probe after a control probe, D-REG-4 and D-REG-6); lookups of exactly
// MaxRowsPerOp keys mix absent keys in (D-LOOK-1, D-LOOK-2).
//
// # First cause first
//
// Within one run (case run or swarm seed) the findings are put in causal
// order: by virtual time; at one instant in the order the monitor found
// them (monitor.Monitor.Detected), a case's own finding placed at the mark
// it took (the moment of the answer it judges); the end-of-run oracles
// after those, contract before safety before liveness; a harness finding
// never first. The run's first finding is its first cause. Per rule the
// report counts the runs it was first cause of (RuleResult.FirstCause) and
// the runs it failed after another rule's first cause (RuleResult.After); a
// rule never first failed only as a consequence (RuleResult.ConsequenceOf,
// and the table says so). [Report.Failed] lists the first causes first — a
// rule that others followed before them — so its first entry is the rule a
// broken driver is named for. Every finding is counted (Found); a row shows
// at most 20, its runs' first causes first and a swarm finding always
// among them, then "… and K more" with what the rest are. RuleResult.First
// is the run the first line shown came from, so a rule's repro reruns a
// run it was the first cause of whenever there is one.
//
// # Capabilities and skips
//
// What the driver declares decides what runs: no together-registration, no
// D-TOG/D-QUAR; CanPublish=false, no D-SUB-4/5; AbsentIsMiss=false, no
// "absent is MISS" case. Cases that need a fault (a refused registration, a
// failed close, an in-doubt rollback) ask for it through Env.Faults, which
// the simulator's drivers inject; when it never happens (a real driver
// ignores Env.Faults) the case is skipped with that reason. Skipped is not
// failed, and not passed.
//
// "No fault injected" is evidence only for a driver that reports its
// faults (Faults(), as memdriver does). Any other driver may fault on its
// own, as a transport does, so a FAULT, a refused publish of a held key or a
// failed lookup is no violation by itself; D-MISS-HONEST's absent-is-MISS
// promise is then judged by fetching the key again beside a present key
// (askAbsentAgain, SPEC §2 "Where §1 and §2 are checked"). The flaky
// driver of conformdrivers_test.go is that case, and must certify.
//
// # Race pairs
//
// A [PairCounter] — a monitor.Observer — counts how often each pair of
// SPEC §6 was exercised: cancel vs completion, shutdown vs in-flight call,
// unregister vs in-flight call, drain vs late callback, duplicate
// registration, stale-handle close, repeated key in flight. A pair never hit
// is a gap, and a report with a gap is not certified — unless the driver
// cannot give the pair a chance: it declares CanCancel=false (no cancel
// race), or, on the simulator, every call the cases submitted already had
// access ENDED when Submit returned (nothing was ever in flight to race a
// cancel, shutdown, unregister or repeated key; and with final results and
// no callback after Submit returned, no drain has a late callback). Such a
// pair is reported "not applicable" with the reason; one call seen in
// flight makes every pair count again. In real time timing may keep a pair
// from happening on any one run (the call ended first), so a full
// certification reruns the cases built for a pair never hit
// (caseDef.chases) up to 16 more times before that is a gap.
//
// # D-CB-4 without a clock
//
// The monitor reads each call from inside its callback through a lock
// probe. A simulated driver that offers no monitor.LockProber is probed
// with drivers/monitor/simprobe, which decides by what the read does
// (returns, or parks on what the callback holds), never by how long it
// takes: the same seed gives the same verdict however loaded the machine
// is. A probe that cannot decide is a gap, never a failure.
//
// # Real time
//
// With Harness.RealTime the cases run on sim/realtime with real waits
// bounded by Options.Wait (a driver silent for 200 ms counts as quiet), the
// monitor probes locks and cancels with drivers/monitor/realprobe (a read
// that misses the lock probe's bound is re-checked for seconds before it
// fails D-CB-4, and the report says it was a timeout), and a
// seed replays the workload, not the interleaving. The backend-driven swarm
// is left out. A driver over a store of its own (Redis, …) also sets
// Harness.ExternalStore and, for the honesty checks, MakeAbsent: the suite
// then learns what is stored only from the driver's own answers.
//
// # Testing the tester
//
// [Canary] is a driver the suite must always fail; package broken's drivers
// each fail their own rule (pairing_test.go). Nine unusual drivers that keep
// the contract (conformdrivers_test.go: single worker, staging, one
// direction only, inline, coalescing, one row, slow, a flaky transport)
// must certify, and the flaky one with one lie planted must not
// (TestUncontrolledLiesCaught); so must a cache that evicts on its own when
// it says so, and not when it claims to be durable
// (TestOwnEvictionsCertified).
package drivertest
