package refresh

import (
	"fmt"
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

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

// schedule returns the model's parsed schedule, or nil for an on-demand
// model. Policies are validated before they are stored, so a schedule that
// no longer parses is treated as none.
func (m Model) schedule() *rrule.Schedule {
	if m.Policy.Schedule == "" {
		return nil
	}
	s, err := rrule.Parse(m.Policy.Schedule, m.Policy.scheduleOptions(m.CreatedAt))
	if err != nil {
		return nil
	}
	return s
}

// Next returns next(t) of DESIGN.md: the first scheduled occurrence strictly
// after t, and false if there is none.
func (m Model) Next(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		return s.Next(t)
	}
	return time.Time{}, false
}

// First returns first(t): the first occurrence at or after t.
func (m Model) First(t time.Time) (time.Time, bool) {
	if s := m.schedule(); s != nil {
		return s.First(t)
	}
	return time.Time{}, false
}

// nextOrZero returns next(t), or the zero time (null) if there is none.
func (m Model) nextOrZero(t time.Time) time.Time {
	n, _ := m.Next(t)
	return n
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

// Create gives a new model its first plan: refresh_at = now when trigger is
// set, else first(now), else null. m carries id, queue, payload and policy;
// its CreatedAt is set to now if zero and its state is reset.
func Create(m Model, trigger bool, now time.Time) (Model, Decision) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.State = State{}
	d := Decision{Event: EventCreate, Rule: "create"}
	switch first, ok := m.First(now); {
	case trigger:
		m.RefreshAt = now
		d.Why = "created with trigger: refresh now"
	case ok:
		m.RefreshAt = first
		d.Why = "first scheduled occurrence at " + ts(first)
	default:
		d.Why = "no schedule and no trigger: nothing planned"
	}
	return m, d
}

// CanStart reports whether Start applies at now: refresh_at <= now, idle,
// not paused, not disabled.
func (m Model) CanStart(now time.Time) bool {
	return !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && !m.Running() && !m.Paused && !m.Disabled()
}

// Start starts attempt uid: attempt_no += 1, deadline_at = refresh_at =
// now + timeout, status_message cleared. It changes nothing
// (Decision.Event "") unless CanStart.
func Start(m Model, uid string, now time.Time) (Model, Decision) {
	if !m.CanStart(now) {
		return m, Decision{}
	}
	timeout := time.Duration(m.Policy.Timeout)
	m.AttemptNo++
	m.AttemptUID = uid
	m.StartedAt = now
	m.DeadlineAt = now.Add(timeout)
	m.RefreshAt = m.DeadlineAt
	m.StatusMessage = ""
	return m, Decision{
		Event: EventStart, Rule: "start", UID: uid, AttemptNo: m.AttemptNo,
		Why: fmt.Sprintf("attempt %d starts, deadline %s", m.AttemptNo, ts(m.DeadlineAt)),
	}
}

// TimedOut reports whether the running attempt has reached its deadline.
func (m Model) TimedOut(now time.Time) bool {
	return m.Running() && !m.DeadlineAt.After(now)
}

// Timeout fails the running attempt with kind "timeout" once its deadline
// has passed; it changes nothing otherwise. The failure's message names
// the attempt's own timeout (deadline_at - started_at), which an edit of
// the policy since its start does not change.
func Timeout(m Model, now time.Time) (Model, Decision) {
	if !m.TimedOut(now) {
		return m, Decision{}
	}
	f := Failure{
		Kind:      KindTimeout,
		Message:   fmt.Sprintf("attempt %d did not finish within %s", m.AttemptNo, Duration(m.DeadlineAt.Sub(m.StartedAt))),
		Retryable: true,
	}
	m, d := fail(m, f, now, now)
	d.Event = EventTimeout
	return m, d
}

// ApplyOutcome applies a worker's outcome, fenced by the attempt uid: an
// outcome for another attempt, for an idle model, or arriving at or after
// the deadline is stale and changes nothing; Decision.Reason says which.
//
// The outcome counts at its arrival, o.ArrivedAt (now if zero): lateness is
// judged then and the attempt ends then. Plans (the next run, a retry
// delay) count from now, the time of the write.
func ApplyOutcome(m Model, o Outcome, now time.Time) (Model, Decision) {
	at := o.ArrivedAt
	if at.IsZero() || at.After(now) {
		at = now
	}
	switch {
	case o.AttemptUID == "":
		return Stale(m, o, "the outcome names no attempt")
	case !m.Running():
		return Stale(m, o, "attempt "+o.AttemptUID+" is over: the model has no running attempt")
	case o.AttemptUID != m.AttemptUID:
		return Stale(m, o, "attempt "+o.AttemptUID+" is over: the current attempt is "+m.AttemptUID)
	case !at.Before(m.DeadlineAt):
		return Stale(m, o, "attempt "+o.AttemptUID+" is over: its outcome arrived at "+ts(at)+
			", at or after its deadline "+ts(m.DeadlineAt)+", and the timeout wins")
	}
	var d Decision
	switch o.Type {
	case OutcomeSuccess:
		m, d = success(m, at, now)
	case OutcomeFailure:
		retryable := o.Retryable == nil || *o.Retryable
		m, d = fail(m, Failure{Kind: o.Kind, Message: o.Message, Retryable: retryable, UserMessage: o.UserMessage}, at, now)
	case OutcomeStatus:
		return Status(m, o.Message)
	default:
		return Stale(m, o, fmt.Sprintf("unknown outcome type %q", o.Type))
	}
	if at.Before(now) {
		d.At = at
	}
	return m, d
}

// Stale records an outcome that does not apply, and why, in both
// Decision.Reason and Decision.Why; the state is unchanged.
func Stale(m Model, o Outcome, why string) (Model, Decision) {
	if why == "" {
		why = "the outcome does not apply to the model"
	}
	return m, Decision{Event: EventStale, Rule: "stale", UID: o.AttemptUID, Kind: o.Kind, Message: o.Message, Reason: why, Why: why}
}

// Success ends the running attempt successfully at now: the streak and
// status_message are cleared and the next run is next(now), or nothing for
// an on-demand model. last_error is kept for display.
func Success(m Model, now time.Time) (Model, Decision) { return success(m, now, now) }

// success ends the attempt at its arrival at and plans from now.
func success(m Model, at, now time.Time) (Model, Decision) {
	d := Decision{Event: EventSuccess, Rule: "success", UID: m.AttemptUID, AttemptNo: m.AttemptNo}
	m.idle()
	m.AttemptNo = 0
	m.ConsecutiveFailures = 0
	m.FailingSince = time.Time{}
	m.LastSuccessAt = at
	m.RefreshAt = m.nextOrZero(now)
	d.Why = "succeeded; next run " + ts(m.RefreshAt)
	return m, d
}

// Status records the running attempt's progress text and nothing else; it
// lasts until the attempt ends.
func Status(m Model, message string) (Model, Decision) {
	m.StatusMessage = message
	return m, Decision{Event: EventStatus, Rule: "status", UID: m.AttemptUID, AttemptNo: m.AttemptNo, Message: message, Why: "progress: " + message}
}

// Failed ends the running attempt with failure f at now (status_message
// cleared) and decides, by the first rule of DESIGN.md section 3 that
// applies, whether to disable, wait for the next round, or retry (aligned
// with the schedule or not). A disable's reason is f.UserMessage if set,
// else the policy's DisabledReason; either is cut to the policy's bound
// (Limits.MaxReasonBytes).
func Failed(m Model, f Failure, now time.Time) (Model, Decision) {
	return fail(m, f, now, now)
}

// fail ends the attempt with f at its arrival at: the streak, the last
// error, give_up_after and the disable are judged at at; the plans (the
// next occurrence, the retry time) count from now.
func fail(m Model, f Failure, at, now time.Time) (Model, Decision) {
	p := m.Policy
	n := m.AttemptNo
	d := Decision{Event: EventFailure, UID: m.AttemptUID, AttemptNo: n, Kind: f.Kind, Message: f.Message}
	m.idle()
	m.ConsecutiveFailures++
	if m.FailingSince.IsZero() {
		m.FailingSince = at
	}
	m.LastError = &LastError{Kind: f.Kind, Message: f.Message, At: at}
	next, hasNext := m.Next(now)

	disable := func(rule, why string) (Model, Decision) {
		m.RefreshAt = time.Time{}
		m.DisabledAt = at
		if f.UserMessage != "" {
			m.DisabledReason = p.fitReason(f.UserMessage)
		} else {
			m.DisabledReason = p.DisabledReason(m.ConsecutiveFailures, f.Message, m.FailingSince)
		}
		d.Plan, d.Rule, d.Why, d.Reason = DecisionDisable, rule, why, m.DisabledReason
		return m, d
	}

	if ok, why := p.Retryable(f.Kind, f.Retryable); !ok {
		return disable("failure.1 not retryable", why)
	}
	if giveUp := time.Duration(p.GiveUpAfter); giveUp > 0 {
		if streak := at.Sub(m.FailingSince); streak >= giveUp {
			return disable("failure.2 give_up_after", fmt.Sprintf("failing for %s since %s, give_up_after is %s", streak, ts(m.FailingSince), p.GiveUpAfter))
		}
	}
	if max := p.MaxRetries(); n > max {
		if p.OnExhausted == ExhaustedWaitNext && hasNext {
			m.AttemptNo = 0
			m.RefreshAt = next
			d.Plan, d.Rule = DecisionWaitNext, "failure.3 exhausted, wait_next"
			d.Why = fmt.Sprintf("attempt %d > max_retries %d; new round at the next occurrence %s", n, max, ts(next))
			return m, d
		}
		why := fmt.Sprintf("attempt %d > max_retries %d", n, max)
		if p.OnExhausted == ExhaustedWaitNext {
			why += " and the schedule has no next occurrence"
		}
		return disable("failure.3 exhausted", why)
	}
	delay := p.Delay(n, m.ID, m.ConsecutiveFailures, m.FailingSince)
	r := now.Add(delay)
	d.Delay = delay
	if p.Aligned() && hasNext && r.Add(time.Duration(p.Timeout)).After(next) {
		m.RefreshAt = next
		d.Plan, d.Rule = DecisionRetryAligned, "failure.4 retry aligned"
		d.Why = fmt.Sprintf("retry %d after %s would run until %s, past the next occurrence %s, which counts as the retry",
			n, delay, ts(r.Add(time.Duration(p.Timeout))), ts(next))
		return m, d
	}
	m.RefreshAt = r
	d.Plan, d.Rule = DecisionRetry, "failure.4 retry"
	d.Why = fmt.Sprintf("retry %d of %d after %s at %s", n, p.MaxRetries(), delay, ts(r))
	return m, d
}

// Trigger asks for a refresh now ("the model changed"): disabled state,
// counters and streak are cleared, a running attempt is superseded (its
// outcome becomes stale, its status_message is cleared), and refresh_at =
// now. A paused model stays paused and starts when resumed; the decision
// says so. Trigger always changes the model.
func Trigger(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventTrigger, Rule: "trigger", Why: "refresh requested"}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
		d.Why += "; running attempt " + m.AttemptUID + " superseded"
	}
	m.idle()
	m.clearStreak()
	m.RefreshAt = now
	if m.Paused {
		d.Why += "; the model stays paused and starts when resumed"
	}
	return m, d
}

// Enable re-enables a disabled model: counters and streak are cleared and
// the next run is next(now). On a model that is not disabled it changes
// nothing and sets Decision.Unchanged.
func Enable(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventEnable, Rule: "enable"}
	if !m.Disabled() {
		d.Why, d.Unchanged = "not disabled: nothing changes", true
		return m, d
	}
	m.clearStreak()
	m.RefreshAt = m.nextOrZero(now)
	d.Why = "enabled; next run " + ts(m.RefreshAt)
	return m, d
}

// Pause stops new starts; a running attempt still finishes and its outcome
// still applies. On a paused model it changes nothing and sets
// Decision.Unchanged.
func Pause(m Model) (Model, Decision) {
	if m.Paused {
		return m, Decision{Event: EventPause, Rule: "pause", Why: "already paused: nothing changes", Unchanged: true}
	}
	m.Paused = true
	return m, Decision{Event: EventPause, Rule: "pause", Why: "no new attempt starts until resumed"}
}

// Resume lifts a pause. An overdue refresh_at is due at once: missed
// occurrences coalesce into one run. On a model that is not paused it
// changes nothing and sets Decision.Unchanged.
func Resume(m Model, now time.Time) (Model, Decision) {
	if !m.Paused {
		return m, Decision{Event: EventResume, Rule: "resume", Why: "not paused: nothing changes", Unchanged: true}
	}
	m.Paused = false
	d := Decision{Event: EventResume, Rule: "resume", Why: "resumed; next look at " + ts(m.RefreshAt)}
	if !m.RefreshAt.IsZero() && !m.RefreshAt.After(now) && !m.Running() {
		d.Why = "resumed; overdue run " + ts(m.RefreshAt) + " starts now"
	}
	return m, d
}

// Cancel drops the running attempt (its outcome becomes stale, its
// status_message is cleared) and any pending retry: attempt_no = 0,
// refresh_at = next(now). It is not a failure. A disabled model has
// nothing to cancel, nor has a model with nothing running and nothing
// pending (idle, attempt_no 0, next run already next(now)): for them
// Decision.Unchanged is set and the model is returned as it was.
func Cancel(m Model, now time.Time) (Model, Decision) {
	d := Decision{Event: EventCancel, Rule: "cancel"}
	if m.Disabled() {
		d.Why, d.Unchanged = "disabled: nothing to cancel", true
		return m, d
	}
	next := m.nextOrZero(now)
	if !m.Running() && m.AttemptNo == 0 && m.RefreshAt.Equal(next) {
		d.Why, d.Unchanged = "nothing running or pending: nothing changes", true
		return m, d
	}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
	}
	m.idle()
	m.AttemptNo = 0
	m.RefreshAt = next
	d.Why = "cancelled; next run " + ts(m.RefreshAt)
	return m, d
}

// Delete removes the model; a running attempt is over (its outcome becomes
// stale, and its worker is told).
func Delete(m Model) (Model, Decision) {
	d := Decision{Event: EventDelete, Rule: "delete", Why: "deleted"}
	if m.Running() {
		d.UID, d.AttemptNo, d.Deadline = m.AttemptUID, m.AttemptNo, m.DeadlineAt
		d.Why += "; running attempt " + m.AttemptUID + " is over"
	}
	return m, d
}
