// Package layers holds the picture of storesim's tree and the test that keeps
// every import arrow pointing down it.
//
// From the bottom up:
//
//	0 contract   drivers, drivers/rules, backend/keys      imports nothing of the project
//	0 runtime    sim, sim/arena, sim/realtime              the contract at most
//	1 backend    backend, backend/realwait, backendtest    the code under test: contract and runtime only
//	1 drivers    drivers/memdriver, drivers/redisdriver, … store drivers: contract and runtime only
//	2 broken     broken, broken/redisbroken, …             planted driver bugs: wrappers around drivers, hooks
//	3 oracles    model, model/lender, drivers/monitor, …   judge the backend and the drivers
//	4 engine     fuzz/workload, fuzz/engine, fuzz/shrink,  op log, generator, endpoint builder,
//	             fuzz/registry, fuzz                       run function, one Check, shrinker
//	5 entry      scenarios, drivers/drivertest, broken/zoo, cmd/storesim …
//
// A package's non-test files may import packages of its own layer's group listed in Allowed,
// or of a lower layer; anything else is a wrong arrow, and TestLayers names it.
// A package missing from the table fails the test too: a new package must be
// placed before it lands.
package layers
