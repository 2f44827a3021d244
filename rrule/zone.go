package rrule

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// offsetAt returns the UTC offset in seconds in force at the instant unix.
func offsetAt(loc *time.Location, unix int64) int64 {
	_, off := time.Unix(unix, 0).In(loc).Zone()
	return int64(off)
}

// resolved is the instant a wall time stands for.
type resolved struct {
	unix int64
	// gapEnd is zero when the wall time exists. When it falls in a gap
	// (spring forward), gapEnd is the first wall time after the gap and
	// gapLen the gap's length.
	gapEnd, gapLen int64
}

// resolve returns the instant of the wall time w in loc as RFC 5545
// (3.3.5) wants it: a wall time that occurs twice stands for its first
// occurrence, and one that does not exist is read with the offset in force
// before the gap (02:30 in a 02:00-03:00 gap is 03:30 after it). This is
// Python's fold=0. time.Date leaves both cases unspecified.
func resolve(loc *time.Location, w int64) resolved {
	if loc == time.UTC {
		return resolved{unix: w}
	}
	// Fast path: no transition within a day either side. UTC offsets
	// stay within ±26h, so every instant w could stand for lies in
	// [w-1d, w+1d].
	before := offsetAt(loc, w-secondsPerDay)
	if after := offsetAt(loc, w+secondsPerDay); before == after && offsetAt(loc, w-before) == before {
		return resolved{unix: w - before}
	}
	return resolveNearTransition(loc, w)
}

// resolveNearTransition walks the zone periods (spans of one offset) that
// could hold w and picks the earliest instant that reads w, or the gap that
// swallows w.
func resolveNearTransition(loc *time.Location, w int64) resolved {
	const window = 2 * secondsPerDay
	x := w - window
	var prevOff, prevEnd int64
	havePrev := false
	for x <= w+window {
		t := time.Unix(x, 0).In(loc)
		_, o := t.Zone()
		off := int64(o)
		start, end := zoneBounds(t)
		u := w - off
		if u >= start && u < end {
			return resolved{unix: u}
		}
		if havePrev && w-prevOff >= prevEnd && u < start {
			// After the previous period's wall times and before this
			// one's: a gap. Take the offset from before it.
			return resolved{unix: w - prevOff, gapEnd: start + off, gapLen: off - prevOff}
		}
		prevOff, prevEnd, havePrev = off, end, true
		if end == math.MaxInt64 {
			break
		}
		x = end
	}
	// Not reached for real zones; fall back to the offset at w.
	return resolved{unix: w - offsetAt(loc, w)}
}

// zoneBounds returns the instants at which the zone period (a span of one
// offset) holding t starts and ends, with the extremes of int64 for none.
func zoneBounds(t time.Time) (start, end int64) {
	s, e := t.ZoneBounds()
	start, end = math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		start = s.Unix()
	}
	if !e.IsZero() {
		end = e.Unix()
	}
	return start, end
}

// zone describes the wall times around the instant t that a search needs:
// which of them stand for instants after t.
type zone struct {
	t int64
	// wall is the first wall time, outside a gap, that stands for an
	// instant after t; every later one does too, except those just after
	// a gap, which stand for the same instants as the gap's.
	wall int64
	// [gapLo, gapHi): the wall times in a gap that ended just before
	// t+1 and stand for instants after t (read with the offset gapOff
	// from before the gap); empty otherwise.
	gapLo, gapHi, gapOff int64
	// Wall times in [fastLo, fastHi) stand for w-fastOff.
	fastLo, fastHi, fastOff int64
	// For t+1 in [plainLo, plainHi), the zone is the same but for t and
	// wall: neither a gap nor a repeated hour is near.
	plainLo, plainHi int64
}

// newZone returns the zone around t in loc.
func newZone(loc *time.Location, t int64) zone {
	u := t + 1
	if loc == time.UTC {
		return zone{t: t, wall: u, fastLo: math.MinInt64, fastHi: math.MaxInt64, plainLo: math.MinInt64, plainHi: math.MaxInt64}
	}
	tm := time.Unix(u, 0).In(loc)
	_, o := tm.Zone()
	off := int64(o)
	start, end := zoneBounds(tm)
	prev := off
	if start != math.MinInt64 {
		prev = offsetAt(loc, start-1)
	}
	z := zone{t: t, wall: u + off, fastLo: satAdd(start, max(off, prev)), fastHi: satAdd(end, off), fastOff: off,
		plainLo: satAdd(start, max(prev-off, off-prev)), plainHi: end}
	switch {
	case prev > off && u < start+(prev-off):
		// t+1 lies in the second pass of a repeated hour, whose wall
		// times stand for the first pass: start after it.
		z.wall = start + prev
	case prev < off && u < start+(off-prev):
		// The gap just before: its wall times stand for [start,
		// start+gap) when read with the offset from before it.
		z.gapLo, z.gapHi, z.gapOff = u+prev, start+off, prev
	}
	return z
}

// moveTo returns the zone around t in loc, reusing z when t+1 lies in
// its plain span, and whether it did.
func (z *zone) moveTo(loc *time.Location, t int64) (zone, bool) {
	if u := t + 1; u >= z.plainLo && u < z.plainHi {
		c := *z
		c.t, c.wall = t, u+z.fastOff
		return c, true
	}
	return newZone(loc, t), false
}

func satAdd(a, b int64) int64 {
	switch {
	case a == math.MinInt64 || a == math.MaxInt64:
		return a
	default:
		return a + b
	}
}

// resolve returns the instant the wall time w stands for, and, when w lies
// in a gap, the first wall time after the gap and its length.
func (z *zone) resolve(loc *time.Location, w int64) (unix, gapEnd, gapLen int64) {
	if w >= z.fastLo && w < z.fastHi {
		return w - z.fastOff, 0, 0
	}
	x := resolve(loc, w)
	return x.unix, x.gapEnd, x.gapLen
}

// locations caches time.LoadLocation, which reads the zone database on
// every call.
var locations sync.Map // string -> *time.Location

// loadLocation returns the IANA zone name; "" and "UTC" are UTC.
func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	// Local depends on the machine; a schedule must not.
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", cut(name))
	}
	// Only known zones are kept, so the cache stays as small as the
	// zone database.
	locations.Store(name, loc)
	return loc, nil
}
