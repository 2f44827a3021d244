package refresh

import (
	"fmt"
	"time"
)

// This file holds docs/transitions.md's outcomes: how a worker's outcome is
// fenced by the attempt uid, and the Success, Failure, Status and Stale
// transitions; with section 6, the unchanged success and the check of the
// fields an outcome's new types bring (the snooze itself is in snooze.go).

// ApplyOutcome applies a worker's outcome, fenced by the attempt uid: an
// outcome for another attempt, for an idle model, or arriving at or after
// the deadline is stale and changes nothing; Decision.Reason says which.
//
// The outcome counts at its arrival, o.ArrivedAt (now if zero): lateness is
// judged then and the attempt ends then. Plans (the next run, a retry
// delay, a snooze's For) count from now, the time of the write.
//
// A success with Unchanged keeps last_changed_at; a success that ends a
// freshness episode carries the freshness_restored in Decision.Also. A
// snooze is applied by the snooze transition (snooze.go). ApplyOutcome
// does not check the fields: the decoder refuses a malformed outcome
// first (CheckOutcome).
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
		m, d = success(m, o.Unchanged, at, now)
	case OutcomeSnooze:
		until := o.Until
		if o.For > 0 {
			until = now.Add(time.Duration(o.For))
		}
		m, d = snoozed(m, until, at, now)
		if d.Event == EventSnooze {
			d.Message = o.Message
		}
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
		if d.Also != nil {
			d.Also.At = at
		}
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
// an on-demand model. last_error is kept for display. last_success_at and
// last_changed_at are now; snoozed_since is cleared; an open freshness
// episode ends (Decision.Also is its freshness_restored).
func Success(m Model, now time.Time) (Model, Decision) { return success(m, false, now, now) }

// SuccessUnchanged is Success for a success whose data did not change:
// last_changed_at keeps its value, so no dependent is triggered.
func SuccessUnchanged(m Model, now time.Time) (Model, Decision) {
	return success(m, true, now, now)
}

// success ends the attempt at its arrival at and plans from now.
func success(m Model, unchanged bool, at, now time.Time) (Model, Decision) {
	d := Decision{Event: EventSuccess, Rule: "success", UID: m.AttemptUID, AttemptNo: m.AttemptNo, Recovered: m.ConsecutiveFailures > 0}
	m.idle()
	m.AttemptNo = 0
	m.ConsecutiveFailures = 0
	m.FailingSince = time.Time{}
	m.SnoozedSince = time.Time{}
	m.LastSuccessAt = at
	if unchanged {
		d.DataUnchanged, d.Rule = true, "success unchanged"
	} else {
		m.LastChangedAt = at
	}
	m.planScheduled(m.nextOrZero(now))
	d.Why = "succeeded; " + nextRunWhy(m.RefreshAt)
	if unchanged {
		d.Why = "succeeded, data unchanged (last_changed_at stays " + ts(m.LastChangedAt) + "); " + nextRunWhy(m.RefreshAt)
	}
	if restored, rd := FreshnessRestored(m, at); rd.Event != "" {
		m, d.Also = restored, &rd
	}
	return m, d
}

// Status records the running attempt's progress text and nothing else; it
// lasts until the attempt ends.
func Status(m Model, message string) (Model, Decision) {
	m.StatusMessage = message
	return m, Decision{Event: EventStatus, Rule: "status", UID: m.AttemptUID, AttemptNo: m.AttemptNo, Message: message, Why: "progress: " + message}
}

// Failed ends the running attempt with failure f at now (status_message
// cleared) and decides, by the first rule of docs/transitions.md that
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
		m.planScheduled(time.Time{})
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
			m.SnoozedSince = time.Time{}
			m.planScheduled(next)
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
		m.planScheduled(next)
		d.Plan, d.Rule = DecisionRetryAligned, "failure.4 retry aligned"
		d.Why = fmt.Sprintf("retry %d after %s would run until %s, past the next occurrence %s, which counts as the retry",
			n, delay, ts(r.Add(time.Duration(p.Timeout))), ts(next))
		return m, d
	}
	m.planOffSchedule(r)
	d.Plan, d.Rule = DecisionRetry, "failure.4 retry"
	d.Why = fmt.Sprintf("retry %d of %d after %s at %s", n, p.MaxRetries(), delay, ts(r))
	return m, d
}

// CheckOutcome checks the fields of a decoded outcome that section 6 adds
// and returns the broken rule, named by its field, e.g. "until: must be
// after 2026-03-02T10:00:00Z, got 2026-03-02T09:00:00Z", or "" for a
// good outcome. now is when the outcome arrived (Outcome.ArrivedAt): a
// snooze must ask for a time after it. The rules:
//
//   - a snooze sets exactly one of until and for; until is after now; for
//     is > 0;
//   - until and for go with a snooze only, unchanged with a success only.
//
// The queue's decoder calls it after the types of the members are read
// (it reads until as RFC 3339 and for as a Duration, and reports those
// errors itself) and dead-letters an outcome it refuses, with the rule as
// the reason.
func CheckOutcome(o Outcome, now time.Time) string {
	hasUntil, hasFor := !o.Until.IsZero(), o.For != 0
	if o.Type != OutcomeSnooze {
		switch {
		case hasUntil:
			return "until: only a snooze outcome takes it"
		case hasFor:
			return "for: only a snooze outcome takes it"
		case o.Unchanged && o.Type != OutcomeSuccess:
			return "unchanged: only a success outcome takes it"
		}
		return ""
	}
	switch {
	case o.Unchanged:
		return "unchanged: only a success outcome takes it"
	case hasUntil && hasFor:
		return "until: a snooze sets until or for, not both"
	case !hasUntil && !hasFor:
		return "until: a snooze needs until or for"
	case hasFor && o.For < 0:
		return fmt.Sprintf("for: must be > 0, got %s", o.For)
	case hasUntil && !o.Until.After(now):
		return fmt.Sprintf("until: must be after %s, got %s", ts(now), ts(o.Until))
	}
	return ""
}
