package rrule

import "sync"

// cacheKey identifies a parse: the text, the zone name, and the anchor day
// when the text has no DTSTART.
type cacheKey struct {
	text     string
	zone     string
	day      int64
	anchored bool
}

type cacheEntry struct {
	s   *Schedule
	err error
}

// cacheGeneration bounds the cache: it keeps at most two generations of
// this many entries. An entry used in the older generation moves to the
// current one, so schedules in use stay while unused ones age out.
const cacheGeneration = 2048

// parseCache is a bounded map, safe for concurrent use.
type parseCache struct {
	mu       sync.RWMutex
	cur, old map[cacheKey]cacheEntry
}

var schedules = &parseCache{cur: map[cacheKey]cacheEntry{}}

func (c *parseCache) get(k cacheKey) (cacheEntry, bool) {
	c.mu.RLock()
	e, ok := c.cur[k]
	c.mu.RUnlock()
	if ok {
		return e, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok = c.cur[k]; ok {
		return e, true
	}
	if e, ok = c.old[k]; ok {
		c.putLocked(k, e)
	}
	return e, ok
}

func (c *parseCache) put(k cacheKey, e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, e)
}

func (c *parseCache) putLocked(k cacheKey, e cacheEntry) {
	if len(c.cur) >= cacheGeneration {
		c.old, c.cur = c.cur, make(map[cacheKey]cacheEntry, cacheGeneration)
	}
	c.cur[k] = e
}
