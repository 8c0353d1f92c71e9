# storesim — bare `make` prints this help.
GO ?= go
PKGS := ./...

.PHONY: help test race lint fuzz-smoke bench swarm determinism zoo results
help: ## print this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

test: ## the whole test suite (starts a private redis-server and memcached; installs them with apt-get when missing)
	scripts/test.sh

race: ## the whole suite under the race detector
	STORESIM_TEST_FLAGS=-race scripts/test.sh

lint: ## gofmt, go vet, go mod tidy diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@cp go.mod /tmp/storesim-go.mod.bak; cp go.sum /tmp/storesim-go.sum.bak; \
	  $(GO) mod tidy; d=$$(git diff --stat go.mod go.sum); \
	  cp /tmp/storesim-go.mod.bak go.mod; cp /tmp/storesim-go.sum.bak go.sum; \
	  if [ -n "$$d" ]; then echo "go mod tidy would change: $$d"; exit 1; fi

fuzz-smoke: ## every fuzz target for 10 s
	scripts/fuzz-smoke.sh 10s

bench: ## benchmarks, printed as side-by-side ratios (< 5 min)
	scripts/bench.sh

swarm: ## the main job: a seed swarm on the in-memory driver
	$(GO) run ./cmd/storesim run --seeds 0:1000

determinism: ## every seed twice, trace hashes must match
	$(GO) run ./cmd/storesim run --seeds 0:300 --check-determinism

zoo: ## the bug zoo: every planted backend bug caught, time to detect vs a naive stress test (docs/ZOO.md, ~10 min)
	scripts/zoo.sh

results: ## regenerate docs/RESULTS.md (bench, main job, certify times) and docs/ZOO.md
	scripts/results.sh
