package postgres

import (
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// A crowd of models due at once is claimed by several passes of a store
// at the same time (a scheduler's helpers). Each scans the due models in
// (due_at, id) order from the floor up, and SKIP LOCKED passes over the
// rows the other passes hold: the third pass of a crowd visited and tried
// to lock the two batches before its own, which took a claim of a second's
// 2,000 models from about 20 ms to 150–300 ms on a busy 2-CPU machine,
// some passes ending with none claimed.
//
// claimCursor lets a pass start where the full batches held by the passes
// under way end. A pass that claimed a full batch adds the key of its last
// row until its transaction ends; a pass that starts meanwhile scans from
// past the greatest such key. Passes that start together (the helpers a
// small first pass wakes) have no batch to start past yet: each notes
// where it starts and how many it claims while its claim is under way, and
// the next one starts that many rows further (claimFrom), so that each
// scans rows of its own. This only narrows where a pass
// looks: the rows it leaves below its start are held by those passes, or
// were written due there since (or freed by a pass that rolled back), and
// the passes that start once no full batch is held and no claim is under
// way, and NextDue, scan from the floor and find them.
type claimCursor struct {
	mu     sync.Mutex
	held   []*claimKey
	starts []*claimStart // of the claims under way
}

// claimStart is where a claim of limit models starts: skip rows past base
// (nil: the floor).
type claimStart struct {
	base        *claimKey
	skip, limit int
}

// claimKey is the (due_at, id) of a row of models, models_due_at's order.
type claimKey struct {
	due time.Time
	id  string
}

func (k *claimKey) after(o *claimKey) bool {
	return k.due.After(o.due) || k.due.Equal(o.due) && k.id > o.id
}

// beyond reports whether a is past b, nil being the floor.
func beyond(a, b *claimKey) bool {
	return a != nil && (b == nil || a.after(b))
}

// keyOf returns the key of m as models_due_at holds it (due_at has
// microseconds). A key that is off by a little costs nothing in
// correctness: the scan past it starts a little early or late.
func keyOf(m *refresh.Model) *claimKey {
	return &claimKey{due: dueAt(*m).Truncate(time.Microsecond), id: m.ID}
}

// start notes a claim of limit models that starts now until the returned
// function is called, and returns where it starts: past the rows of the
// claim under way that starts furthest, or with none, past the greatest
// key held; and the greatest key held.
func (c *claimCursor) start(limit int) (st *claimStart, held *claimKey, end func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.held {
		if beyond(k, held) {
			held = k
		}
	}
	st = &claimStart{base: held, limit: limit}
	var top *claimStart
	for _, o := range c.starts {
		if top == nil || beyond(o.base, top.base) || !beyond(top.base, o.base) && o.skip > top.skip {
			top = o
		}
	}
	if top != nil {
		st.base, st.skip = top.base, top.skip+top.limit
	}
	c.starts = append(c.starts, st)
	return st, held, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, o := range c.starts {
			if o == st {
				c.starts = append(c.starts[:i], c.starts[i+1:]...)
				return
			}
		}
	}
}

// hold adds k until the returned function is called.
func (c *claimCursor) hold(k *claimKey) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, k)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, h := range c.held {
			if h == k {
				c.held = append(c.held[:i], c.held[i+1:]...)
				return
			}
		}
	}
}
