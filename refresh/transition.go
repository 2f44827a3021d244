package refresh

import "time"

// The transitions of DESIGN.md sections 3 and 6 are pure functions of
// (state, policy, event, now) that return the new model and a Decision.
// They are split by event family, each file reading as one part of
// DESIGN.md: start.go (create, start, timeout), outcome.go (outcomes),
// action.go (actions). This file holds what they share: the event names,
// the Decision type and the small state helpers.

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
)

// Plans a failure ends in (DESIGN.md section 3, Failure).
const (
	DecisionRetry        = "retry"
	DecisionRetryAligned = "retry_aligned"
	DecisionWaitNext     = "wait_next"
	DecisionDisable      = "disable"
)

// KindTimeout is the failure kind of an attempt that passed its deadline.
const KindTimeout = "timeout"

// Decision explains a transition: which event, which rule decided, and why.
// It feeds logs, history, lifecycle events and the simulator.
type Decision struct {
	// Event is one of the Event* constants; "" means nothing happened.
	Event string
	// Plan is the failure decision (retry, retry_aligned, wait_next,
	// disable) for failure and timeout events, else "".
	Plan string
	// Rule names the rule of DESIGN.md section 3 that decided, e.g.
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
