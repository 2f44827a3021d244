package postgres

import (
	"slices"
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
// the next one starts past as many rows from there (one at a time, so that
// each finds the one before it), so that each scans rows of its own. This
// only narrows where a pass looks: the rows it leaves below its start are
// held by those passes, or were written due there since (or freed by a
// pass that rolled back), and the passes that start once no full batch is
// held and no claim is under way, and NextDue, scan from the floor and
// find them.
type claimCursor struct {
	// starting lets one claim at a time find where it starts.
	starting sync.Mutex
	mu       sync.Mutex
	held     []*claimKey
	starts   []*claimStart // of the claims under way
}

// claimStart is where a claim of limit models under way started: past key
// (nil: from the floor).
type claimStart struct {
	key   *claimKey
	limit int
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

// start returns where a claim of limit models that starts now scans from,
// past the greatest key held, and notes it until end is called. While
// claims are under way, it starts past the rows of the one that starts
// furthest: past the key that past returns for that claim's start and
// limit. If past finds none (false), the claims under way take every model
// due: start returns false and notes nothing.
func (c *claimCursor) start(limit int, past func(from *claimKey, n int) (*claimKey, bool, error)) (from *claimKey, ok bool, end func(), err error) {
	c.starting.Lock()
	defer c.starting.Unlock()
	for {
		var top *claimStart
		from, top = c.furthest()
		if top == nil {
			break
		}
		k, ok, err := past(top.key, top.limit)
		if err != nil {
			return nil, false, nil, err
		}
		if !c.underWay(top) {
			// It ended meanwhile and may have committed before past read:
			// its rows then no longer count. Again, past what it holds.
			continue
		}
		if !ok {
			return nil, false, nil, nil
		}
		if !beyond(from, k) {
			from = k
		}
		break
	}
	st := &claimStart{key: from, limit: limit}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts = append(c.starts, st)
	return from, true, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.starts = slices.DeleteFunc(c.starts, func(o *claimStart) bool { return o == st })
	}, nil
}

// furthest returns the greatest key held and the claim under way that
// starts furthest.
func (c *claimCursor) furthest() (held *claimKey, top *claimStart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.held {
		if beyond(k, held) {
			held = k
		}
	}
	for _, o := range c.starts {
		if top == nil || beyond(o.key, top.key) {
			top = o
		}
	}
	return held, top
}

// underWay reports whether st is still noted.
func (c *claimCursor) underWay(st *claimStart) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.starts, st)
}

// hold adds k until the returned function is called.
func (c *claimCursor) hold(k *claimKey) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, k)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.held = slices.DeleteFunc(c.held, func(h *claimKey) bool { return h == k })
	}
}
