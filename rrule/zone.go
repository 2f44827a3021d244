package rrule

import (
	"fmt"
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
	// (spring forward), gapEnd is the first wall time after the gap.
	gapEnd int64
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
		startT, endT := t.ZoneBounds()
		start, end := int64(-1<<62), int64(1<<62)
		if !startT.IsZero() {
			start = startT.Unix()
		}
		if !endT.IsZero() {
			end = endT.Unix()
		}
		u := w - off
		if u >= start && u < end {
			return resolved{unix: u}
		}
		if havePrev && w-prevOff >= prevEnd && u < start {
			// After the previous period's wall times and before this
			// one's: a gap. Take the offset from before it.
			return resolved{unix: w - prevOff, gapEnd: start + off}
		}
		prevOff, prevEnd, havePrev = off, end, true
		if end >= 1<<62 {
			break
		}
		x = end
	}
	// Not reached for real zones; fall back to the offset at w.
	return resolved{unix: w - offsetAt(loc, w)}
}

// wallLowerBound returns a wall time at or before the wall time of every
// instant after t: the wall clock at t, moved back by the length of a gap
// that ended in the last 26 hours (such a gap's wall times stand for
// instants just after it).
func wallLowerBound(loc *time.Location, t int64) int64 {
	if loc == time.UTC {
		return t
	}
	off := offsetAt(loc, t)
	if o := offsetAt(loc, t-26*3600); o < off {
		off = o
	}
	return t + off
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
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	// Only known zones are kept, so the cache stays as small as the
	// zone database.
	locations.Store(name, loc)
	return loc, nil
}
