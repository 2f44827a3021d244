GO ?= go

.PHONY: build test bench demo

build:
	$(GO) build -o bin/freshen ./cmd/freshen

# test installs what the clients in clients/ need (scripts/install-clients.sh),
# starts a throwaway PostgreSQL 15 and Redis, runs every test, and stops
# them, even on failure. The Go SDK's conformance suite runs after the
# others, alone: its workers hold a 3 s lease, which the end-to-end tests
# of cmd/freshen, run beside it on the same 2 CPUs and Redis, could starve.
test:
	scripts/install-clients.sh
	scripts/with-servers.sh sh -c '$(GO) test -count=1 $$($(GO) list ./... | grep -v /queue/conformance$$) && $(GO) test -count=1 ./queue/conformance'

# bench runs the Go benchmarks, then freshen bench (starts/s, outcomes/s,
# lateness and memory against their targets), then freshen bench e2e (N
# models due at once through freshen serve and a worker process: cycles/s,
# CPU, memory, transactions and Redis commands per 1,000 cycles) at 10,000
# and 100,000 models, then freshen bench hostile (what hostile clients cost
# freshen serve: CPU and memory per reproduction, next occurrences of the
# worst accepted schedules, and a loop of attacks against background
# traffic), then the short form of freshen bench soak (20,000 models at
# half a burst's rate for 5 minutes, with failures, hangs and pruning;
# the full form is --models 1000000 --minutes 30) and freshen bench latency
# (trigger and PUT to a worker, idle and under load), on throwaway servers whose PostgreSQL is durable (fsync and
# synchronous_commit on, as in production); freshen bench prints those
# settings beside its figures. To count statements too:
#   WITH_SERVERS_PG_CONF="shared_preload_libraries = 'pg_stat_statements'" make bench
bench: build
	WITH_SERVERS_DURABLE=1 scripts/with-servers.sh sh -c '$(GO) test -run "^$$" -bench . -benchmem ./... && bin/freshen bench && bin/freshen bench e2e -n 10000 && bin/freshen bench e2e -n 100000 && bin/freshen bench hostile && bin/freshen bench soak --models 20000 --minutes 5 && bin/freshen bench latency'

# demo runs the demo story, with the API and the dashboard on DEMO_ADDR
# (open http://127.0.0.1:8080/ui/ while it runs).
DEMO_ADDR ?= 127.0.0.1:8080
demo: build
	./bin/freshen demo --addr $(DEMO_ADDR)
