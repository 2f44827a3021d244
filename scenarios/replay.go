package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// This file replays a model's recorded history under another policy (the
// replay of `freshen simulate --model`): the attempts behave as the
// recorded ones did, the real scheduler decides anew when they start, and
// the recorded timeline is set beside the replayed one.

// MaxReplaySpan is the longest period a replay covers.
const MaxReplaySpan = 366 * 24 * time.Hour

// Replay is how the attempts of a replay behave: as the attempts of a
// recorded history. An attempt started at t behaves as the latest recorded
// attempt started at or before t (its outcome, kind, message and
// duration); an attempt started before the first recorded one behaves as
// the first. Only recorded attempts whose outcome is known count: success
// (an unchanged one too), failure and timeout; a superseded, cancelled,
// snoozed or running attempt tells nothing of how an attempt goes.
//
// The history does not record whether a failure was retryable, nor its
// user message: a replayed failure is retryable unless the policy refuses
// its kind, and its disabling uses the policy's disabled_message.
type Replay struct {
	starts     []time.Time
	behaviours []Behaviour
}

// NewReplay returns the replay of history, a model's attempts in any
// order.
func NewReplay(history []refresh.Attempt) *Replay {
	sorted := slices.Clone(history)
	slices.SortStableFunc(sorted, func(a, b refresh.Attempt) int { return a.StartedAt.Compare(b.StartedAt) })
	r := &Replay{}
	for _, a := range sorted {
		if b, ok := recordedBehaviour(a); ok {
			r.starts = append(r.starts, a.StartedAt)
			r.behaviours = append(r.behaviours, b)
		}
	}
	return r
}

// recordedBehaviour returns how the recorded attempt a went, if its
// outcome is known.
func recordedBehaviour(a refresh.Attempt) (Behaviour, bool) {
	took := max(a.FinishedAt.Sub(a.StartedAt), 0)
	switch a.Outcome {
	case refresh.OutcomeSuccess, refresh.AttemptUnchanged:
		return Behaviour{Outcome: behaveSuccess, After: took}, true
	case refresh.OutcomeFailure:
		kind := a.ErrorKind
		if kind == "" {
			kind = "error"
		}
		return Behaviour{Outcome: behaveFailure, After: took, Kind: kind, Message: a.ErrorMessage}, true
	case refresh.EventTimeout:
		return Behaviour{Outcome: behaveTimeout}, true
	}
	return Behaviour{}, false
}

// Len returns the number of recorded attempts whose outcome is known.
func (r *Replay) Len() int { return len(r.starts) }

// At returns how an attempt started at t behaves, and false if no recorded
// attempt has a known outcome.
func (r *Replay) At(t time.Time) (Behaviour, bool) {
	if len(r.starts) == 0 {
		return Behaviour{}, false
	}
	// The first recorded start after t; the one before it is the latest
	// at or before t.
	i, _ := slices.BinarySearchFunc(r.starts, t, func(s, t time.Time) int {
		if s.After(t) {
			return 1
		}
		return -1
	})
	return r.behaviours[max(i-1, 0)], true
}

// behaviour returns how attempt i of a run (in order of starts), started
// at start, behaves: as the spec's Replay says, else as Attempts[i], then
// Default.
func (s Spec) behaviour(i int, start time.Time) Behaviour {
	if s.Replay != nil {
		if b, ok := s.Replay.At(start); ok {
			return b
		}
		return s.Default
	}
	if i < len(s.Attempts) {
		return s.Attempts[i]
	}
	return s.Default
}

// Recording is a model's recorded history, to be replayed.
type Recording struct {
	// Model is the model as it is now: its id (which seeds the jitter),
	// queue, payload, creation time (the anchor of a schedule without
	// DTSTART) and, if disabled, its reason.
	Model refresh.Model
	// Attempts is its history, in any order.
	Attempts []refresh.Attempt
	// Since and Until are the period asked for; Until is now.
	Since, Until time.Time
	// Truncated reports that Attempts is only the newest part of the
	// history: the period may hold older attempts that were not read.
	Truncated bool
}

// Where a replay's period begins.
const (
	// CoveredPeriod: at the start of the period asked for.
	CoveredPeriod = "period"
	// CoveredCreation: at the model's creation, later than that.
	CoveredCreation = "creation"
	// CoveredHistory: at the oldest attempt read, the history of the
	// period being longer than what was read.
	CoveredHistory = "history"
)

// Replayed is the result of a replay: the period it covers, what really
// happened and what would have happened under the proposed policy.
type Replayed struct {
	ModelID string
	// From and Until are the period covered; Since is the start asked
	// for, and CoveredBy says why From is later, if it is (one of the
	// Covered* constants).
	From, Until, Since time.Time
	CoveredBy          string
	// Recorded is the history of the period as a timeline (see
	// RecordedTimeline); Replay is the replay's.
	Recorded, Replay []Entry
	// RecordedTally and ReplayTally count them.
	RecordedTally, ReplayTally Tally
}

// Tally counts a timeline: its attempts, its retries (failures decided
// retry or retry_aligned) and the times it was disabled.
type Tally struct {
	Attempts int
	Retries  int
	Disabled []time.Time
}

// TallyOf counts timeline.
func TallyOf(timeline []Entry) Tally {
	var t Tally
	for _, e := range timeline {
		switch {
		case e.Event == refresh.EventStart:
			t.Attempts++
		case e.Decision == refresh.DecisionRetry || e.Decision == refresh.DecisionRetryAligned:
			t.Retries++
		case e.Decision == refresh.DecisionDisable:
			t.Disabled = append(t.Disabled, e.At)
		}
	}
	return t
}

// NoHistoryError is RunReplay's error when the period holds no recorded
// attempt.
type NoHistoryError struct {
	ModelID     string
	From, Until time.Time
}

func (e *NoHistoryError) Error() string {
	return fmt.Sprintf("model %q has no recorded attempt from %s to %s: there is nothing to replay",
		e.ModelID, utc(e.From), utc(e.Until))
}

// RunReplay replays rec under policy with Run: the model starts the period
// idle, with no failure, planned at the policy's first occurrence; its
// attempts behave as the recorded ones (Replay); the recorded actions that
// the history shows are applied again at their times: a trigger where an
// attempt was superseded, a cancel where one was cancelled, and, under an
// on-demand policy, a trigger at each recorded start of a round (attempt
// 1), since nothing else would start it; and when the period begins at the
// model's creation, a trigger at its first start if the model's own
// schedule (rec.Model.Policy) had no occurrence before it (it was created
// with trigger: true). Enables are not in the history:
// a replayed model that is disabled stays so until such a trigger.
//
// A broken rule of policy or of the period is an *refresh.ValidationError
// naming the field ("policy.retry.delays[0]", "since"); a period without a
// recorded attempt is a *NoHistoryError.
func RunReplay(ctx context.Context, rec Recording, policy json.RawMessage, lim refresh.Limits, opts ...RunOption) (Replayed, error) {
	var errs []refresh.FieldError
	p, err := refresh.ParsePolicy(policy, lim)
	if err != nil {
		var v *refresh.ValidationError
		if !errors.As(err, &v) {
			return Replayed{}, err
		}
		for _, f := range v.Fields {
			field := "policy"
			if f.Field != "" {
				field += "." + f.Field
			}
			errs = append(errs, refresh.FieldError{Field: field, Rule: f.Rule})
		}
	}
	switch span := rec.Until.Sub(rec.Since); {
	case span <= 0:
		errs = append(errs, refresh.FieldError{Field: "since", Rule: "must be before now"})
	case span > MaxReplaySpan:
		errs = append(errs, refresh.FieldError{Field: "since", Rule: fmt.Sprintf("must be at most %d days ago, got %s", MaxReplaySpan/(24*time.Hour), rec.Until.Sub(rec.Since))})
	}
	if len(errs) > 0 {
		return Replayed{}, &refresh.ValidationError{Fields: errs}
	}

	res := Replayed{ModelID: rec.Model.ID, From: rec.Since.UTC(), Until: rec.Until.UTC(), Since: rec.Since.UTC(), CoveredBy: CoveredPeriod}
	if created := rec.Model.CreatedAt; created.After(res.From) {
		res.From, res.CoveredBy = created.UTC(), CoveredCreation
	}
	var attempts []refresh.Attempt
	for _, a := range rec.Attempts {
		if !a.StartedAt.Before(rec.Since) && !a.StartedAt.After(rec.Until) {
			attempts = append(attempts, a)
		}
	}
	slices.SortStableFunc(attempts, func(a, b refresh.Attempt) int { return a.StartedAt.Compare(b.StartedAt) })
	if rec.Truncated && len(attempts) > 0 && attempts[0].StartedAt.After(res.From) {
		res.From, res.CoveredBy = attempts[0].StartedAt.UTC(), CoveredHistory
	}
	if len(attempts) == 0 {
		return Replayed{}, &NoHistoryError{ModelID: rec.Model.ID, From: res.From, Until: res.Until}
	}
	res.Recorded = RecordedTimeline(rec.Model, attempts)

	model := refresh.Model{ID: rec.Model.ID, Policy: p, CreatedAt: rec.Model.CreatedAt}
	if model.CreatedAt.IsZero() {
		model.CreatedAt = res.From
	}
	state := refresh.State{}
	if first, ok := model.First(res.From); ok {
		state.RefreshAt = first
	}
	spec := Spec{
		Start: res.From, Until: res.Until,
		Model: SpecModel{ID: rec.Model.ID, Queue: rec.Model.Queue, Payload: rec.Model.Payload, Policy: policy,
			State: &state, CreatedAt: model.CreatedAt},
		Replay:  NewReplay(attempts),
		Default: Behaviour{Outcome: behaveSuccess},
		Actions: recordedActions(attempts, p.Schedule == "", res.From, res.Until),
	}
	if a := attempts[0]; res.CoveredBy == CoveredCreation && a.AttemptNo == 1 && triggeredAtCreation(rec.Model, a.StartedAt) {
		spec.Actions = append([]Action{{At: a.StartedAt.UTC(), Do: refresh.ActionTrigger}}, spec.Actions...)
		spec.Actions = slices.CompactFunc(spec.Actions, func(a, b Action) bool { return a.At.Equal(b.At) && a.Do == b.Do })
	}
	res.Replay, err = Run(ctx, spec, lim, opts...)
	res.RecordedTally, res.ReplayTally = TallyOf(res.Recorded), TallyOf(res.Replay)
	return res, err
}

// triggeredAtCreation reports whether the first attempt of m, started at
// start, must have been triggered (a model created with trigger: true):
// m's own schedule had no occurrence from its creation to start.
func triggeredAtCreation(m refresh.Model, start time.Time) bool {
	first, ok := m.First(m.CreatedAt)
	return !ok || start.Before(first)
}

// recordedActions returns the actions the recorded attempts show, in time
// order, between from and until: a trigger where one was superseded, a
// cancel where one was cancelled, and, if onDemand, a trigger at each
// start of a round.
func recordedActions(attempts []refresh.Attempt, onDemand bool, from, until time.Time) []Action {
	var out []Action
	add := func(at time.Time, do string) {
		if at.Before(from) || at.After(until) {
			return
		}
		for _, a := range out {
			if a.At.Equal(at) && a.Do == do {
				return
			}
		}
		out = append(out, Action{At: at.UTC(), Do: do})
	}
	for _, a := range attempts {
		switch a.Outcome {
		case refresh.AttemptSuperseded:
			add(a.FinishedAt, refresh.ActionTrigger)
		case refresh.AttemptCancelled:
			add(a.FinishedAt, refresh.ActionCancel)
		}
		if onDemand && a.AttemptNo == 1 {
			add(a.StartedAt, refresh.ActionTrigger)
		}
	}
	slices.SortStableFunc(out, func(a, b Action) int { return a.At.Compare(b.At) })
	return out
}

// RecordedTimeline returns what the history of m shows, as a timeline in
// the shape of Run's: each attempt's start, and its end as the event that
// ended it (success, failure, timeout; trigger for a superseded attempt,
// cancel for a cancelled one, snooze for a snoozed one) with the decision
// recorded. Entries carry what the history knows: refresh_at after an end
// is the planned retry for a retry, else when the next attempt really
// started (null if none did, or after a disabling); disabled holds from a
// disabling to the next start, and the reason of the last disabling is the
// model's if it is still disabled.
func RecordedTimeline(m refresh.Model, attempts []refresh.Attempt) []Entry {
	sorted := slices.Clone(attempts)
	slices.SortStableFunc(sorted, func(a, b refresh.Attempt) int { return a.StartedAt.Compare(b.StartedAt) })
	var out []Entry
	disabled := false
	for i, a := range sorted {
		disabled = false
		out = append(out, Entry{At: a.StartedAt.UTC(), Event: refresh.EventStart, AttemptNo: a.AttemptNo,
			RefreshAt: a.DeadlineAt.UTC(), DeadlineAt: a.DeadlineAt.UTC()})
		if a.FinishedAt.IsZero() || a.Outcome == "" {
			continue
		}
		var next time.Time
		if i+1 < len(sorted) {
			next = sorted[i+1].StartedAt.UTC()
		}
		e := Entry{At: a.FinishedAt.UTC(), AttemptNo: a.AttemptNo, RefreshAt: next}
		switch a.Outcome {
		case refresh.OutcomeSuccess, refresh.AttemptUnchanged:
			e.Event, e.AttemptNo = refresh.EventSuccess, 0
		case refresh.OutcomeFailure, refresh.EventTimeout:
			e.Event, e.Kind, e.Decision = a.Outcome, a.ErrorKind, a.Decision
			switch a.Decision {
			case refresh.DecisionRetry:
				e.RefreshAt = a.FinishedAt.Add(a.Delay).UTC()
			case refresh.DecisionWaitNext:
				e.AttemptNo = 0
			case refresh.DecisionDisable:
				e.RefreshAt, disabled = time.Time{}, true
				if i == len(sorted)-1 && m.Disabled() {
					e.Reason = m.DisabledReason
				}
			}
		case refresh.AttemptSuperseded:
			e.Event, e.AttemptNo, e.RefreshAt = refresh.EventTrigger, 0, a.FinishedAt.UTC()
		case refresh.AttemptCancelled:
			e.Event, e.AttemptNo = refresh.EventCancel, 0
		case refresh.AttemptSnoozed:
			e.Event, e.AttemptNo = refresh.EventSnooze, a.AttemptNo-1
		default:
			e.Event = a.Outcome
		}
		e.Disabled = disabled
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return a.At.Compare(b.At) })
	return out
}
