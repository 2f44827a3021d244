GO ?= go

.PHONY: build test bench demo

build:
	$(GO) build -o bin/freshen ./cmd/freshen

# test starts a throwaway PostgreSQL 15 and Redis, runs every test, and
# stops them, even on failure.
test:
	scripts/with-servers.sh $(GO) test -count=1 ./...

bench:
	scripts/with-servers.sh $(GO) test -run '^$$' -bench . -benchmem ./...

demo: build
	./bin/freshen demo
