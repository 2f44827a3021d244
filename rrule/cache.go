package rrule

import "sync"

// cacheKey identifies a parse: the text, the zone name, the limits, and
// the anchor day when the text has no DTSTART.
type cacheKey struct {
	text     string
	zone     string
	limits   Limits
	day      int64
	anchored bool
}

// cacheBytes bounds the memory the cache holds: its schedules (as
// estimated by Schedule.size) and their texts. It keeps two generations of
// at most half as much each; a schedule used in the older generation moves
// to the current one, so schedules in use stay while unused ones age out:
// a working set of 16 MB: some 12,000 common schedules of about 1.3 KB
// each (go test -bench ColdNext ./rrule/ reports them), or some 40 of the
// largest the default limits allow (see Limits).
const cacheBytes = 32 << 20

// parseCache is a map bounded by bytes, safe for concurrent use. Only
// schedules that Parse accepted are kept.
type parseCache struct {
	mu       sync.RWMutex
	max      int // bytes per generation
	cur, old map[cacheKey]*Schedule
	curBytes int
}

var schedules = newParseCache(cacheBytes / 2)

func newParseCache(maxBytes int) *parseCache {
	return &parseCache{max: maxBytes, cur: map[cacheKey]*Schedule{}}
}

// entryBytes estimates the memory an entry holds: its texts, its
// schedule, and its place in the map (a key and a pointer, 112 bytes, in
// a table that grows by doubling) with what the heap rounds up, about 500
// bytes as measured (go test -bench ColdNext ./rrule/: retained-B).
func entryBytes(k cacheKey, s *Schedule) int {
	return len(k.text) + len(k.zone) + s.size + 512
}

func (c *parseCache) get(k cacheKey) (*Schedule, bool) {
	c.mu.RLock()
	s, ok := c.cur[k]
	c.mu.RUnlock()
	if ok {
		return s, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok = c.cur[k]; ok {
		return s, true
	}
	if s, ok = c.old[k]; ok {
		delete(c.old, k)
		c.putLocked(k, s)
	}
	return s, ok
}

func (c *parseCache) put(k cacheKey, s *Schedule) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, s)
}

func (c *parseCache) putLocked(k cacheKey, s *Schedule) {
	n := entryBytes(k, s)
	if n > c.max {
		return // larger than a generation: not kept
	}
	if _, ok := c.cur[k]; ok {
		return
	}
	if c.curBytes+n > c.max {
		c.old, c.cur, c.curBytes = c.cur, map[cacheKey]*Schedule{}, 0
	}
	c.cur[k] = s
	c.curBytes += n
}

// bytes returns the memory the cache holds, estimated.
func (c *parseCache) bytes() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.curBytes
	for k, s := range c.old {
		n += entryBytes(k, s)
	}
	return n
}

// reset empties the cache.
func (c *parseCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.old, c.curBytes = map[cacheKey]*Schedule{}, nil, 0
}
