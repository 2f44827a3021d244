package http

import (
	"net/http"
	"sync/atomic"
)

// DefaultResponseBytes is the default of WithResponseBytes: 64 MiB.
const DefaultResponseBytes = 64 << 20

// smallResponse is the size up to which a response body is written
// whatever the budget: almost every answer, errors included.
const smallResponse = 64 << 10

// budget bounds the memory of large answers: the bodies over
// smallResponse being written, and what the requests whose answers may be
// large (pages of models) reserve while they read and encode them. A body
// is held in memory until its client has read it, which a client that
// reads slowly, or not at all, makes last until the server's write
// timeout: without a bound, a few hundred such clients asking for pages
// of models with large payloads hold gigabytes.
type budget struct {
	max  int64
	used atomic.Int64
}

// take reserves n bytes, and reports whether it could: it can when they
// fit, or when nothing else is reserved, so that one body larger than the
// budget is still written.
func (b *budget) take(n int64) bool {
	if n == 0 {
		return true
	}
	for {
		used := b.used.Load()
		if used > 0 && used+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes that take reserved.
func (b *budget) give(n int64) { b.used.Add(-n) }

// reserve holds n bytes of the server's budget for a request whose
// answer may be large, before the handler reads what it answers: the
// memory a read and its encoding take is bounded with that of the answers
// being written. It reports false, having answered 503, when the budget
// has no room; writeJSON then holds the answer's own size in place of n.
func reserve(w http.ResponseWriter, n int64) bool {
	sw, ok := w.(*statusWriter)
	if !ok || sw.take(n) {
		return true
	}
	sw.refuse()
	return false
}
