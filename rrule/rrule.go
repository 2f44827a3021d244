// Package rrule parses RFC 5545 recurrence text and answers "when is the
// next occurrence?".
//
// This first version delegates to github.com/teambition/rrule-go and walks
// from DTSTART on every call.
package rrule

import (
	"fmt"
	"strings"
	"time"

	rrulego "github.com/teambition/rrule-go"
)

// Options tells Parse how to read a schedule that does not say everything.
type Options struct {
	// Timezone names the zone (IANA) of a bare RRULE body or a floating
	// DTSTART; "" means UTC.
	Timezone string
	// Created anchors a bare RRULE body: DTSTART is 00:00:00 of Created's
	// day in Timezone.
	Created time.Time
}

// Schedule is a parsed recurrence. It is immutable and safe for concurrent
// use.
type Schedule struct {
	set *rrulego.Set
}

// Parse parses text: full RFC 5545 lines (DTSTART, RRULE, RDATE, EXDATE) or
// a bare RRULE body.
func Parse(text string, opt Options) (*Schedule, error) {
	loc, err := time.LoadLocation(opt.Timezone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", opt.Timezone)
	}
	text = strings.TrimSpace(text)
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 1 && !strings.Contains(lines[0], ":") {
		lines[0] = "RRULE:" + lines[0]
	}
	hasStart := false
	for _, l := range lines {
		if strings.HasPrefix(strings.ToUpper(l), "DTSTART") {
			hasStart = true
		}
	}
	if !hasStart {
		c := opt.Created.In(loc)
		anchor := time.Date(c.Year(), c.Month(), c.Day(), 0, 0, 0, 0, loc)
		lines = append([]string{"DTSTART;TZID=" + loc.String() + ":" + anchor.Format("20060102T150405")}, lines...)
	}
	set, err := rrulego.StrSliceToRRuleSetInLoc(lines, loc)
	if err != nil {
		return nil, err
	}
	return &Schedule{set: set}, nil
}

// Next returns the first occurrence strictly after t, and false if none.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	n := s.set.After(t, false)
	return n, !n.IsZero()
}

// First returns the first occurrence at or after t, and false if none.
func (s *Schedule) First(t time.Time) (time.Time, bool) {
	n := s.set.After(t, true)
	return n, !n.IsZero()
}
