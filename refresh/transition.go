package refresh

import "time"

// The transitions of docs/transitions.md and docs/policy.md are pure functions of
// (state, policy, event, now) that return the new model and a Decision.
// They are split by event family, each file reading as one part of
// docs/transitions.md:
//
//   - start.go: Create, Start, Timeout (section 3);
//   - outcome.go: the outcomes, Success (unchanged ones included), Failure,
//     Status, Stale (section 3), and the check of an outcome's fields;
//   - action.go: Trigger, Enable, Pause, Resume, Cancel, Delete, and Edit
//     (a write of the definition);
//   - tick.go: Tick and DueAt, what the scheduler applies to a due model;
//   - schedule.go: next(t) and first(t), shifted by the spread;
//   - one file per extension of section 6: upstream.go, slots.go,
//     freshness.go, debounce.go, snooze.go, catchup.go.
//
// This file holds what they share: the event names, the Decision type and
// the small state helpers. A file calls another's transitions (the
// exported functions), never its helpers.

// Event types: what happened to a model.
const (
	EventCreate  = "create"
	EventStart   = "start"
	EventSuccess = "success"
	EventFailure = "failure"
	EventTimeout = "timeout"
	EventStale   = "stale"
	EventStatus  = "status"
	EventTrigger = "trigger"
	EventEnable  = "enable"
	EventPause   = "pause"
	EventResume  = "resume"
	EventCancel  = "cancel"
	EventDelete  = "delete"
	// EventUpdate: a PUT or PATCH changed the definition of a disabled
	// model, which re-enables it; the trigger follows (Decision.Also).
	// Other writes of the definition publish no event.
	EventUpdate = "update"

	// Events of the extensions (docs/policy.md).

	// EventSnooze: an attempt ended with a snooze outcome (snooze.go).
	EventSnooze = "snooze"
	// EventSkip: a late start was skipped by the catch-up window
	// (catchup.go). The queue publishes it as "skipped".
	EventSkip = "skip"
	// EventDebounce: the debounced triggers of a window took effect
	// (debounce.go). Each trigger was published as EventTrigger when it
	// came.
	EventDebounce = "debounce"
	// EventWait: a due model found a limit full (no free slot, or no start
	// admitted now) and waits (slots.go). Published once per wait, not once
	// per tick.
	EventWait = "wait"
	// EventWaitTooLong: a model waiting for a limit has waited longer
	// than its policy's max_lateness (slots.go). Published once per wait.
	EventWaitTooLong = "wait_too_long"
	// EventFreshnessLost: the model became overdue (freshness.go).
	EventFreshnessLost = "freshness_lost"
	// EventFreshnessRestored: a success ended the freshness episode
	// (freshness.go). It follows the success event (Decision.Also).
	EventFreshnessRestored = "freshness_restored"
)

// Causes of a trigger (Decision.Cause). An action of the API or of the
// simulator has none ("").
const (
	// CauseUpstream: an upstream's success (upstream.go). It never clears a
	// disabled model.
	CauseUpstream = "upstream"
	// CauseBulk: a bulk action of the API.
	CauseBulk = "bulk"
)

// Plans a failure ends in (docs/transitions.md, Failure).
const (
	DecisionRetry        = "retry"
	DecisionRetryAligned = "retry_aligned"
	DecisionWaitNext     = "wait_next"
	DecisionDisable      = "disable"
)

// KindTimeout is the failure kind of an attempt that passed its deadline.
const KindTimeout = "timeout"

// KindSnoozedTooLong is the failure kind of a snooze that came when the
// round had snoozed for max_snooze already (snooze.go).
const KindSnoozedTooLong = "snoozed_too_long"

// Decision explains a transition: which event, which rule decided, and why.
// It feeds logs, history, lifecycle events and the simulator.
type Decision struct {
	// Event is one of the Event* constants; "" means nothing happened.
	Event string
	// Plan is the failure decision (retry, retry_aligned, wait_next,
	// disable) for failure and timeout events, else "".
	Plan string
	// Rule names the rule of docs/transitions.md that decided, e.g.
	// "failure.1 not retryable".
	Rule string
	// Why is a sentence with the figures that decided.
	Why string
	// UID is the attempt the event concerns: the one started, ended,
	// superseded or cancelled, or the stale outcome's uid.
	UID string
	// AttemptNo is the number of that attempt in its round.
	AttemptNo int
	// Delay is the retry delay computed by rule 4.
	Delay   time.Duration
	Kind    string
	Message string
	// Reason is the disabled reason when Plan is disable, and why an
	// outcome was stale.
	Reason string
	// At is when the event happened, if not at the time of the write: the
	// arrival of the outcome that ended an attempt.
	At time.Time
	// Deadline is the deadline of attempt UID when the event ends it
	// without an outcome (trigger, cancel, delete).
	Deadline time.Time
	// Unchanged is set on an action that changed nothing (enable on a
	// model that is not disabled, pause on a paused one, ...): no event is
	// published and nothing is written.
	Unchanged bool

	// The fields of the extensions (docs/policy.md).

	// Cause is what asked for a trigger or debounce event: "",
	// CauseUpstream or CauseBulk.
	Cause string
	// Upstream is the upstream whose success caused a trigger.
	Upstream string
	// DataUnchanged marks a success whose outcome said unchanged: true.
	DataUnchanged bool
	// Recovered marks a success that ended a streak of failures
	// (consecutive_failures was > 0).
	Recovered bool
	// Until is the time a snooze outcome asked for (its until, or the time
	// of the write plus its for).
	Until time.Time
	// OverdueSince is the overdue instant of the freshness episode a
	// freshness_lost or freshness_restored event concerns: with the model
	// id and the event, it keys the event's webhook.
	OverdueSince time.Time
	// OverdueFor is the length of the episode a freshness_restored ends,
	// from OverdueSince to the success.
	OverdueFor time.Duration
	// Phase is the model's state a freshness_lost reports (Phase*).
	Phase string
	// Missed is the number of scheduled occurrences a skip passes over
	// (at most MaxMissedCount).
	Missed int
	// Also is a second event the same transition publishes right after
	// this one, with the same state: freshness_restored after the success
	// that ends an episode, the trigger after the update that re-enables a
	// disabled model. Its own Also is nil.
	Also *Decision
}

// Failure is a failed attempt as reported by a worker, or a timeout.
type Failure struct {
	Kind        string
	Message     string
	Retryable   bool
	UserMessage string
}

// idle drops the running attempt, if any, and its progress text: an
// attempt's status_message lives as long as the attempt.
func (s *State) idle() {
	s.AttemptUID = ""
	s.DeadlineAt = time.Time{}
	s.StartedAt = time.Time{}
	s.StatusMessage = ""
}

// supersede ends the running attempt, if any, without an outcome (a
// trigger, a cancel, a delete): d names it, so that its worker is told,
// and the model is idle.
func (m *Model) supersede(d *Decision) {
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
	}
	m.idle()
}

// triggered applies a trigger's effect at now (docs/transitions.md): a
// running attempt is superseded; the disabled state, counters, streak and
// snooze are cleared; refresh_at = now; an open debounce window closes
// (this is its effect, or a trigger without debounce came after it).
func (m *Model) triggered(now time.Time, d *Decision) {
	m.supersede(d)
	m.closeDebounce()
	m.SnoozedSince = time.Time{}
	m.clearStreak()
	m.planOffSchedule(now)
}

// closeDebounce closes the open debounce window, if any.
func (s *State) closeDebounce() {
	s.DebounceAt, s.DebounceSince, s.DebounceCause = time.Time{}, time.Time{}, ""
}

// planScheduled sets refresh_at to t, a scheduled occurrence, or null.
func (m *Model) planScheduled(t time.Time) {
	m.RefreshAt = t
	m.OffSchedule = false
}

// planOffSchedule sets refresh_at to t, a time planned by a trigger, a
// retry delay or a snooze. When the policy has a catch-up window and t
// falls on a scheduled occurrence, off_schedule records that the plan does
// not stand for that occurrence (catchup.go); without max_lateness nothing
// reads it and it stays false.
func (m *Model) planOffSchedule(t time.Time) {
	m.RefreshAt = t
	m.OffSchedule = m.Policy.MaxLateness > 0 && m.isOccurrence(t)
}

// clearStreak forgets the failure streak and the disabled state.
func (s *State) clearStreak() {
	s.AttemptNo = 0
	s.ConsecutiveFailures = 0
	s.FailingSince = time.Time{}
	s.DisabledAt = time.Time{}
	s.DisabledReason = ""
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "null"
	}
	return t.UTC().Format(time.RFC3339)
}
