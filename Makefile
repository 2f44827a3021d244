GO ?= go

.PHONY: build test bench demo

build:
	$(GO) build -o bin/freshen ./cmd/freshen

# test starts a throwaway PostgreSQL 15 and Redis, runs every test, and
# stops them, even on failure.
test:
	scripts/with-servers.sh $(GO) test -count=1 ./...

# bench runs the Go benchmarks, then freshen bench (starts/s, outcomes/s,
# lateness and memory against their targets), on throwaway servers whose
# PostgreSQL is durable (fsync and synchronous_commit on, as in production);
# freshen bench prints those settings beside its figures.
bench:
	WITH_SERVERS_DURABLE=1 scripts/with-servers.sh sh -c '$(GO) test -run "^$$" -bench . -benchmem ./... && $(GO) run ./cmd/freshen bench'

demo: build
	./bin/freshen demo
