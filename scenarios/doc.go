// Package scenarios runs storesim's scenario files: human-readable scripts
// that state one interleaving of endpoints, drivers, faults and callbacks
// exactly, together with the output the run must print. They are the
// project's executable examples of the situations that matter (SPEC §6),
// in the style of etcd raft's datadriven interaction tests.
//
// # Files
//
// A file is a sequence of blocks separated by blank lines; lines starting
// with # between blocks are comments. A block is one command line, a line
// "----", and the expected output:
//
//	# A publishes, B fetches it back.
//	publish A keys=a,b as=p1
//	----
//	A p1 PUBLISH [a@r0/0 b@r0/1]
//	A lookup [a b]: [absent absent]
//	A call 1 PUBLISH [a@r0/0 b@r0/1]
//	A p1 admitted: attempt 1, 1 batch(es)
//
// A command is a name, positional arguments and key=value arguments. The
// whole file is parsed before anything runs; a truncated block, an unknown
// command or key, a bad value or an undefined name is an *Error naming the
// file and line (the CLI prints it as one line and exits 2). A block whose
// output differs is a Mismatch with a line diff. Options.Rewrite (go test
// ./scenarios -rewrite, storesim scenario --rewrite) writes the actual
// output back, keeping comments; read the diff before committing it.
//
// # The scheduler, the store and the endpoints
//
// Every file starts with `store durable|evicting [seed=N]`: one
// deterministic scheduler (sim.Scheduler) whose seed decides every
// tie-break and delay, and one shared in-memory store. Each `endpoint`
// adds a lender (sim/arena memory), a driver from fuzz/registry wrapped in
// the contract monitor, a history recorder and a backend — built by
// engine.NewEndpoint, the run function's own builder. Async work advances
// only on deliver, tick and stabilize, so a file states an interleaving
// exactly and prints the same output on every run.
//
// # Commands
//
//	store durable|evicting [seed=N] [wake-delay=DUR] [coalesce=P] [evict-chance=P] [order=seed|fifo]
//	endpoint EP [driver=memory|together|broken:<Name>] [rows=N] [absent-is-miss=BOOL]
//	            [cancel=BOOL] [regions=LABEL:SLOTSxBYTES,…] [inflight=N] [queued=N]
//	            [unprovable=N] [drain-timeout=DUR] [faults=KIND:RATE,…] [register=now|later]
//	register EP                      build the backend of a register=later endpoint
//	publish EP keys=a,b [mask=11] [as=NAME]
//	fetch EP keys=a,b [mask=11] [as=NAME]
//	deliver [EVENT-ID | LABEL SUBSTRING]   run the next queued event, or a chosen one
//	queue                            list queued events: id, due time, label
//	tick DURATION                    run every event due within DURATION (at most 100000)
//	stabilize [only=EP,…] [max=N]    run to quiescence, at most N events (100000; only=: that endpoint's events)
//	inject EP FAULT [rate=P]         set a memdriver fault rate (1 on, 0 off)
//	inject EP stale-lookup key=K     K's next FETCH finds it evicted (honest MISS)
//	inject EP together-fail region=L the next together-registration fails at L
//	evict KEY                        evict a key behind every driver's back
//	cancel NAME                      cancel an attempt (or a driver-submit call)
//	drain EP                         poll the driver's drain (stops admission)
//	shutdown EP                      backend shutdown; labels print when it returns
//	check                            run every oracle now; "ok" or one line per violation
//	stats EP                         backend and lender counters
//	set touches=BOOL                 print every memory touch
//	driver-register EP LABEL:SxB [over=REGION]   register straight at the driver
//	driver-unregister EP h=HANDLE
//	driver-submit EP fetch|publish h=HANDLE keys=a,b slots=0,1 [as=NAME]
//
// Regions may state bad geometry (D-GEOM): LABEL:SxB/MEM claims S slots of
// B bytes over MEM bytes of memory, LABEL:SxB@OTHER is carved from region
// OTHER's memory. A publish writes "<attempt>/<key>|" repeated into each
// slot, so a fetch shows whose object arrived ("a=p1/a"; "~" marks bytes
// that are not exactly one published object).
//
// # Output
//
// Events run by deliver, tick and stabilize print as "> ID @TIME LABEL",
// with what they caused indented below: driver calls with their rows
// (key@region/slot), lookups, callbacks, row results, access changes,
// cancels, store puts and evictions, attempt outcomes and access, loans
// (S-MARKS, S-RELEASE), shutdown labels and the lender's hold (S-HOLD).
// A violation is printed inline the moment an oracle sees it ("!! EP RULE
// …"); `check` runs engine.Check, every oracle the run function runs: the
// contract monitor (with its end-of-run checks once nothing is queued), the
// lender, the memory oracle, liveness, the backend's boundary checks and
// S-LIN (porcupine), and prints each violation with its rule id.
// FileResult.Rules lists every rule id a run reported.
//
// # Deliver
//
// `deliver ID` and `stabilize only=EP` may run an event before others that
// were due first (sim.Scheduler.Deliver): time never runs backwards, the
// events passed over are postponed to that instant, as on a slow machine.
// The memdriver's events are labelled "memdriver/EP begin|row start|chunk|
// late write|settle|proof|timeout|onChange", the backend's "EP/call",
// "EP/notify", "EP/drain", "EP/drain-deadline", "EP/shutdown-done".
//
// # Broken drivers
//
// Options.Driver replaces every endpoint's driver, e.g. with
// "broken:LiesAboutAccess": a scenario that exercises a rule must then
// differ from its expected output and report that rule (the package's
// TestBrokenDriversFail proves it for every broken driver of SPEC §7).
package scenarios
