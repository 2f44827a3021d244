package http

import (
	"encoding/json"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Time is a time in JSON: RFC 3339 in UTC in whole seconds, the fraction
// cut off (so a time shown is never later than the time kept), or null for
// the zero time. Every time of the API is written so.
type Time time.Time

// MarshalJSON writes t, or null if t is zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(time.Time(t).UTC().Truncate(time.Second).Format(time.RFC3339))
}

// UnmarshalJSON reads an RFC 3339 time, or null as the zero time.
func (t *Time) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*t = Time{}
		return nil
	}
	var v time.Time
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*t = Time(v)
	return nil
}

// nullString is a string in JSON, null when empty.
type nullString string

func (s nullString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// UnmarshalJSON reads a string, or null as "".
func (s *nullString) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*s = ""
		return nil
	}
	return json.Unmarshal(data, (*string)(s))
}

// Model is the JSON of a model. Unset times and the uid of an idle model
// are null; disabled and running are spelled out.
type Model struct {
	ID                  string          `json:"id"`
	Queue               string          `json:"queue"`
	Payload             json.RawMessage `json:"payload"`
	Policy              refresh.Policy  `json:"policy"`
	CreatedAt           Time            `json:"created_at"`
	RefreshAt           Time            `json:"refresh_at"`
	DeadlineAt          Time            `json:"deadline_at"`
	AttemptNo           int             `json:"attempt_no"`
	AttemptUID          nullString      `json:"attempt_uid"`
	StartedAt           Time            `json:"started_at"`
	Running             bool            `json:"running"`
	ConsecutiveFailures int             `json:"consecutive_failures"`
	FailingSince        Time            `json:"failing_since"`
	LastSuccessAt       Time            `json:"last_success_at"`
	LastError           *LastError      `json:"last_error"`
	Disabled            bool            `json:"disabled"`
	DisabledAt          Time            `json:"disabled_at"`
	DisabledReason      nullString      `json:"disabled_reason"`
	Paused              bool            `json:"paused"`
	StatusMessage       nullString      `json:"status_message"`

	// The fields of the extensions (docs/policy.md).

	// Upstreams are the models whose changes trigger this one ([] for
	// none); UpstreamsMode is all or any.
	Upstreams     []string `json:"upstreams"`
	UpstreamsMode string   `json:"upstreams_mode"`
	// RateKey is the key of the rate_key limits that cover the model, null
	// for none.
	RateKey nullString `json:"rate_key"`
	// State is the model's state by the precedence of a freshness_lost:
	// disabled, paused, running, snoozed, retrying, waiting_for_slot,
	// scheduled or idle.
	State          string `json:"state"`
	WaitingForSlot bool   `json:"waiting_for_slot"`
	// WaitingLimit names the full limit a waiting model waits for, as
	// kind:key (e.g. "prefix:acme-"); null when it does not wait.
	WaitingLimit *string `json:"waiting_limit"`
	// WaitingUntil is, while the model waits for a rate limit, when that
	// limit admits its next start (as known when the wait began); null
	// otherwise.
	WaitingUntil Time `json:"waiting_until"`
	// OverdueSince is set while a freshness episode is open; OverdueAt is
	// when the model becomes overdue without a success (null without
	// max_age).
	OverdueSince  Time `json:"overdue_since"`
	OverdueAt     Time `json:"overdue_at"`
	DebounceAt    Time `json:"debounce_at"`
	SnoozedSince  Time `json:"snoozed_since"`
	LastChangedAt Time `json:"last_changed_at"`
	// SpreadOffset is the shift of every scheduled occurrence (policy
	// spread), absent without one.
	SpreadOffset *refresh.Duration `json:"spread_offset,omitempty"`
}

// UpstreamStatus is the JSON of one upstream of a model: status is
// changed (since the model's last success), waiting (to refresh),
// disabled, paused or missing.
type UpstreamStatus struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	LastChangedAt  Time       `json:"last_changed_at"`
	DisabledReason nullString `json:"disabled_reason,omitempty"`
}

// ModelWithRuns is the JSON of one model as the routes that return one
// model show it: with its next planned runs.
type ModelWithRuns struct {
	Model
	NextRuns []Time `json:"next_runs"`
	// UpstreamStatus lists each upstream with its status, and WaitingFor
	// says what the model waits for (refresh.UpstreamWaiting), e.g.
	// "waiting for orders, whose refresh is disabled: ...", null when its
	// condition holds or it has no upstreams.
	UpstreamStatus []UpstreamStatus `json:"upstream_status,omitempty"`
	WaitingFor     nullString       `json:"waiting_for,omitempty"`
}

// withUpstreams returns v with the status of m's upstreams, ups being the
// upstreams that exist.
func withUpstreams(v ModelWithRuns, m refresh.Model, ups map[string]refresh.Upstream) ModelWithRuns {
	sts, waiting := UpstreamStatuses(m, ups)
	v.UpstreamStatus, v.WaitingFor = sts, nullString(waiting)
	return v
}

// UpstreamStatuses returns the status of each of m's upstreams, in the
// order m names them, and what m waits for (refresh.UpstreamWaiting, ""
// when its condition holds); ups holds the upstreams that exist
// (Store.Upstreams). A model without upstreams has none and waits for
// nothing. The API and the dashboard show both.
func UpstreamStatuses(m refresh.Model, ups map[string]refresh.Upstream) ([]UpstreamStatus, string) {
	if len(m.Upstreams) == 0 {
		return nil, ""
	}
	sts := make([]UpstreamStatus, 0, len(m.Upstreams))
	for _, id := range m.Upstreams {
		u, ok := ups[id]
		st := UpstreamStatus{ID: id, LastChangedAt: Time(u.LastChangedAt)}
		switch {
		case !ok:
			st.Status = UpstreamMissing
		case !u.LastChangedAt.IsZero() && u.LastChangedAt.After(m.LastSuccessAt):
			st.Status = UpstreamChanged
		case u.Disabled:
			st.Status, st.DisabledReason = UpstreamDisabled, nullString(u.DisabledReason)
		case u.Paused:
			st.Status = UpstreamPaused
		default:
			st.Status = UpstreamWaiting
		}
		sts = append(sts, st)
	}
	return sts, refresh.UpstreamWaiting(m, ups)
}

// The statuses of an upstream (UpstreamStatus.Status).
const (
	UpstreamChanged  = "changed"
	UpstreamWaiting  = "waiting"
	UpstreamDisabled = "disabled"
	UpstreamPaused   = "paused"
	UpstreamMissing  = "missing"
)

// LastError is the JSON of a model's last error.
type LastError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	At      Time   `json:"at"`
}

// newModel returns the JSON view of m.
func newModel(m refresh.Model) Model {
	v := Model{
		ID: m.ID, Queue: m.Queue, Payload: m.Payload, Policy: m.Policy.Stated(),
		CreatedAt: Time(m.CreatedAt), RefreshAt: Time(m.RefreshAt), DeadlineAt: Time(m.DeadlineAt),
		AttemptNo: m.AttemptNo, AttemptUID: nullString(m.AttemptUID), StartedAt: Time(m.StartedAt),
		Running: m.Running(), ConsecutiveFailures: m.ConsecutiveFailures, FailingSince: Time(m.FailingSince),
		LastSuccessAt: Time(m.LastSuccessAt), Disabled: m.Disabled(), DisabledAt: Time(m.DisabledAt),
		DisabledReason: nullString(m.DisabledReason), Paused: m.Paused, StatusMessage: nullString(m.StatusMessage),
	}
	if len(v.Payload) == 0 {
		v.Payload = json.RawMessage("null")
	}
	v.Upstreams, v.UpstreamsMode, v.RateKey = m.Upstreams, m.UpstreamsMode, nullString(m.RateKey)
	if v.Upstreams == nil {
		v.Upstreams = []string{}
	}
	if v.UpstreamsMode == "" {
		v.UpstreamsMode = refresh.UpstreamsAll
	}
	v.State, v.WaitingForSlot = m.Phase(), m.WaitingForSlot
	if m.WaitingForSlot && m.WaitingLimit != "" {
		v.WaitingLimit = &m.WaitingLimit
	}
	if m.WaitingForSlot {
		v.WaitingUntil = Time(m.WaitingUntil)
	}
	v.OverdueSince, v.DebounceAt, v.SnoozedSince, v.LastChangedAt = Time(m.OverdueSince), Time(m.DebounceAt), Time(m.SnoozedSince), Time(m.LastChangedAt)
	if at, ok := m.OverdueAt(); ok {
		v.OverdueAt = Time(at)
	}
	if m.Policy.Spread > 0 {
		off := refresh.Duration(m.SpreadOffset())
		v.SpreadOffset = &off
	}
	if e := m.LastError; e != nil {
		v.LastError = &LastError{Kind: e.Kind, Message: e.Message, At: Time(e.At)}
	}
	return v
}

// nextRunCount is how many planned runs a model's JSON lists.
const nextRunCount = 5

// withNextRuns returns the view of m with its next planned runs: refresh_at
// if a start is planned, then the schedule's occurrences after it. A
// running model's next runs are the occurrences after now, as if it
// succeeded at once. A disabled model, and an on-demand model with nothing
// planned, have none. A paused model lists the runs it would make once
// resumed.
func withNextRuns(m refresh.Model, now time.Time) ModelWithRuns {
	return ModelWithRuns{Model: newModel(m), NextRuns: NextRuns(m, now, nextRunCount)}
}

// NextRuns returns up to n planned runs of m (see the Model JSON); never
// nil.
func NextRuns(m refresh.Model, now time.Time, n int) []Time {
	runs := make([]Time, 0, n)
	if m.Disabled() || n <= 0 {
		return runs
	}
	var t time.Time
	switch {
	case m.Running():
		t = now
	case !m.RefreshAt.IsZero():
		t = m.RefreshAt
		runs = append(runs, Time(t))
	default:
		return runs
	}
	for len(runs) < n {
		next, ok := m.Next(t)
		if !ok {
			break
		}
		runs = append(runs, Time(next))
		t = next
	}
	return runs
}

// Decision is the JSON of a transition's decision.
type Decision struct {
	Event string `json:"event"`
	Rule  string `json:"rule"`
	Why   string `json:"why"`
}

// Attempt is the JSON of one row of a model's history. Outcome is null
// while the attempt runs.
type Attempt struct {
	UID          string     `json:"uid"`
	AttemptNo    int        `json:"attempt_no"`
	StartedAt    Time       `json:"started_at"`
	DeadlineAt   Time       `json:"deadline_at"`
	FinishedAt   Time       `json:"finished_at"`
	Outcome      nullString `json:"outcome"`
	ErrorKind    string     `json:"error_kind,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
	// Decision is what the failure decided: retry, retry_aligned,
	// wait_next or disable.
	Decision string `json:"decision,omitempty"`
	// Delay is the retry delay the failure computed.
	Delay *refresh.Duration `json:"delay,omitempty"`
}

func newAttempt(a refresh.Attempt) Attempt {
	v := Attempt{
		UID: a.UID, AttemptNo: a.AttemptNo, StartedAt: Time(a.StartedAt), DeadlineAt: Time(a.DeadlineAt),
		FinishedAt: Time(a.FinishedAt), Outcome: nullString(a.Outcome),
		ErrorKind: a.ErrorKind, ErrorMessage: a.ErrorMessage, Decision: a.Decision,
	}
	if a.Decision == refresh.DecisionRetry || a.Decision == refresh.DecisionRetryAligned {
		d := refresh.Duration(a.Delay)
		v.Delay = &d
	}
	return v
}
