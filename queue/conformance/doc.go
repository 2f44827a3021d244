// Package conformance is a kit that checks a worker in any language against
// the wire format (WIRE.md): `freshen conformance -- CMD ARGS...`. It starts
// the worker command itself, with REDIS_URL, FRESHEN_QUEUE and the other
// variables of the handler contract (docs/workers.md, "Conformance") in its
// environment, so that it can also kill, stop and restart it; it drives the
// worker through a real Redis and a real scheduler (refresh.Scheduler,
// Consumer and Publisher over the memory store, or PostgreSQL), one case at
// a time per queue, and reports each case. Handler is the contract's
// handler for the Go SDK.
package conformance
