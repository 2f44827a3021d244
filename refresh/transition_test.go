package refresh_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The transition tests use the schedule of docs/transitions.md: 06:00 and 16:00
// Europe/Paris, that is 05:00 and 15:00 UTC in winter. On 2026-03-02 the
// occurrences around the tests are:
//
//	2026-03-02T05:00:00Z  occMorning
//	2026-03-02T15:00:00Z  occAfternoon
//	2026-03-03T05:00:00Z  occTomorrow
const parisSchedule = `"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16"`

// endedSchedule had its only occurrence before every time used here.
const endedSchedule = `"schedule": "DTSTART:20260101T050000Z\nRRULE:FREQ=DAILY;COUNT=1"`

var (
	occMorning   = time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	occAfternoon = time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	occTomorrow  = time.Date(2026, 3, 3, 5, 0, 0, 0, time.UTC)
	// morning is a time between two occurrences, far enough from the next
	// one (15:00) that a short retry does not align.
	morning = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	// modelCreated is before every other time used here.
	modelCreated = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
)

var null time.Time // a null time field

// mustPolicy parses a policy as docs/policy.md writes it, with the default
// limits.
func mustPolicy(t testing.TB, js string) refresh.Policy {
	t.Helper()
	p, err := refresh.ParsePolicy([]byte(js), refresh.DefaultLimits())
	require.NoError(t, err, "policy %s", js)
	return p
}

// transitionModel returns an idle model with nothing planned and the given
// policy.
func transitionModel(t testing.TB, policy string) refresh.Model {
	t.Helper()
	return refresh.Model{ID: "m1", Queue: "default", Policy: mustPolicy(t, policy), CreatedAt: modelCreated}
}

// runningAttempt starts attempt n of m with uid at started, through Start.
func runningAttempt(t testing.TB, m refresh.Model, uid string, n int, started time.Time) refresh.Model {
	t.Helper()
	m.AttemptNo = n - 1
	m.RefreshAt = started
	m, d := refresh.Start(m, uid, started)
	require.Equal(t, refresh.EventStart, d.Event)
	return m
}

// inUTC returns m with every time in UTC, so that two models that mean the
// same instants compare equal (the schedule returns times in its own zone).
func inUTC(m refresh.Model) refresh.Model {
	for _, p := range []*time.Time{&m.CreatedAt, &m.RefreshAt, &m.DeadlineAt, &m.StartedAt,
		&m.FailingSince, &m.LastSuccessAt, &m.DisabledAt} {
		*p = p.UTC()
	}
	if m.LastError != nil {
		e := *m.LastError
		e.At = e.At.UTC()
		m.LastError = &e
	}
	return m
}

// requireModel requires got to be want, field by field, times compared as
// instants.
func requireModel(t testing.TB, want, got refresh.Model) {
	t.Helper()
	require.Equal(t, inUTC(want), inUTC(got))
}

func requireTime(t testing.TB, want, got time.Time, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.UTC(), got.UTC(), msgAndArgs...)
}

func TestCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		policy  string
		trigger bool
		now     time.Time
		want    time.Time
	}{
		{name: "first occurrence after now", policy: `{` + parisSchedule + `}`,
			now: occMorning.Add(-time.Hour), want: occMorning},
		{name: "an occurrence exactly at now counts", policy: `{` + parisSchedule + `}`,
			now: occMorning, want: occMorning},
		{name: "one ns after an occurrence goes to the next", policy: `{` + parisSchedule + `}`,
			now: occMorning.Add(time.Nanosecond), want: occAfternoon},
		{name: "trigger with a schedule: now", policy: `{` + parisSchedule + `}`, trigger: true,
			now: morning, want: morning},
		{name: "trigger without a schedule: now", policy: `{}`, trigger: true,
			now: morning, want: morning},
		{name: "no schedule, no trigger: null", policy: `{}`,
			now: morning, want: null},
		{name: "finished schedule, no trigger: null", policy: `{` + endedSchedule + `}`,
			now: morning, want: null},
		{name: "finished schedule with trigger: now", policy: `{` + endedSchedule + `}`, trigger: true,
			now: morning, want: morning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := refresh.Model{ID: "m1", Queue: "default", Policy: mustPolicy(t, tt.policy)}
			got, d := refresh.Create(in, tt.trigger, tt.now)

			want := in
			want.CreatedAt = tt.now
			want.RefreshAt = tt.want
			requireModel(t, want, got)
			require.Equal(t, refresh.EventCreate, d.Event)
			require.Equal(t, "create", d.Rule)
			require.NotEmpty(t, d.Why)
			require.Empty(t, d.Plan)
			require.Empty(t, d.UID)
		})
	}

	t.Run("keeps CreatedAt and resets the state", func(t *testing.T) {
		t.Parallel()
		in := transitionModel(t, `{`+parisSchedule+`}`)
		in.AttemptNo, in.AttemptUID, in.ConsecutiveFailures, in.Paused = 3, "old", 2, true
		got, _ := refresh.Create(in, false, morning)

		want := in
		want.State = refresh.State{RefreshAt: occAfternoon}
		requireModel(t, want, got)
	})
}

func TestStart(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "45m"}`
	now := occMorning
	tests := []struct {
		name  string
		state func(t *testing.T, m *refresh.Model)
		start bool
	}{
		{name: "refresh_at exactly now", state: func(t *testing.T, m *refresh.Model) { m.RefreshAt = now }, start: true},
		{name: "refresh_at in the past", state: func(t *testing.T, m *refresh.Model) { m.RefreshAt = now.Add(-48 * time.Hour) }, start: true},
		{name: "retry of a failing model", start: true, state: func(t *testing.T, m *refresh.Model) {
			m.RefreshAt, m.AttemptNo, m.ConsecutiveFailures, m.FailingSince = now, 2, 2, now.Add(-time.Hour)
			m.LastError = &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: now.Add(-time.Minute)}
		}},
		{name: "refresh_at one ns in the future", state: func(t *testing.T, m *refresh.Model) { m.RefreshAt = now.Add(time.Nanosecond) }},
		{name: "refresh_at null", state: func(t *testing.T, m *refresh.Model) { m.RefreshAt = null }},
		{name: "running", state: func(t *testing.T, m *refresh.Model) {
			*m = runningAttempt(t, *m, "u0", 1, now.Add(-10*time.Minute))
			m.RefreshAt = now // as if its deadline were due
		}},
		{name: "paused", state: func(t *testing.T, m *refresh.Model) { m.RefreshAt, m.Paused = now, true }},
		{name: "disabled", state: func(t *testing.T, m *refresh.Model) {
			m.RefreshAt, m.DisabledAt, m.DisabledReason = now, now.Add(-time.Hour), "gone"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := transitionModel(t, policy)
			tt.state(t, &before)
			before.StatusMessage = "old progress"

			got, d := refresh.Start(before, "u1", now)
			if !tt.start {
				requireModel(t, before, got)
				require.Equal(t, refresh.Decision{}, d)
				require.False(t, got.CanStart(now))
				return
			}
			require.True(t, before.CanStart(now))
			want := before
			want.AttemptNo = before.AttemptNo + 1
			want.AttemptUID = "u1"
			want.StartedAt = now
			want.DeadlineAt = now.Add(45 * time.Minute)
			want.RefreshAt = want.DeadlineAt
			want.StatusMessage = "" // progress of the previous attempt is gone
			requireModel(t, want, got)
			require.Equal(t, refresh.Decision{
				Event: refresh.EventStart, Rule: "start", UID: "u1", AttemptNo: want.AttemptNo, Why: d.Why,
			}, d)
			require.NotEmpty(t, d.Why)
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}}`
	deadline := morning // of an attempt started at 09:00
	tests := []struct {
		name   string
		policy string
		n      int
		// started is when attempt n started; zero: 09:00.
		started time.Time
		state   func(*refresh.Model)
		now     time.Time
		// want; plan "" means no timeout.
		plan, rule string
		refreshAt  time.Time
	}{
		{name: "one ns before the deadline", n: 1, now: deadline.Add(-time.Nanosecond)},
		{name: "exactly at the deadline", n: 1, now: deadline,
			plan: refresh.DecisionRetry, rule: "failure.4 retry", refreshAt: deadline},
		{name: "after the deadline: a failure at now", n: 2, now: deadline.Add(2 * time.Hour),
			plan: refresh.DecisionRetry, rule: "failure.4 retry", refreshAt: deadline.Add(2*time.Hour + time.Minute)},
		{name: "paused model still times out", n: 1, now: deadline,
			state: func(m *refresh.Model) { m.Paused = true },
			plan:  refresh.DecisionRetry, rule: "failure.4 retry", refreshAt: deadline},
		{name: "aligned like any failure", n: 1,
			started: occAfternoon.Add(-90 * time.Minute), now: occAfternoon.Add(-30 * time.Minute),
			plan: refresh.DecisionRetryAligned, rule: "failure.4 retry aligned", refreshAt: occAfternoon},
		{name: "exhausted like any failure", n: 4, now: deadline,
			plan: refresh.DecisionDisable, rule: "failure.3 exhausted"},
		{name: "timeout in non_retryable", n: 1, now: deadline,
			policy: `{"timeout": "1h", "retry": {"delays": ["0s"], "non_retryable": ["timeout"]}}`,
			plan:   refresh.DecisionDisable, rule: "failure.1 not retryable"},
		{name: "idle model never times out", now: deadline.Add(time.Hour),
			state: func(m *refresh.Model) { m.RefreshAt = deadline }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := policy
			if tt.policy != "" {
				policy = tt.policy
			}
			before := transitionModel(t, policy)
			if tt.n > 0 {
				started := tt.started
				if started.IsZero() {
					started = deadline.Add(-time.Hour)
				}
				before = runningAttempt(t, before, "u1", tt.n, started)
			}
			if tt.state != nil {
				tt.state(&before)
			}
			if before.Running() {
				before.StatusMessage = "90%"
			}

			got, d := refresh.Timeout(before, tt.now)
			if tt.plan == "" {
				requireModel(t, before, got)
				require.Equal(t, refresh.Decision{}, d)
				require.False(t, before.TimedOut(tt.now))
				return
			}
			require.True(t, before.TimedOut(tt.now))
			require.Equal(t, refresh.EventTimeout, d.Event)
			require.Equal(t, tt.plan, d.Plan)
			require.Equal(t, tt.rule, d.Rule)
			require.Equal(t, "u1", d.UID)
			require.Equal(t, tt.n, d.AttemptNo)
			require.Equal(t, refresh.KindTimeout, d.Kind)
			require.Equal(t, fmt.Sprintf("attempt %d did not finish within 1h", tt.n), d.Message)
			require.NotEmpty(t, d.Why)

			require.False(t, got.Running())
			require.Empty(t, got.StatusMessage, "the progress text ends with its attempt")
			require.Equal(t, 1, got.ConsecutiveFailures)
			requireTime(t, tt.now, got.FailingSince)
			require.Equal(t, &refresh.LastError{Kind: refresh.KindTimeout, Message: d.Message, At: tt.now}, got.LastError)
			requireTime(t, tt.refreshAt, got.RefreshAt)
			require.Equal(t, tt.plan == refresh.DecisionDisable, got.Disabled())
			require.Equal(t, before.Paused, got.Paused)
		})
	}
}

// TestTimeoutMessage checks that a timeout names the attempt's own
// timeout, deadline_at - started_at, even after the policy was edited.
func TestTimeoutMessage(t *testing.T) {
	t.Parallel()
	started := morning
	tests := []struct {
		name       string
		timeout    string // of the policy when the attempt starts
		editedTo   string // of the policy when it times out; "": not edited
		wantWithin string
	}{
		{name: "unchanged policy", timeout: "45m", wantWithin: "45m"},
		{name: "timeout shortened after the start", timeout: "2h", editedTo: "5m", wantWithin: "2h"},
		{name: "timeout lengthened after the start", timeout: "1m30s", editedTo: "1h", wantWithin: "1m30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := runningAttempt(t, transitionModel(t, `{"timeout": "`+tt.timeout+`"}`), "u1", 1, started)
			if tt.editedTo != "" {
				m.Policy = mustPolicy(t, `{"timeout": "`+tt.editedTo+`"}`)
			}
			got, d := refresh.Timeout(m, m.DeadlineAt)
			require.Equal(t, refresh.EventTimeout, d.Event)
			want := "attempt 1 did not finish within " + tt.wantWithin
			require.Equal(t, want, d.Message)
			require.Equal(t, want, got.LastError.Message)
		})
	}
}

// TestApplyOutcomeFencing checks that only an outcome of the current
// attempt, arriving before its deadline, applies.
func TestApplyOutcomeFencing(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	started := morning.Add(-time.Hour)
	deadline := morning
	success := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
	failure := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"}
	status := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "50%"}
	with := func(o refresh.Outcome, f func(*refresh.Outcome)) refresh.Outcome { f(&o); return o }

	tests := []struct {
		name  string
		state func(t *testing.T, m refresh.Model) refresh.Model
		o     refresh.Outcome
		now   time.Time
		want  string // event
		// reason is Decision.Reason of a stale outcome.
		reason string
	}{
		{name: "current uid before the deadline", o: success, now: started.Add(time.Minute), want: refresh.EventSuccess},
		{name: "one ns before the deadline applies", o: success, now: deadline.Add(-time.Nanosecond), want: refresh.EventSuccess},
		{name: "failure one ns before the deadline applies", o: failure, now: deadline.Add(-time.Nanosecond), want: refresh.EventFailure},
		{name: "status one ns before the deadline applies", o: status, now: deadline.Add(-time.Nanosecond), want: refresh.EventStatus},
		{name: "success exactly at the deadline is late", o: success, now: deadline, want: refresh.EventStale,
			reason: "attempt u1 is over: its outcome arrived at 2026-03-02T10:00:00Z, at or after its deadline 2026-03-02T10:00:00Z, and the timeout wins"},
		{name: "failure exactly at the deadline is late", o: failure, now: deadline, want: refresh.EventStale,
			reason: "attempt u1 is over: its outcome arrived at 2026-03-02T10:00:00Z, at or after its deadline 2026-03-02T10:00:00Z, and the timeout wins"},
		{name: "status exactly at the deadline is late", o: status, now: deadline, want: refresh.EventStale,
			reason: "attempt u1 is over: its outcome arrived at 2026-03-02T10:00:00Z, at or after its deadline 2026-03-02T10:00:00Z, and the timeout wins"},
		{name: "after the deadline is late", o: success, now: deadline.Add(time.Hour), want: refresh.EventStale,
			reason: "attempt u1 is over: its outcome arrived at 2026-03-02T11:00:00Z, at or after its deadline 2026-03-02T10:00:00Z, and the timeout wins"},
		{name: "another uid", o: with(success, func(o *refresh.Outcome) { o.AttemptUID = "u0" }),
			now: started.Add(time.Minute), want: refresh.EventStale, reason: "attempt u0 is over: the current attempt is u1"},
		{name: "no uid", o: with(failure, func(o *refresh.Outcome) { o.AttemptUID = "" }),
			now: started.Add(time.Minute), want: refresh.EventStale, reason: "the outcome names no attempt"},
		{name: "unknown outcome type", o: with(success, func(o *refresh.Outcome) { o.Type = "done" }),
			now: started.Add(time.Minute), want: refresh.EventStale, reason: `unknown outcome type "done"`},
		{name: "idle model", o: success, now: started.Add(time.Minute), want: refresh.EventStale,
			reason: "attempt u1 is over: the model has no running attempt",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m, _ = refresh.Cancel(m, started)
				return m
			}},
		{name: "idle model, empty uid", o: with(success, func(o *refresh.Outcome) { o.AttemptUID = "" }),
			now: started.Add(time.Minute), want: refresh.EventStale, reason: "the outcome names no attempt",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m, _ = refresh.Cancel(m, started)
				return m
			}},
		{name: "duplicate success", o: success, now: started.Add(2 * time.Minute), want: refresh.EventStale,
			reason: "attempt u1 is over: the model has no running attempt",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m, d := refresh.ApplyOutcome(m, success, started.Add(time.Minute))
				require.Equal(t, refresh.EventSuccess, d.Event)
				return m
			}},
		{name: "failure after success", o: failure, now: started.Add(2 * time.Minute), want: refresh.EventStale,
			reason: "attempt u1 is over: the model has no running attempt",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m, d := refresh.ApplyOutcome(m, success, started.Add(time.Minute))
				require.Equal(t, refresh.EventSuccess, d.Event)
				return m
			}},
		{name: "outcome of the previous attempt after a retry started", o: failure, now: started.Add(3 * time.Minute),
			want: refresh.EventStale, reason: "attempt u1 is over: the current attempt is u2",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m, d := refresh.ApplyOutcome(m, failure, started.Add(time.Minute))
				require.Equal(t, refresh.DecisionRetry, d.Plan)
				return runningAttempt(t, m, "u2", 2, started.Add(2*time.Minute))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
			if tt.state != nil {
				before = tt.state(t, before)
			}
			got, d := refresh.ApplyOutcome(before, tt.o, tt.now)
			require.Equal(t, tt.want, d.Event, d.Why)
			require.NotEmpty(t, d.Why)
			if tt.want != refresh.EventStale {
				require.NotEqual(t, inUTC(before), inUTC(got))
				return
			}
			requireModel(t, before, got)
			require.Equal(t, "stale", d.Rule)
			require.Equal(t, tt.reason, d.Reason)
			require.Equal(t, tt.reason, d.Why)
			require.Equal(t, tt.o.AttemptUID, d.UID)
			require.Equal(t, tt.o.Kind, d.Kind)
			require.Empty(t, d.Plan)
		})
	}
}

// TestApplyOutcomeFailureFields checks that a failure outcome reaches the
// failure rules as sent: retryable defaults to true, user_message becomes
// the disabled reason.
func TestApplyOutcomeFailureFields(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	tests := []struct {
		name       string
		retryable  *bool
		userMsg    string
		wantPlan   string
		wantReason string
	}{
		{name: "retryable absent means true", wantPlan: refresh.DecisionRetry},
		{name: "retryable true", retryable: &yes, wantPlan: refresh.DecisionRetry},
		{name: "retryable false", retryable: &no, wantPlan: refresh.DecisionDisable,
			wantReason: "Refresh disabled after 1 failed attempt(s)."},
		{name: "user_message", retryable: &no, userMsg: "Your source is gone.", wantPlan: refresh.DecisionDisable,
			wantReason: "Your source is gone."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := runningAttempt(t, transitionModel(t, `{}`), "u1", 1, morning)
			o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeFailure,
				Kind: "http_503", Message: "upstream 503", Retryable: tt.retryable, UserMessage: tt.userMsg}
			got, d := refresh.ApplyOutcome(m, o, morning.Add(time.Minute))
			require.Equal(t, refresh.EventFailure, d.Event)
			require.Equal(t, tt.wantPlan, d.Plan)
			require.Equal(t, "http_503", d.Kind)
			require.Equal(t, "upstream 503", d.Message)
			require.Equal(t, tt.wantReason, d.Reason)
			require.Equal(t, tt.wantReason, got.DisabledReason)
			require.Equal(t, &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: morning.Add(time.Minute)}, got.LastError)
		})
	}
}

func TestSuccess(t *testing.T) {
	t.Parallel()
	const scheduled = `{` + parisSchedule + `, "timeout": "1h"}`
	tests := []struct {
		name    string
		policy  string
		started time.Time
		now     time.Time
		want    time.Time // refresh_at
		streak  bool      // the model was failing
	}{
		{name: "next occurrence", policy: scheduled, started: occMorning, now: occMorning.Add(10 * time.Minute), want: occAfternoon},
		{name: "one ns before an occurrence: that occurrence", policy: scheduled,
			started: occAfternoon.Add(-30 * time.Minute), now: occAfternoon.Add(-time.Nanosecond), want: occAfternoon},
		{name: "exactly at an occurrence: the following one", policy: scheduled,
			started: occAfternoon.Add(-30 * time.Minute), now: occAfternoon, want: occTomorrow},
		{name: "clears the failure streak", policy: scheduled, started: morning, now: morning.Add(time.Minute),
			want: occAfternoon, streak: true},
		{name: "on demand: null", policy: `{}`, started: morning, now: morning.Add(time.Minute), want: null, streak: true},
		{name: "finished schedule: null", policy: `{` + endedSchedule + `}`, started: morning, now: morning.Add(time.Minute), want: null},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := transitionModel(t, tt.policy)
			n := 1
			if tt.streak {
				n = 3
				before.ConsecutiveFailures = 2
				before.FailingSince = tt.started.Add(-time.Hour)
				before.LastError = &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: tt.started.Add(-time.Minute)}
			}
			before = runningAttempt(t, before, "u1", n, tt.started)
			before, _ = refresh.Status(before, "90%")

			got, d := refresh.ApplyOutcome(before, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, tt.now)

			want := before
			want.AttemptUID, want.StartedAt, want.DeadlineAt = "", null, null
			want.AttemptNo = 0
			want.ConsecutiveFailures = 0
			want.FailingSince = null
			want.LastSuccessAt = tt.now
			want.LastChangedAt = tt.now // every success but an unchanged one (docs/policy.md)
			want.RefreshAt = tt.want
			want.StatusMessage = "" // the progress text ends with its attempt
			// last_error stays for display.
			requireModel(t, want, got)
			// A success that ends a streak of failures is published as
			// recovered too.
			require.Equal(t, refresh.Decision{Event: refresh.EventSuccess, Rule: "success", UID: "u1", AttemptNo: n, Why: d.Why, Recovered: tt.streak}, d)
			require.NotEmpty(t, d.Why)
		})
	}
}

// failureCase is one row of TestFailed: a running attempt n fails with f at
// now.
type failureCase struct {
	name   string
	policy string
	// n is the attempt_no of the failing attempt; failures and since are the
	// streak before it (since zero: none).
	n        int
	failures int
	since    time.Time
	f        refresh.Failure
	now      time.Time

	plan, rule string
	refreshAt  time.Time
	attemptNo  int
	delay      time.Duration
	reason     string // disabled_reason, for a disable
}

// threeDelays gives max_retries 3: retry 1 waits 0s, 2 waits 1m, 3 waits 5m.
const threeDelays = `{"delays": ["0s", "1m", "5m"]}`

// failPolicy returns a policy with the daily schedule, a timeout of 1h, the
// given retry object and more members.
func failPolicy(retry, members string) string {
	s := `{` + parisSchedule + `, "timeout": "1h", "retry": ` + retry
	if members != "" {
		s += ", " + members
	}
	return s + "}"
}

var http503 = refresh.Failure{Kind: "http_503", Message: "upstream 503", Retryable: true}

func failureCases() []failureCase {
	const (
		retry   = refresh.DecisionRetry
		aligned = refresh.DecisionRetryAligned
		waitNxt = refresh.DecisionWaitNext
		disable = refresh.DecisionDisable
		rule1   = "failure.1 not retryable"
		rule2   = "failure.2 give_up_after"
		rule3   = "failure.3 exhausted"
		rule3w  = "failure.3 exhausted, wait_next"
		rule4   = "failure.4 retry"
		rule4a  = "failure.4 retry aligned"
		week    = 7 * 24 * time.Hour
	)
	kind := func(k string) refresh.Failure {
		return refresh.Failure{Kind: k, Message: k + " failed", Retryable: true}
	}
	notRetryable := refresh.Failure{Kind: "http_503", Message: "upstream 503", Retryable: false}
	// The default message carries no worker text: msg, the failure's
	// message, is not in it.
	defaultReason := func(attempts int, msg string) string {
		return fmt.Sprintf("Refresh disabled after %d failed attempt(s).", attempts)
	}
	return []failureCase{
		// Rule 1: not retryable.
		{name: "1: retryable false", policy: failPolicy(threeDelays, ""), n: 1, f: notRetryable, now: morning,
			plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "upstream 503")},
		{name: "1: kind in the default non_retryable", policy: failPolicy(threeDelays, ""), n: 1, f: kind("not_found"), now: morning,
			plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "not_found failed")},
		{name: "1: kind in non_retryable", policy: failPolicy(`{"delays": ["0s"], "non_retryable": ["quota"]}`, ``),
			n: 1, f: kind("quota"), now: morning, plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "quota failed")},
		{name: "1: kind not in retry_on", policy: failPolicy(`{"delays": ["0s"], "retry_on": ["http_503"]}`, ``),
			n: 1, f: kind("http_500"), now: morning, plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "http_500 failed")},
		{name: "1: kind in retry_on retries", policy: failPolicy(`{"delays": ["0s"], "retry_on": ["http_503"]}`, ``),
			n: 1, f: kind("http_503"), now: morning, plan: retry, rule: rule4, refreshAt: morning, attemptNo: 1},
		{name: "1: kind in retry_on and in non_retryable: not retryable",
			policy: failPolicy(`{"delays": ["0s"], "retry_on": ["validation"], "non_retryable": ["validation"]}`, ``),
			n:      1, f: kind("validation"), now: morning, plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "validation failed")},
		{name: "1: retry_on drops the default non_retryable: validation retries",
			policy: failPolicy(`{"delays": ["0s"], "retry_on": ["validation"]}`, ``),
			n:      1, f: kind("validation"), now: morning, plan: retry, rule: rule4, refreshAt: morning, attemptNo: 1},
		{name: "1: retry_on drops the default non_retryable: not_found is not in retry_on",
			policy: failPolicy(`{"delays": ["0s"], "retry_on": ["validation"]}`, ``),
			n:      1, f: kind("not_found"), now: morning, plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "not_found failed")},
		{name: "1: empty retry_on keeps the default non_retryable",
			policy: failPolicy(`{"delays": ["0s"], "retry_on": []}`, ``),
			n:      1, f: kind("validation"), now: morning, plan: disable, rule: rule1, attemptNo: 1, reason: defaultReason(1, "validation failed")},
		{name: "1: empty non_retryable excludes nothing", policy: failPolicy(`{"delays": ["0s"], "non_retryable": []}`, ``),
			n: 1, f: kind("validation"), now: morning, plan: retry, rule: rule4, refreshAt: morning, attemptNo: 1},
		{name: "1: other kinds retry by default", policy: failPolicy(threeDelays, ""), n: 1, f: http503, now: morning,
			plan: retry, rule: rule4, refreshAt: morning, attemptNo: 1},
		{name: "1 before 2", policy: failPolicy(threeDelays, `"give_up_after": "1h"`), n: 2, failures: 1, since: morning.Add(-2 * time.Hour),
			f: notRetryable, now: morning, plan: disable, rule: rule1, attemptNo: 2, reason: defaultReason(2, "upstream 503")},
		{name: "1 before 3", policy: failPolicy(threeDelays, `"on_exhausted": "wait_next"`), n: 4, failures: 3, since: morning.Add(-time.Hour),
			f: notRetryable, now: morning, plan: disable, rule: rule1, attemptNo: 4, reason: defaultReason(4, "upstream 503")},

		// Rule 2: give_up_after.
		{name: "2: streak reaches give_up_after exactly", policy: failPolicy(threeDelays, `"give_up_after": "P7D"`),
			n: 2, failures: 5, since: morning.Add(-week), f: http503, now: morning,
			plan: disable, rule: rule2, attemptNo: 2, reason: defaultReason(6, "upstream 503")},
		{name: "2: streak one ns short of give_up_after", policy: failPolicy(threeDelays, `"give_up_after": "P7D"`),
			n: 2, failures: 5, since: morning.Add(-week + time.Nanosecond), f: http503, now: morning,
			plan: retry, rule: rule4, refreshAt: morning.Add(time.Minute), attemptNo: 2, delay: time.Minute},
		{name: "2: the first failure starts the streak at now", policy: failPolicy(threeDelays, `"give_up_after": "1ns"`),
			n: 1, f: http503, now: morning, plan: retry, rule: rule4, refreshAt: morning, attemptNo: 1},
		{name: "2: no give_up_after, streak unbounded", policy: failPolicy(threeDelays, ""),
			n: 2, failures: 500, since: morning.Add(-365 * 24 * time.Hour), f: http503, now: morning,
			plan: retry, rule: rule4, refreshAt: morning.Add(time.Minute), attemptNo: 2, delay: time.Minute},
		{name: "2 before 3", policy: failPolicy(threeDelays, `"give_up_after": "P7D", "on_exhausted": "wait_next"`),
			n: 4, failures: 20, since: morning.Add(-week), f: http503, now: morning,
			plan: disable, rule: rule2, attemptNo: 4, reason: defaultReason(21, "upstream 503")},

		// Rule 3: exhausted (max_retries 3).
		{name: "3: n == max_retries still retries", policy: failPolicy(threeDelays, ""), n: 3, failures: 2, since: morning.Add(-time.Hour),
			f: http503, now: morning, plan: retry, rule: rule4, refreshAt: morning.Add(5 * time.Minute), attemptNo: 3, delay: 5 * time.Minute},
		{name: "3: n == max_retries+1 disables", policy: failPolicy(threeDelays, ""), n: 4, failures: 3, since: morning.Add(-time.Hour),
			f: http503, now: morning, plan: disable, rule: rule3, attemptNo: 4, reason: defaultReason(4, "upstream 503")},
		{name: "3: wait_next starts a new round at P", policy: failPolicy(threeDelays, `"on_exhausted": "wait_next"`),
			n: 4, failures: 3, since: morning.Add(-time.Hour), f: http503, now: morning,
			plan: waitNxt, rule: rule3w, refreshAt: occAfternoon, attemptNo: 0},
		{name: "3: wait_next exactly at an occurrence: the following one", policy: failPolicy(threeDelays, `"on_exhausted": "wait_next"`),
			n: 4, failures: 3, since: morning.Add(-time.Hour), f: http503, now: occAfternoon,
			plan: waitNxt, rule: rule3w, refreshAt: occTomorrow, attemptNo: 0},
		{name: "3: wait_next on a second round keeps counting failures", policy: failPolicy(threeDelays, `"on_exhausted": "wait_next"`),
			n: 4, failures: 7, since: morning.Add(-24 * time.Hour), f: http503, now: morning,
			plan: waitNxt, rule: rule3w, refreshAt: occAfternoon, attemptNo: 0},
		{name: "3: wait_next without a next occurrence disables",
			policy: `{` + endedSchedule + `, "timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}, "on_exhausted": "wait_next"}`,
			n:      4, failures: 3, since: morning.Add(-time.Hour), f: http503, now: morning,
			plan: disable, rule: rule3, attemptNo: 4, reason: defaultReason(4, "upstream 503")},
		{name: "3: backoff max_retries, n == max", policy: `{"retry": {"backoff": {"strategy": "fixed", "base": "1m", "max_retries": 2}}}`,
			n: 2, failures: 1, since: morning.Add(-time.Hour), f: http503, now: morning,
			plan: retry, rule: rule4, refreshAt: morning.Add(time.Minute), attemptNo: 2, delay: time.Minute},
		{name: "3: backoff max_retries, n == max+1", policy: `{"retry": {"backoff": {"strategy": "fixed", "base": "1m", "max_retries": 2}}}`,
			n: 3, failures: 2, since: morning.Add(-time.Hour), f: http503, now: morning,
			plan: disable, rule: rule3, attemptNo: 3, reason: defaultReason(3, "upstream 503")},
		{name: "3: no delays, no retry", policy: `{"retry": {"delays": []}}`, n: 1, f: http503, now: morning,
			plan: disable, rule: rule3, attemptNo: 1, reason: defaultReason(1, "upstream 503")},

		// Rule 4: retry, aligned or not. P = 15:00, timeout 1h, retry 3 waits 5m.
		{name: "4: R + timeout == P is a plain retry", policy: failPolicy(threeDelays, ""),
			n: 3, failures: 2, since: morning, f: http503, now: occAfternoon.Add(-65 * time.Minute),
			plan: retry, rule: rule4, refreshAt: occAfternoon.Add(-time.Hour), attemptNo: 3, delay: 5 * time.Minute},
		{name: "4: R + timeout one ns past P aligns", policy: failPolicy(threeDelays, ""),
			n: 3, failures: 2, since: morning, f: http503, now: occAfternoon.Add(-65*time.Minute + time.Nanosecond),
			plan: aligned, rule: rule4a, refreshAt: occAfternoon, attemptNo: 3, delay: 5 * time.Minute},
		{name: "4: immediate retry in the last hour aligns", policy: failPolicy(threeDelays, ""),
			n: 1, f: http503, now: occAfternoon.Add(-30 * time.Minute),
			plan: aligned, rule: rule4a, refreshAt: occAfternoon, attemptNo: 1},
		{name: "4: align false never aligns", policy: failPolicy(`{"delays": ["0s", "1m", "5m"], "align": false}`, ``),
			n: 3, failures: 2, since: morning, f: http503, now: occAfternoon.Add(-65*time.Minute + time.Nanosecond),
			plan: retry, rule: rule4, refreshAt: occAfternoon.Add(-time.Hour + time.Nanosecond), attemptNo: 3, delay: 5 * time.Minute},
		{name: "4: no schedule never aligns", policy: `{"timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}}`,
			n: 3, failures: 2, since: morning, f: http503, now: occAfternoon.Add(-65*time.Minute + time.Nanosecond),
			plan: retry, rule: rule4, refreshAt: occAfternoon.Add(-time.Hour + time.Nanosecond), attemptNo: 3, delay: 5 * time.Minute},
		{name: "4: finished schedule never aligns", policy: `{` + endedSchedule + `, "timeout": "1h", "retry": {"delays": ["0s", "1m", "5m"]}}`,
			n: 3, failures: 2, since: morning, f: http503, now: occAfternoon.Add(-30 * time.Minute),
			plan: retry, rule: rule4, refreshAt: occAfternoon.Add(-25 * time.Minute), attemptNo: 3, delay: 5 * time.Minute},
		{name: "4: align true with a schedule", policy: failPolicy(`{"delays": ["0s", "1m", "5m"], "align": true}`, ``),
			n: 1, f: http503, now: occAfternoon.Add(-30 * time.Minute),
			plan: aligned, rule: rule4a, refreshAt: occAfternoon, attemptNo: 1},
		{name: "4: the retry uses the delay of attempt n, not of the failure count", policy: failPolicy(threeDelays, ""),
			n: 2, failures: 9, since: morning.Add(-24 * time.Hour), f: http503, now: morning,
			plan: retry, rule: rule4, refreshAt: morning.Add(time.Minute), attemptNo: 2, delay: time.Minute},
	}
}

func TestFailed(t *testing.T) {
	t.Parallel()
	for _, tt := range failureCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFailureCase(t, tt)
		})
	}
}

func runFailureCase(t *testing.T, tt failureCase) {
	t.Helper()
	before := transitionModel(t, tt.policy)
	before.ConsecutiveFailures = tt.failures
	before.FailingSince = tt.since
	if tt.failures > 0 {
		before.LastError = &refresh.LastError{Kind: "old", Message: "old error", At: tt.since}
	}
	before = runningAttempt(t, before, "u1", tt.n, tt.now.Add(-time.Minute))
	before.StatusMessage = "50%"

	got, d := refresh.Failed(before, tt.f, tt.now)

	want := before
	want.AttemptUID, want.StartedAt, want.DeadlineAt = "", null, null
	want.StatusMessage = ""
	want.ConsecutiveFailures = tt.failures + 1
	if tt.since.IsZero() {
		want.FailingSince = tt.now
	}
	want.LastError = &refresh.LastError{Kind: tt.f.Kind, Message: tt.f.Message, At: tt.now}
	want.AttemptNo = tt.attemptNo
	want.RefreshAt = tt.refreshAt
	if tt.plan == refresh.DecisionDisable {
		want.RefreshAt = null
		want.DisabledAt = tt.now
		want.DisabledReason = tt.reason
	}
	requireModel(t, want, got)

	require.Equal(t, refresh.Decision{
		Event: refresh.EventFailure, Plan: tt.plan, Rule: tt.rule, Why: d.Why,
		UID: "u1", AttemptNo: tt.n, Delay: tt.delay, Kind: tt.f.Kind, Message: tt.f.Message, Reason: tt.reason,
	}, d)
	require.NotEmpty(t, d.Why)
}

// TestFailedDelays checks that every delay strategy reaches the decision
// and refresh_at (on-demand models, so nothing aligns).
func TestFailedDelays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		retry string
		n     int
		want  time.Duration
	}{
		{name: "delays list, first", retry: `{"delays": ["10s", "1m", "5m"]}`, n: 1, want: 10 * time.Second},
		{name: "delays list, second", retry: `{"delays": ["10s", "1m", "5m"]}`, n: 2, want: time.Minute},
		{name: "delays list, ISO 8601", retry: `{"delays": ["PT5M", "PT1H"]}`, n: 2, want: time.Hour},
		{name: "immediate", retry: `{"backoff": {"strategy": "immediate"}}`, n: 3, want: 0},
		{name: "fixed", retry: `{"backoff": {"strategy": "fixed", "base": "2m"}}`, n: 3, want: 2 * time.Minute},
		{name: "linear", retry: `{"backoff": {"strategy": "linear", "base": "1m"}}`, n: 3, want: 3 * time.Minute},
		{name: "exponential, default multiplier 2", retry: `{"backoff": {"strategy": "exponential", "base": "1m"}}`, n: 4, want: 8 * time.Minute},
		{name: "exponential, multiplier 3", retry: `{"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 3}}`, n: 3, want: 9 * time.Minute},
		{name: "exponential, capped", retry: `{"backoff": {"strategy": "exponential", "base": "1m", "max_delay": "10m"}}`, n: 5, want: 10 * time.Minute},
		{name: "fibonacci 1", retry: `{"backoff": {"strategy": "fibonacci", "base": "1m"}}`, n: 1, want: time.Minute},
		{name: "fibonacci 2", retry: `{"backoff": {"strategy": "fibonacci", "base": "1m"}}`, n: 2, want: time.Minute},
		{name: "fibonacci 5", retry: `{"backoff": {"strategy": "fibonacci", "base": "1m"}}`, n: 5, want: 5 * time.Minute},
		{name: "fibonacci, capped", retry: `{"backoff": {"strategy": "fibonacci", "base": "1m", "max_delay": "4m"}}`, n: 5, want: 4 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := transitionModel(t, `{"timeout": "1h", "retry": `+tt.retry+`}`)
			m = runningAttempt(t, m, "u1", tt.n, morning)
			now := morning.Add(time.Minute)
			got, d := refresh.Failed(m, http503, now)
			require.Equal(t, refresh.DecisionRetry, d.Plan, d.Why)
			require.Equal(t, tt.want, d.Delay)
			requireTime(t, now.Add(tt.want), got.RefreshAt)
			require.Equal(t, tt.n, got.AttemptNo)
		})
	}
}

// TestDisabledReason checks the disabled_reason of a disable: the failure's
// user_message, else disabled_message with its placeholders filled in.
func TestDisabledReason(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 1, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		policy  string
		errMsg  *string // nil: "upstream 503"
		userMsg string
		want    string
	}{
		{name: "default message: no worker text", policy: `{}`,
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "{error} when the policy names it", policy: `{"disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}`,
			want: "Refresh disabled after 3 failed attempt(s): upstream 503"},
		{name: "all placeholders, since in UTC", policy: `{"disabled_message": "{attempts} attempts since {since}: {error}"}`,
			want: "3 attempts since 2026-03-01T05:00:00Z: upstream 503"},
		{name: "since in the policy's time zone", policy: `{"timezone": "Europe/Paris", "disabled_message": "since {since}, {attempts}x {error}"}`,
			want: "since 2026-03-01T06:00:00+01:00, 3x upstream 503"},
		{name: "user_message wins", policy: `{"disabled_message": "{attempts} attempts"}`, userMsg: "Please fix your URL.",
			want: "Please fix your URL."},
		{name: "a failure without a message", policy: `{}`, errMsg: ptr(""),
			want: "Refresh disabled after 3 failed attempt(s)."},
		{name: "a failure without a message, {error} named", policy: `{"disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}`,
			errMsg: ptr(""), want: "Refresh disabled after 3 failed attempt(s)"},
		{name: "a failure without a message, own template", policy: `{"disabled_message": "Stopped after {attempts} tries ({error})."}`,
			errMsg: ptr(""), want: "Stopped after 3 tries."},
		{name: "a long error is cut to the reason limit", policy: `{"disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}`,
			errMsg: ptr(strings.Repeat("x", 10<<10)),
			want: "Refresh disabled after 3 failed attempt(s): " +
				strings.Repeat("x", 4096-len("Refresh disabled after 3 failed attempt(s): ")-len("…")) + "…"},
		{name: "a long user_message is cut to the reason limit", policy: `{}`, userMsg: strings.Repeat("u", 5000),
			want: strings.Repeat("u", 4096-len("…")) + "…"},
		{name: "a user_message at the reason limit stays whole", policy: `{}`, userMsg: strings.Repeat("u", 4096),
			want: strings.Repeat("u", 4096)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := transitionModel(t, tt.policy)
			m.ConsecutiveFailures, m.FailingSince = 2, since
			m = runningAttempt(t, m, "u1", 3, morning)
			f := refresh.Failure{Kind: "http_503", Message: "upstream 503", UserMessage: tt.userMsg}
			if tt.errMsg != nil {
				f.Message = *tt.errMsg
			}
			got, d := refresh.Failed(m, f, morning.Add(time.Minute))
			require.Equal(t, refresh.DecisionDisable, d.Plan)
			require.Equal(t, tt.want, got.DisabledReason)
			require.Equal(t, tt.want, d.Reason)
			requireTime(t, since, got.FailingSince)
		})
	}
}

// TestFailureStreak follows one streak through several failures: failing_since
// is set by the first and kept by the others, and consecutive_failures
// survives a new round.
func TestFailureStreak(t *testing.T) {
	t.Parallel()
	m := transitionModel(t, failPolicy(threeDelays, `"on_exhausted": "wait_next"`))
	m, _ = refresh.Create(m, false, occMorning.Add(-time.Minute))
	var first time.Time
	for i := range 6 {
		uid := fmt.Sprintf("u%d", i)
		var d refresh.Decision
		m, d = refresh.Start(m, uid, m.RefreshAt)
		require.Equal(t, refresh.EventStart, d.Event, "start %d", i)
		now := m.StartedAt.Add(time.Minute)
		if i == 0 {
			first = now
		}
		m, d = refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: uid, Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"}, now)
		require.Equal(t, refresh.EventFailure, d.Event)
		require.Equal(t, i+1, m.ConsecutiveFailures)
		requireTime(t, first, m.FailingSince)
		switch {
		case i < 3: // attempts 1 to 3 retry
			require.Equal(t, refresh.DecisionRetry, d.Plan, d.Why)
			require.Equal(t, i+1, m.AttemptNo)
		case i == 3: // attempt 4 exhausts the round
			require.Equal(t, refresh.DecisionWaitNext, d.Plan, d.Why)
			require.Equal(t, 0, m.AttemptNo)
			requireTime(t, occAfternoon, m.RefreshAt)
		default: // the new round counts from 1 again
			require.Equal(t, refresh.DecisionRetry, d.Plan, d.Why)
			require.Equal(t, i-3, m.AttemptNo)
		}
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	before := runningAttempt(t, transitionModel(t, `{`+parisSchedule+`}`), "u1", 2, morning)
	now := morning.Add(time.Minute)

	got, d := refresh.ApplyOutcome(before, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "50%"}, now)
	want := before
	want.StatusMessage = "50%"
	requireModel(t, want, got)
	require.Equal(t, refresh.Decision{Event: refresh.EventStatus, Rule: "status", UID: "u1", AttemptNo: 2, Message: "50%", Why: d.Why}, d)
	require.NotEmpty(t, d.Why)

	got, _ = refresh.ApplyOutcome(got, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "90%"}, now)
	want.StatusMessage = "90%"
	requireModel(t, want, got)

	stale, d := refresh.ApplyOutcome(got, refresh.Outcome{AttemptUID: "u0", Type: refresh.OutcomeStatus, Message: "old"}, now)
	requireModel(t, got, stale)
	require.Equal(t, refresh.EventStale, d.Event)
}

func TestTrigger(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	now := morning
	lastErr := &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: now.Add(-time.Hour)}
	tests := []struct {
		name       string
		policy     string
		state      func(t *testing.T, m refresh.Model) refresh.Model
		superseded string // uid of the running attempt
		attemptNo  int
	}{
		{name: "idle, scheduled", policy: policy, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = occAfternoon
			return m
		}},
		{name: "on demand, nothing planned", policy: `{}`},
		{name: "disabled", policy: policy, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 4, 4, now.Add(-2*time.Hour), lastErr
			m.DisabledAt, m.DisabledReason = now.Add(-time.Hour), "gone"
			return m
		}},
		{name: "pending retry", policy: policy, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 2, 2, now.Add(-2*time.Hour), lastErr
			m.RefreshAt = now.Add(5 * time.Minute)
			return m
		}},
		{name: "running attempt is superseded", policy: policy, superseded: "u1", attemptNo: 2,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.ConsecutiveFailures, m.FailingSince, m.LastError = 1, now.Add(-time.Hour), lastErr
				m = runningAttempt(t, m, "u1", 2, now.Add(-10*time.Minute))
				m.StatusMessage = "10%"
				return m
			}},
		{name: "paused stays paused", policy: policy, state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.Paused = true
			m.RefreshAt = occAfternoon
			return m
		}},
		{name: "paused and running: superseded, stays paused", policy: policy, superseded: "u1", attemptNo: 1,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = runningAttempt(t, m, "u1", 1, now.Add(-10*time.Minute))
				m.Paused, m.StatusMessage = true, "10%"
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := transitionModel(t, tt.policy)
			if tt.state != nil {
				before = tt.state(t, before)
			}
			got, d := refresh.Trigger(before, now)

			want := before
			want.AttemptUID, want.StartedAt, want.DeadlineAt = "", null, null
			want.AttemptNo, want.ConsecutiveFailures, want.FailingSince = 0, 0, null
			want.DisabledAt, want.DisabledReason = null, ""
			want.RefreshAt = now
			want.StatusMessage = "" // the superseded attempt's progress text goes with it
			requireModel(t, want, got)
			require.Equal(t, refresh.Decision{
				Event: refresh.EventTrigger, Rule: "trigger", UID: tt.superseded, AttemptNo: tt.attemptNo, Deadline: before.DeadlineAt, Why: d.Why,
			}, d)
			require.NotEmpty(t, d.Why)
			require.Equal(t, before.Paused, strings.Contains(d.Why, "the model stays paused and starts when resumed"), d.Why)

			if tt.superseded != "" {
				_, sd := refresh.ApplyOutcome(got, refresh.Outcome{AttemptUID: tt.superseded, Type: refresh.OutcomeSuccess}, now)
				require.Equal(t, refresh.EventStale, sd.Event)
			}
			require.Equal(t, !before.Paused, got.CanStart(now))
			if before.Paused {
				got, _ = refresh.Resume(got, now.Add(time.Minute))
			}
			started, sd := refresh.Start(got, "u9", now.Add(time.Minute))
			require.Equal(t, refresh.EventStart, sd.Event)
			require.Equal(t, 1, started.AttemptNo)
		})
	}
}

func TestEnable(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	lastErr := &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: morning.Add(-time.Hour)}
	disabled := func(m refresh.Model) refresh.Model {
		m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 4, 4, morning.Add(-2*time.Hour), lastErr
		m.DisabledAt, m.DisabledReason = morning.Add(-time.Hour), "gone"
		return m
	}
	tests := []struct {
		name   string
		policy string
		state  func(t *testing.T, m refresh.Model) refresh.Model
		now    time.Time
		// enabled is false when Enable must change nothing.
		enabled bool
		want    time.Time // refresh_at
	}{
		{name: "disabled: next occurrence", policy: policy, now: morning, enabled: true, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model { return disabled(m) }},
		{name: "disabled, exactly at an occurrence: the following one", policy: policy, now: occAfternoon,
			enabled: true, want: occTomorrow,
			state: func(t *testing.T, m refresh.Model) refresh.Model { return disabled(m) }},
		{name: "disabled, on demand: null", policy: `{}`, now: morning, enabled: true, want: null,
			state: func(t *testing.T, m refresh.Model) refresh.Model { return disabled(m) }},
		{name: "disabled and paused stays paused", policy: policy, now: morning, enabled: true, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = disabled(m)
				m.Paused = true
				return m
			}},
		{name: "healthy idle model", policy: policy, now: morning,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.RefreshAt, m.LastSuccessAt = occAfternoon, occMorning
				return m
			}},
		{name: "failing model with a pending retry", policy: policy, now: morning,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.LastError = 2, 2, morning.Add(-time.Hour), lastErr
				m.RefreshAt = morning.Add(time.Minute)
				return m
			}},
		{name: "running model", policy: policy, now: morning,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.ConsecutiveFailures, m.FailingSince = 1, morning.Add(-time.Hour)
				return runningAttempt(t, m, "u1", 2, morning.Add(-time.Minute))
			}},
		{name: "paused model", policy: policy, now: morning,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.Paused, m.RefreshAt = true, occMorning
				return m
			}},
		{name: "on demand model with nothing planned", policy: `{}`, now: morning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := transitionModel(t, tt.policy)
			if tt.state != nil {
				before = tt.state(t, before)
			}
			got, d := refresh.Enable(before, tt.now)
			require.Equal(t, refresh.EventEnable, d.Event)
			require.NotEmpty(t, d.Why)
			require.Empty(t, d.UID)
			if !tt.enabled {
				requireModel(t, before, got)
				return
			}
			want := before
			want.AttemptNo, want.ConsecutiveFailures, want.FailingSince = 0, 0, null
			want.DisabledAt, want.DisabledReason = null, ""
			want.RefreshAt = tt.want
			requireModel(t, want, got)
		})
	}
}

func TestPause(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	tests := []struct {
		name  string
		state func(t *testing.T, m refresh.Model) refresh.Model
	}{
		{name: "due idle model", state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = morning.Add(-time.Minute)
			return m
		}},
		{name: "running model", state: func(t *testing.T, m refresh.Model) refresh.Model {
			return runningAttempt(t, m, "u1", 1, morning.Add(-time.Minute))
		}},
		{name: "disabled model", state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.DisabledAt, m.DisabledReason = morning.Add(-time.Hour), "gone"
			return m
		}},
		{name: "already paused", state: func(t *testing.T, m refresh.Model) refresh.Model {
			m.Paused, m.RefreshAt = true, morning.Add(-time.Minute)
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.state(t, transitionModel(t, policy))
			got, d := refresh.Pause(before)
			want := before
			want.Paused = true
			requireModel(t, want, got)
			require.Equal(t, refresh.EventPause, d.Event)
			require.NotEmpty(t, d.Why)
			require.False(t, got.CanStart(morning))
		})
	}
}

// TestPausedAttemptFinishes checks that a pause only stops new starts: the
// running attempt still times out, and its outcomes still apply.
func TestPausedAttemptFinishes(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h", "retry": {"delays": ["0s"]}}`
	started := morning.Add(-30 * time.Minute)
	paused := func(t *testing.T) refresh.Model {
		m := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		m, _ = refresh.Pause(m)
		return m
	}

	t.Run("status applies", func(t *testing.T) {
		t.Parallel()
		m, d := refresh.ApplyOutcome(paused(t), refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "50%"}, morning)
		require.Equal(t, refresh.EventStatus, d.Event)
		require.Equal(t, "50%", m.StatusMessage)
	})
	t.Run("success applies, no new start", func(t *testing.T) {
		t.Parallel()
		m, d := refresh.ApplyOutcome(paused(t), refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, morning)
		require.Equal(t, refresh.EventSuccess, d.Event)
		requireTime(t, occAfternoon, m.RefreshAt)
		require.True(t, m.Paused)
		_, d = refresh.Start(m, "u2", occAfternoon)
		require.Empty(t, d.Event)
	})
	t.Run("failure applies, the retry waits", func(t *testing.T) {
		t.Parallel()
		m, d := refresh.ApplyOutcome(paused(t), refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "http_503"}, morning)
		require.Equal(t, refresh.DecisionRetry, d.Plan)
		requireTime(t, morning, m.RefreshAt)
		_, d = refresh.Start(m, "u2", morning)
		require.Empty(t, d.Event)
	})
	t.Run("timeout applies", func(t *testing.T) {
		t.Parallel()
		m, d := refresh.Timeout(paused(t), started.Add(time.Hour))
		require.Equal(t, refresh.EventTimeout, d.Event)
		require.Equal(t, 1, m.ConsecutiveFailures)
		require.True(t, m.Paused)
		_, d = refresh.Start(m, "u2", m.RefreshAt)
		require.Empty(t, d.Event)
	})
}

func TestResume(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	now := morning

	t.Run("overdue refresh_at starts once at once", func(t *testing.T) {
		t.Parallel()
		// Paused since three days: six occurrences were missed.
		before := transitionModel(t, policy)
		before.RefreshAt = occMorning.Add(-72 * time.Hour)
		before, _ = refresh.Pause(before)
		require.False(t, before.CanStart(now))

		got, d := refresh.Resume(before, now)
		want := before
		want.Paused = false
		requireModel(t, want, got)
		require.Equal(t, refresh.EventResume, d.Event)
		require.NotEmpty(t, d.Why)

		m, sd := refresh.Start(got, "u1", now)
		require.Equal(t, refresh.EventStart, sd.Event)
		require.Equal(t, 1, m.AttemptNo)
		_, sd = refresh.Start(m, "u2", now)
		require.Empty(t, sd.Event, "one start, not one per missed occurrence")
		m, sd = refresh.ApplyOutcome(m, refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, now.Add(time.Minute))
		require.Equal(t, refresh.EventSuccess, sd.Event)
		requireTime(t, occAfternoon, m.RefreshAt, "missed occurrences are not replayed")
	})
	t.Run("future refresh_at waits", func(t *testing.T) {
		t.Parallel()
		before := transitionModel(t, policy)
		before.RefreshAt, before.Paused = occAfternoon, true
		got, _ := refresh.Resume(before, now)
		want := before
		want.Paused = false
		requireModel(t, want, got)
		require.False(t, got.CanStart(now))
		require.True(t, got.CanStart(occAfternoon))
	})
	t.Run("running attempt continues", func(t *testing.T) {
		t.Parallel()
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, now.Add(-time.Minute))
		before, _ = refresh.Pause(before)
		got, _ := refresh.Resume(before, now)
		want := before
		want.Paused = false
		requireModel(t, want, got)
		_, d := refresh.Start(got, "u2", now)
		require.Empty(t, d.Event)
	})
	t.Run("not paused: nothing changes", func(t *testing.T) {
		t.Parallel()
		before := transitionModel(t, policy)
		before.RefreshAt = occAfternoon
		got, _ := refresh.Resume(before, now)
		requireModel(t, before, got)
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h"}`
	lastErr := &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: morning.Add(-time.Hour)}
	failing := func(m refresh.Model) refresh.Model {
		m.ConsecutiveFailures, m.FailingSince, m.LastError = 2, morning.Add(-2*time.Hour), lastErr
		return m
	}
	tests := []struct {
		name      string
		policy    string
		state     func(t *testing.T, m refresh.Model) refresh.Model
		now       time.Time
		cancelled string // uid of the running attempt
		attemptNo int
		disabled  bool
		want      time.Time // refresh_at
	}{
		{name: "running attempt", policy: policy, now: morning, cancelled: "u1", attemptNo: 3, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				return runningAttempt(t, failing(m), "u1", 3, morning.Add(-time.Minute))
			}},
		{name: "pending retry", policy: policy, now: morning, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = failing(m)
				m.AttemptNo, m.RefreshAt = 2, morning.Add(time.Minute)
				return m
			}},
		{name: "pending retry aligned on the next occurrence", policy: policy, now: morning, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = failing(m)
				m.AttemptNo, m.RefreshAt = 2, occAfternoon
				return m
			}},
		{name: "exactly at an occurrence: the following one", policy: policy, now: occAfternoon, want: occTomorrow,
			cancelled: "u1", attemptNo: 1,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				return runningAttempt(t, m, "u1", 1, occAfternoon.Add(-time.Minute))
			}},
		{name: "on demand: null", policy: `{}`, now: morning, cancelled: "u1", attemptNo: 2, want: null,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				return runningAttempt(t, failing(m), "u1", 2, morning.Add(-time.Minute))
			}},
		{name: "paused running model stays paused", policy: policy, now: morning, cancelled: "u1", attemptNo: 1, want: occAfternoon,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = runningAttempt(t, m, "u1", 1, morning.Add(-time.Minute))
				m.Paused = true
				return m
			}},
		{name: "disabled: nothing changes", policy: policy, now: morning, disabled: true,
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m = failing(m)
				m.AttemptNo, m.DisabledAt, m.DisabledReason = 4, morning.Add(-time.Hour), "gone"
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.state(t, transitionModel(t, tt.policy))
			if before.Running() {
				before.StatusMessage = "10%"
			}
			got, d := refresh.Cancel(before, tt.now)
			require.Equal(t, refresh.EventCancel, d.Event)
			require.NotEmpty(t, d.Why)
			require.Empty(t, d.Plan)
			if tt.disabled {
				requireModel(t, before, got)
				require.Empty(t, d.UID)
				return
			}
			want := before
			want.AttemptUID, want.StartedAt, want.DeadlineAt = "", null, null
			want.StatusMessage = "" // the cancelled attempt's progress text goes with it
			want.AttemptNo = 0
			want.RefreshAt = tt.want
			requireModel(t, want, got) // counters and streak untouched
			require.Equal(t, tt.cancelled, d.UID)
			require.Equal(t, tt.attemptNo, d.AttemptNo)

			if tt.cancelled != "" {
				_, sd := refresh.ApplyOutcome(got, refresh.Outcome{AttemptUID: tt.cancelled, Type: refresh.OutcomeSuccess}, tt.now)
				require.Equal(t, refresh.EventStale, sd.Event)
			}
		})
	}
}

// TestJitterIsDeterministic checks that the jittered delay is a pure
// function of (model id, consecutive_failures, failing_since).
func TestJitterIsDeterministic(t *testing.T) {
	t.Parallel()
	const base = 10 * time.Minute
	policy := `{"timeout": "1h", "retry": {"delays": ["10m", "10m", "10m"], "jitter": 0.5}}`
	since := morning.Add(-time.Hour)
	now := morning.Add(time.Minute)
	fail := func(id string, failures int, since time.Time) (refresh.Model, refresh.Decision) {
		m := transitionModel(t, policy)
		m.ID = id
		m.ConsecutiveFailures, m.FailingSince = failures, since
		m = runningAttempt(t, m, "u1", 2, morning)
		return refresh.Failed(m, http503, now)
	}

	seen := map[time.Duration]bool{}
	for i := range 16 {
		id := fmt.Sprintf("model-%d", i)
		a, da := fail(id, 1, since)
		b, db := fail(id, 1, since)
		requireTime(t, a.RefreshAt, b.RefreshAt, "same inputs, same refresh_at")
		require.Equal(t, da.Delay, db.Delay)
		requireTime(t, now.Add(da.Delay), a.RefreshAt)
		require.GreaterOrEqual(t, da.Delay, base/2)
		require.Less(t, da.Delay, base*3/2)
		seen[da.Delay] = true
	}
	require.Greater(t, len(seen), 8, "the jitter spreads models")

	_, d1 := fail("m1", 1, since)
	_, d2 := fail("m1", 2, since)
	_, d3 := fail("m1", 1, since.Add(time.Second))
	require.NotEqual(t, d1.Delay, d2.Delay, "consecutive_failures is an input")
	require.NotEqual(t, d1.Delay, d3.Delay, "failing_since is an input")
}

// TestDecisionExplainsItself checks that every event names its rule and
// says why.
func TestDecisionExplainsItself(t *testing.T) {
	t.Parallel()
	policy := `{` + parisSchedule + `, "timeout": "1h"}`
	idle := transitionModel(t, policy)
	idle.RefreshAt = occMorning
	run := runningAttempt(t, transitionModel(t, policy), "u1", 1, morning)
	disabled := idle
	disabled.DisabledAt, disabled.DisabledReason = morning, "gone"
	later := morning.Add(time.Minute)
	outcome := func(typ string) refresh.Outcome {
		return refresh.Outcome{AttemptUID: "u1", Type: typ, Kind: "x", Message: "m"}
	}

	tests := []struct {
		event string
		apply func() refresh.Decision
	}{
		{refresh.EventCreate, func() refresh.Decision { _, d := refresh.Create(idle, false, morning); return d }},
		{refresh.EventCreate, func() refresh.Decision { _, d := refresh.Create(idle, true, morning); return d }},
		{refresh.EventCreate, func() refresh.Decision {
			_, d := refresh.Create(transitionModel(t, `{}`), false, morning)
			return d
		}},
		{refresh.EventStart, func() refresh.Decision { _, d := refresh.Start(idle, "u1", morning); return d }},
		{refresh.EventTimeout, func() refresh.Decision { _, d := refresh.Timeout(run, run.DeadlineAt); return d }},
		{refresh.EventSuccess, func() refresh.Decision {
			_, d := refresh.ApplyOutcome(run, outcome(refresh.OutcomeSuccess), later)
			return d
		}},
		{refresh.EventFailure, func() refresh.Decision {
			_, d := refresh.ApplyOutcome(run, outcome(refresh.OutcomeFailure), later)
			return d
		}},
		{refresh.EventStatus, func() refresh.Decision {
			_, d := refresh.ApplyOutcome(run, outcome(refresh.OutcomeStatus), later)
			return d
		}},
		{refresh.EventStale, func() refresh.Decision {
			_, d := refresh.ApplyOutcome(idle, outcome(refresh.OutcomeSuccess), later)
			return d
		}},
		{refresh.EventTrigger, func() refresh.Decision { _, d := refresh.Trigger(run, later); return d }},
		{refresh.EventEnable, func() refresh.Decision { _, d := refresh.Enable(disabled, later); return d }},
		{refresh.EventUpdate, func() refresh.Decision {
			_, d := refresh.Update(disabled, refresh.Definition{Queue: "other", Policy: disabled.Policy}, false, later)
			return d
		}},
		{"", func() refresh.Decision {
			_, d := refresh.Update(idle, refresh.Definition{Queue: "other", Policy: idle.Policy}, false, later)
			return d
		}},
		{refresh.EventEnable, func() refresh.Decision { _, d := refresh.Enable(idle, later); return d }},
		{refresh.EventPause, func() refresh.Decision { _, d := refresh.Pause(idle); return d }},
		{refresh.EventResume, func() refresh.Decision { _, d := refresh.Resume(idle, later); return d }},
		{refresh.EventCancel, func() refresh.Decision { _, d := refresh.Cancel(run, later); return d }},
		{refresh.EventCancel, func() refresh.Decision { _, d := refresh.Cancel(disabled, later); return d }},
	}
	for _, tt := range tests {
		d := tt.apply()
		require.Equal(t, tt.event, d.Event)
		require.NotEmpty(t, d.Rule, tt.event)
		require.NotEmpty(t, d.Why, tt.event)
	}
}

// BenchmarkTransition measures each transition on an on-demand model and on
// one with the daily schedule (which parses the schedule where the
// transition needs next or first).
func BenchmarkTransition(b *testing.B) {
	policies := []struct{ name, policy string }{
		{"on-demand", `{"timeout": "1h"}`},
		{"daily", `{` + parisSchedule + `, "timeout": "1h"}`},
	}
	now := morning
	for _, p := range policies {
		idle := transitionModel(b, p.policy)
		idle.RefreshAt = now
		run := runningAttempt(b, transitionModel(b, p.policy), "u1", 1, now.Add(-time.Minute))
		disabled := idle
		disabled.RefreshAt, disabled.DisabledAt, disabled.DisabledReason, disabled.ConsecutiveFailures = null, now, "gone", 7
		later := now.Add(time.Second)
		success := refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		failure := refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"}
		status := refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "50%"}
		stale := refresh.Outcome{AttemptUID: "u0", Type: refresh.OutcomeSuccess}

		benches := []struct {
			event string
			apply func() (refresh.Model, refresh.Decision)
		}{
			{"create", func() (refresh.Model, refresh.Decision) { return refresh.Create(idle, false, now) }},
			{"start", func() (refresh.Model, refresh.Decision) { return refresh.Start(idle, "u1", now) }},
			{"timeout", func() (refresh.Model, refresh.Decision) { return refresh.Timeout(run, run.DeadlineAt) }},
			{"success", func() (refresh.Model, refresh.Decision) { return refresh.ApplyOutcome(run, success, later) }},
			{"failure", func() (refresh.Model, refresh.Decision) { return refresh.ApplyOutcome(run, failure, later) }},
			{"status", func() (refresh.Model, refresh.Decision) { return refresh.ApplyOutcome(run, status, later) }},
			{"stale", func() (refresh.Model, refresh.Decision) { return refresh.ApplyOutcome(run, stale, later) }},
			{"trigger", func() (refresh.Model, refresh.Decision) { return refresh.Trigger(run, later) }},
			{"enable", func() (refresh.Model, refresh.Decision) { return refresh.Enable(disabled, later) }},
			{"pause", func() (refresh.Model, refresh.Decision) { return refresh.Pause(idle) }},
			{"resume", func() (refresh.Model, refresh.Decision) { return refresh.Resume(idle, later) }},
			{"cancel", func() (refresh.Model, refresh.Decision) { return refresh.Cancel(run, later) }},
		}
		for _, bb := range benches {
			b.Run(bb.event+"/"+p.name, func(b *testing.B) {
				if _, d := bb.apply(); d.Event != bb.event {
					b.Fatalf("event %q, want %q", d.Event, bb.event)
				}
				b.ReportAllocs()
				for b.Loop() {
					benchModel, benchDecision = bb.apply()
				}
			})
		}
	}
}

// Sinks that keep the benchmarked calls from being optimised away.
var (
	benchModel    refresh.Model
	benchDecision refresh.Decision
)

// TestApplyOutcomeArrival checks docs/transitions.md (Timeout): an outcome
// counts at its arrival, when a consumer took it off the list, even when it
// is written after the deadline; the attempt ends at the arrival; plans
// count from the time of the write.
func TestApplyOutcomeArrival(t *testing.T) {
	t.Parallel()
	const policy = `{` + parisSchedule + `, "timeout": "1h", "retry": {"delays": ["10m"]}}`
	started := morning.Add(-time.Hour)
	deadline := morning
	arrived := deadline.Add(-time.Second)
	written := deadline.Add(75 * time.Second) // a consumer that waited 76 s on locks
	at := func(o refresh.Outcome, t time.Time) refresh.Outcome { o.ArrivedAt = t; return o }
	success := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
	failure := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"}

	t.Run("success that arrived before the deadline counts", func(t *testing.T) {
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		got, d := refresh.ApplyOutcome(before, at(success, arrived), written)
		require.Equal(t, refresh.EventSuccess, d.Event, d.Why)
		requireTime(t, arrived, got.LastSuccessAt, "the attempt ended at its arrival")
		requireTime(t, arrived, d.At, "the event is dated at the arrival")
		requireTime(t, occAfternoon, got.RefreshAt, "next(now) from the write")
	})
	t.Run("failure plans its retry from the write", func(t *testing.T) {
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		got, d := refresh.ApplyOutcome(before, at(failure, arrived), written)
		require.Equal(t, refresh.DecisionRetry, d.Plan, d.Why)
		requireTime(t, written.Add(10*time.Minute), got.RefreshAt, "retry delay counts from the write")
		requireTime(t, arrived, got.FailingSince)
		requireTime(t, arrived, got.LastError.At)
	})
	t.Run("arrival at the deadline is late even if written before", func(t *testing.T) {
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		got, d := refresh.ApplyOutcome(before, at(success, deadline), deadline)
		require.Equal(t, refresh.EventStale, d.Event)
		require.Contains(t, d.Reason, "the timeout wins")
		requireModel(t, before, got)
	})
	t.Run("a zero arrival counts as the write", func(t *testing.T) {
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		_, d := refresh.ApplyOutcome(before, success, written)
		require.Equal(t, refresh.EventStale, d.Event, "written after the deadline with no arrival: late")
	})
	t.Run("an arrival after the write is taken as the write", func(t *testing.T) {
		before := runningAttempt(t, transitionModel(t, policy), "u1", 1, started)
		got, d := refresh.ApplyOutcome(before, at(success, morning.Add(time.Hour)), arrived)
		require.Equal(t, refresh.EventSuccess, d.Event)
		requireTime(t, arrived, got.LastSuccessAt)
		require.True(t, d.At.IsZero())
	})
}

// TestActionsUnchanged checks Decision.Unchanged of every action in every
// state: set exactly on the no-op actions (enable on a model that is not
// disabled, pause on a paused one, resume on one that is not paused,
// cancel on a disabled one or one with nothing running and nothing
// pending), which return the model as it was; trigger is never a no-op.
func TestActionsUnchanged(t *testing.T) {
	t.Parallel()
	const scheduled = `{` + parisSchedule + `, "timeout": "1h"}`
	now := morning
	type state func(t *testing.T, m refresh.Model) refresh.Model
	idle := func(t *testing.T, m refresh.Model) refresh.Model {
		m.RefreshAt, _ = m.Next(now)
		return m
	}
	running := func(t *testing.T, m refresh.Model) refresh.Model {
		return runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
	}
	disabled := func(t *testing.T, m refresh.Model) refresh.Model {
		m.AttemptNo, m.ConsecutiveFailures, m.FailingSince = 4, 4, now.Add(-time.Hour)
		m.DisabledAt, m.DisabledReason = now.Add(-time.Hour), "gone"
		return m
	}
	paused := func(s state) state {
		return func(t *testing.T, m refresh.Model) refresh.Model {
			m = s(t, m)
			m.Paused = true
			return m
		}
	}
	states := []struct {
		name   string
		policy string
		state  state
	}{
		{"idle, next run planned", scheduled, idle},
		{"idle on demand, nothing planned", `{}`, func(t *testing.T, m refresh.Model) refresh.Model { return m }},
		{"idle after a wait_next round", scheduled, func(t *testing.T, m refresh.Model) refresh.Model {
			m = idle(t, m)
			m.ConsecutiveFailures, m.FailingSince = 4, now.Add(-time.Hour)
			return m
		}},
		{"pending retry", scheduled, func(t *testing.T, m refresh.Model) refresh.Model {
			m.AttemptNo, m.ConsecutiveFailures, m.FailingSince, m.RefreshAt = 1, 1, now.Add(-time.Minute), now.Add(time.Minute)
			return m
		}},
		{"occurrence due exactly now", scheduled, func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = occMorning
			return m
		}},
		{"triggered on demand", `{}`, func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = now
			return m
		}},
		{"running", scheduled, running},
		{"disabled", scheduled, disabled},
		{"paused, next run planned", scheduled, paused(idle)},
		{"paused, overdue", scheduled, paused(func(t *testing.T, m refresh.Model) refresh.Model {
			m.RefreshAt = occMorning.Add(-24 * time.Hour)
			return m
		})},
		{"paused and running", scheduled, paused(running)},
		{"paused and disabled", scheduled, paused(disabled)},
	}
	// unchanged lists, per action, the states in which it is a no-op.
	unchanged := map[string][]string{
		refresh.ActionEnable: {"idle, next run planned", "idle on demand, nothing planned", "idle after a wait_next round",
			"pending retry", "occurrence due exactly now", "triggered on demand", "running",
			"paused, next run planned", "paused, overdue", "paused and running"},
		refresh.ActionPause: {"paused, next run planned", "paused, overdue", "paused and running", "paused and disabled"},
		refresh.ActionResume: {"idle, next run planned", "idle on demand, nothing planned", "idle after a wait_next round",
			"pending retry", "occurrence due exactly now", "triggered on demand", "running", "disabled"},
		refresh.ActionCancel: {"idle, next run planned", "idle on demand, nothing planned", "idle after a wait_next round",
			"disabled", "paused, next run planned", "paused and disabled"},
		refresh.ActionTrigger: nil,
	}
	act := map[string]func(refresh.Model) (refresh.Model, refresh.Decision){
		refresh.ActionTrigger: func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Trigger(m, now) },
		refresh.ActionEnable:  func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Enable(m, now) },
		refresh.ActionPause:   refresh.Pause,
		refresh.ActionResume:  func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Resume(m, now) },
		refresh.ActionCancel:  func(m refresh.Model) (refresh.Model, refresh.Decision) { return refresh.Cancel(m, now) },
	}
	for action, noop := range unchanged {
		for _, st := range states {
			t.Run(action+"/"+st.name, func(t *testing.T) {
				t.Parallel()
				before := st.state(t, transitionModel(t, st.policy))
				got, d := act[action](before)
				require.Equal(t, action, d.Event)
				require.NotEmpty(t, d.Why)
				want := slices.Contains(noop, st.name)
				require.Equal(t, want, d.Unchanged, d.Why)
				switch {
				case want:
					requireModel(t, before, got)
				case action == refresh.ActionTrigger:
					// A trigger is an event even when the model already
					// is as it leaves it (triggered, idle, nothing failed).
				default:
					require.NotEqual(t, inUTC(before), inUTC(got), "a change changes the model")
				}
			})
		}
	}
}

func TestStaleAlwaysSaysWhy(t *testing.T) {
	t.Parallel()
	m := transitionModel(t, `{}`)
	o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
	got, d := refresh.Stale(m, o, "unknown model")
	requireModel(t, m, got)
	require.Equal(t, "unknown model", d.Reason)
	_, d = refresh.Stale(m, o, "")
	require.Equal(t, "the outcome does not apply to the model", d.Reason)
	require.Equal(t, d.Reason, d.Why)
}

// TestFailedDelayBoundedByGlobalMax checks that a retry never waits past
// the global maximum delay, jitter included.
func TestFailedDelayBoundedByGlobalMax(t *testing.T) {
	t.Parallel()
	const maxDelay = 30 * 24 * time.Hour
	now := morning
	reached := false
	for i := range 100 {
		m := transitionModel(t, `{"timeout": "1h", "retry": {"delays": ["720h"], "jitter": 0.5}}`)
		m.ID = fmt.Sprint("model-", i)
		m = runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
		got, d := refresh.Failed(m, http503, now)
		require.Equal(t, refresh.DecisionRetry, d.Plan)
		require.LessOrEqual(t, d.Delay, maxDelay)
		requireTime(t, now.Add(d.Delay), got.RefreshAt)
		reached = reached || d.Delay == maxDelay
	}
	require.True(t, reached, "some jitter pushes past the limit and is bounded at it")
}
