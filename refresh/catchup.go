package refresh

import (
	"fmt"
	"time"
)

// This file holds the catch-up window of docs/policy.md. With
// max_lateness, a start planned at a scheduled occurrence (an aligned
// retry, a start after resume or after a slot wait included) that is found
// more than max_lateness after its occurrence is skipped: refresh_at =
// next(now), attempt_no and the streak kept, one skip event with the
// number of missed occurrences. A trigger, a retry delay or a snooze time
// is never skipped.
//
// A start that coalesces missed occurrences (section 3) stands for the
// latest of them: it is skipped only if every occurrence from its
// refresh_at to now is more than max_lateness old. A daily model resumed
// ten minutes after today's occurrence runs, even though yesterday's was
// missed by a day, as a Kubernetes CronJob with startingDeadlineSeconds
// or a Temporal schedule with a catch-up window would.

// MaxMissedCount bounds the number of missed occurrences a skip counts
// (Decision.Missed); past it the count stops at MaxMissedCount, and the
// decision says "at least".
const MaxMissedCount = 1000

// Skip skips the start due at now if it is too late (see the file
// comment): refresh_at = next(now) (null if the schedule has ended),
// attempt_no, counters and streak kept, a slot wait ended; Decision.Missed
// is the number of occurrences from the skipped refresh_at to now. It
// changes nothing (Decision.Event "") when the start is not due
// (CanStart), when the policy has no max_lateness, when refresh_at is not
// a scheduled occurrence or was planned by a trigger, a retry delay or a
// snooze (off_schedule), or when an occurrence lies within max_lateness
// before now.
func Skip(m Model, now time.Time) (Model, Decision) {
	window := time.Duration(m.Policy.MaxLateness)
	planned := m.RefreshAt
	if window <= 0 || !m.CanStart(now) || m.OffSchedule || now.Sub(planned) <= window || !m.isOccurrence(planned) {
		return m, Decision{}
	}
	if latest, ok := m.First(now.Add(-window)); ok && !latest.After(now) {
		return m, Decision{} // the run stands for an occurrence still within the window
	}
	missed, more := m.countOccurrences(planned, now, MaxMissedCount)
	count := fmt.Sprint(missed)
	if more {
		count = "at least " + count
	}
	m.planScheduled(m.nextOrZero(now))
	m.endWait()
	return m, Decision{
		Event: EventSkip, Rule: "catch_up.skip", AttemptNo: m.AttemptNo, Missed: missed,
		Why: fmt.Sprintf("the start planned at %s is %s late, more than max_lateness %s: %s occurrence(s) missed; next run %s",
			ts(planned), Duration(now.Sub(planned)), m.Policy.MaxLateness, count, ts(m.RefreshAt)),
	}
}
