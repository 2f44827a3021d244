package refresh

import (
	"fmt"
	"time"
)

// This file holds the snooze outcome of docs/policy.md: a worker
// answers {"outcome": "snooze", "until": ...} or {"outcome": "snooze",
// "for": ...} when the input is not ready. The attempt ends without a
// failure and the model tries again at the earliest of until, the next
// occurrence and the end of max_snooze, counted from the round's first
// snooze; a snooze that comes when the round has snoozed for max_snooze
// is a retryable failure of kind snoozed_too_long.

// Snooze ends the running attempt at now with a snooze that asks to be
// tried again at until (zero: no time of its own). See snoozed.
func Snooze(m Model, until, now time.Time) (Model, Decision) {
	return snoozed(m, until, now, now)
}

// snoozed ends the running attempt with a snooze that arrived at at, and
// plans from now:
//
//   - the round's first snooze sets snoozed_since = at;
//   - if at >= snoozed_since + max_snooze, the outcome is a retryable
//     failure of kind snoozed_too_long, decided by the failure rules with
//     n = this attempt's number (outcome.go);
//   - else the attempt ends as snoozed: attempt_no returns to its value
//     before this start, counters and streak are unchanged, the model is
//     idle (status_message cleared) and refresh_at = min(until, next(now),
//     snoozed_since + max_snooze). The catch-up window never skips that
//     plan.
func snoozed(m Model, until, at, now time.Time) (Model, Decision) {
	bound := m.Policy.SnoozeBound()
	if m.SnoozedSince.IsZero() {
		m.SnoozedSince = at
	}
	since := m.SnoozedSince
	end := since.Add(bound)
	if !at.Before(end) {
		f := Failure{
			Kind:      KindSnoozedTooLong,
			Message:   fmt.Sprintf("the input was still not ready after snoozing since %s, for max_snooze %s", ts(since), Duration(bound)),
			Retryable: true,
		}
		return fail(m, f, at, now)
	}
	n := m.AttemptNo
	d := Decision{Event: EventSnooze, Rule: "snooze", UID: m.AttemptUID, AttemptNo: n, Until: until}
	m.idle()
	m.AttemptNo = max(n-1, 0)
	plan, by := end, fmt.Sprintf("the end of max_snooze %s since the round's first snooze at %s", Duration(bound), ts(since))
	if next, ok := m.Next(now); ok && next.Before(plan) {
		plan, by = next, "the next occurrence"
	}
	if !until.IsZero() && until.Before(plan) {
		plan, by = until, "the time the snooze asked for"
	}
	m.planOffSchedule(plan)
	d.Why = fmt.Sprintf("attempt %d snoozed: the input is not ready; next try at %s, %s", n, ts(plan), by)
	return m, d
}
