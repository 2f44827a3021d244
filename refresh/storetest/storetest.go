// Package storetest is the conformance suite every refresh.Store passes.
// An implementation's test calls Run with a constructor of empty stores.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// t0 is the suite's "now"; times are whole microseconds, as PostgreSQL keeps.
var t0 = time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)

// Run runs the suite. newStore returns an empty store for one test.
func Run(t *testing.T, newStore func(t *testing.T) refresh.Store) {
	tests := map[string]func(t *testing.T, s refresh.Store){
		"GetMissing":            testGetMissing,
		"CreateAndGet":          testCreateAndGet,
		"ModifyErrorWritesNone": testModifyErrorWritesNone,
		"ModifyPassesFound":     testModifyPassesFound,
		"ClaimDue":              testClaimDue,
		"ClaimDueConcurrent":    testClaimDueConcurrent,
		"NextDue":               testNextDue,
		"History":               testHistory,
		"List":                  testList,
		"Delete":                testDelete,
		"TryModify":             testTryModify,
		"ClaimPayloadBytes":     testClaimPayloadBytes,
		"ListBoundPayloads":     testListBoundPayloads,
		"Events":                testEvents,
		"UpdateReEnables":       testUpdateReEnables,

		"ExtensionFields":     testExtensionFields,
		"ClaimDueByDueAt":     testClaimDueByDueAt,
		"ClaimWaitingLast":    testClaimWaitingLast,
		"Slots":               testSlots,
		"SlotsToEarliest":     testSlotsToEarliest,
		"Limits":              testLimits,
		"DependentsUpstreams": testDependentsUpstreams,
		"UpstreamCycle":       testUpstreamCycle,
		"Counts":              testCounts,
		"ListPrefix":          testListPrefix,
		"CensusPrefix":        testCensusPrefix,

		"RateLogs":            testRateLogs,
		"RateFields":          testRateFields,
		"FairOffer":           testFairOffer,
		"FairOfferTurn":       testFairOfferTurn,
		"DeleteLimitReleases": testDeleteLimitReleases,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newStore(t))
		})
	}
}

func policy() refresh.Policy {
	return refresh.Policy{
		Schedule:        "FREQ=DAILY;BYHOUR=6,16",
		Timezone:        "Europe/Paris",
		Timeout:         refresh.Duration(time.Hour),
		Retry:           refresh.Retry{Delays: []refresh.Duration{0, refresh.Duration(time.Minute)}, NonRetryable: []string{"validation"}},
		OnExhausted:     refresh.ExhaustedDisable,
		GiveUpAfter:     refresh.Duration(7 * 24 * time.Hour),
		DisabledMessage: "Refresh disabled after {attempts} failed attempt(s): {error}",
	}
}

func model(id string, refreshAt time.Time) refresh.Model {
	return refresh.Model{
		ID: id, Queue: "tables", Payload: json.RawMessage(`{"input_url": "https://example.com/a.csv"}`),
		Policy: policy(), CreatedAt: t0, State: refresh.State{RefreshAt: refreshAt},
	}
}

// put writes models as one Modify.
func put(t *testing.T, s refresh.Store, ms ...refresh.Model) {
	t.Helper()
	ids := make([]string, len(ms))
	changes := make([]refresh.Change, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
		changes[i] = refresh.Change{Model: m}
	}
	require.NoError(t, s.Modify(context.Background(), ids, func([]refresh.Model) (refresh.Batch, error) { return refresh.Batch{Changes: changes}, nil }))
}

// normal makes a model comparable: times in UTC, JSON fields compacted.
func normal(t *testing.T, m refresh.Model) refresh.Model {
	t.Helper()
	for _, p := range []*time.Time{&m.CreatedAt, &m.RefreshAt, &m.DeadlineAt, &m.StartedAt, &m.FailingSince, &m.LastSuccessAt, &m.DisabledAt,
		&m.LastChangedAt, &m.DebounceAt, &m.DebounceSince, &m.OverdueSince, &m.SnoozedSince} {
		*p = p.UTC()
	}
	if m.LastError != nil {
		e := *m.LastError
		e.At = e.At.UTC()
		m.LastError = &e
	}
	if len(m.Payload) > 0 {
		var v any
		require.NoError(t, json.Unmarshal(m.Payload, &v))
		m.Payload, _ = json.Marshal(v)
	}
	b, err := json.Marshal(m.Policy)
	require.NoError(t, err)
	m.Policy = refresh.Policy{}
	require.NoError(t, json.Unmarshal(b, &m.Policy))
	return m
}

func requireCode(t *testing.T, code string, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, refresh.ErrorCode(err), "error: %v", err)
}

func testGetMissing(t *testing.T, s refresh.Store) {
	_, err := s.Get(context.Background(), "nope")
	requireCode(t, refresh.ENOTFOUND, err)
}

func testCreateAndGet(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	m := model("full", t0.Add(time.Hour))
	m.State = refresh.State{
		RefreshAt: t0.Add(2 * time.Hour), DeadlineAt: t0.Add(2 * time.Hour), AttemptNo: 3, AttemptUID: "d0abc",
		StartedAt: t0.Add(time.Hour), ConsecutiveFailures: 2, FailingSince: t0.Add(-time.Hour),
		LastSuccessAt: t0.Add(-48 * time.Hour), LastError: &refresh.LastError{Kind: "http_503", Message: "upstream 503", At: t0},
		DisabledAt: t0.Add(time.Minute), DisabledReason: "Refresh disabled: {weird} text", Paused: true, StatusMessage: "50%",
	}
	put(t, s, m)
	got, err := s.Get(ctx, "full")
	require.NoError(t, err)
	require.Equal(t, normal(t, m), normal(t, got))

	// A second write replaces every field, null ones included.
	m2 := model("full", time.Time{})
	put(t, s, m2)
	got, err = s.Get(ctx, "full")
	require.NoError(t, err)
	require.Equal(t, normal(t, m2), normal(t, got))
}

func testModifyErrorWritesNone(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	put(t, s, model("a", t0))
	boom := errors.New("boom")
	err := s.Modify(ctx, []string{"a", "b"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.AttemptNo = 9
		return refresh.Batch{Changes: []refresh.Change{{Model: m}, {Model: model("b", t0)}}, Events: []refresh.Event{{ModelID: "a", Type: "x"}}}, boom
	})
	require.ErrorIs(t, err, boom)
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 0, got.AttemptNo)
	_, err = s.Get(ctx, "b")
	requireCode(t, refresh.ENOTFOUND, err)
	require.Empty(t, takeAll(t, s), "a failed Modify writes no event")
}

func testModifyPassesFound(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	put(t, s, model("a", t0), model("c", t0))
	var seen []string
	require.NoError(t, s.Modify(ctx, []string{"a", "b", "c"}, func(found []refresh.Model) (refresh.Batch, error) {
		for _, m := range found {
			seen = append(seen, m.ID)
		}
		return refresh.Batch{}, nil
	}))
	require.ElementsMatch(t, []string{"a", "c"}, seen)
}

// claimPlanning claims up to limit models at now, plans each at next and
// returns their ids, checking that ClaimDue counts them.
func claimPlanning(t *testing.T, s refresh.Store, now time.Time, limit int, next time.Time) []string {
	t.Helper()
	var ids []string
	n, err := s.ClaimDue(context.Background(), now, limit, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		ids = nil
		var changes []refresh.Change
		for _, m := range due {
			ids = append(ids, m.ID)
			m.RefreshAt = next
			changes = append(changes, refresh.Change{Model: m})
		}
		return refresh.Batch{Changes: changes}, nil
	})
	require.NoError(t, err)
	require.Equal(t, len(ids), n, "ClaimDue counts the models it passed")
	return ids
}

func testClaimDue(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	pausedIdle := model("paused-idle", t0.Add(-time.Hour))
	pausedIdle.Paused = true
	pausedRunning := model("paused-running", t0.Add(-time.Minute))
	pausedRunning.Paused, pausedRunning.AttemptUID, pausedRunning.DeadlineAt = true, "u1", t0.Add(-time.Minute)
	put(t, s,
		model("late", t0.Add(-2*time.Hour)), model("now", t0), model("future", t0.Add(time.Second)),
		model("never", time.Time{}), pausedIdle, pausedRunning, model("later", t0.Add(-30*time.Minute)),
	)
	require.Equal(t, []string{"late", "later", "paused-running"}, claimPlanning(t, s, t0, 3, t0.Add(24*time.Hour)), "earliest refresh_at first")

	var got []string
	n, err := s.ClaimDue(ctx, t0, 3, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		for _, m := range due {
			got = append(got, m.ID)
		}
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"now"}, got, "claimed models were moved on; paused idle, future and unplanned are not due")

	m, err := s.Get(ctx, "late")
	require.NoError(t, err)
	require.True(t, m.RefreshAt.Equal(t0.Add(24*time.Hour)))

	boom := errors.New("boom")
	_, err = s.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		m := due[0]
		m.RefreshAt = time.Time{}
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, boom
	})
	require.ErrorIs(t, err, boom)
	m, err = s.Get(ctx, "now")
	require.NoError(t, err)
	require.True(t, m.RefreshAt.Equal(t0), "a failed claim writes nothing")
}

func testClaimDueConcurrent(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	const models, workers = 200, 4
	var all []refresh.Model
	for i := range models {
		all = append(all, model(fmt.Sprintf("m%03d", i), t0.Add(-time.Duration(i)*time.Second)))
	}
	put(t, s, all...)
	var mu sync.Mutex
	claims := map[string]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				n, err := s.ClaimDue(ctx, t0, 7, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
					var ch []refresh.Change
					for _, m := range due {
						mu.Lock()
						claims[m.ID]++
						mu.Unlock()
						m.RefreshAt = time.Time{}
						ch = append(ch, refresh.Change{Model: m})
					}
					return refresh.Batch{Changes: ch}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, claims, models)
	for id, n := range claims {
		require.Equal(t, 1, n, "model %s claimed %d times", id, n)
	}
}

func testNextDue(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	_, ok, err := s.NextDue(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	paused := model("paused", t0.Add(-time.Hour))
	paused.Paused = true
	put(t, s, paused, model("b", t0.Add(time.Hour)), model("a", t0.Add(time.Minute)), model("none", time.Time{}))
	next, ok, err := s.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, next.Equal(t0.Add(time.Minute)), "got %s", next)
}

func testHistory(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	m := model("h", t0)
	put(t, s, m)
	write := func(a refresh.Attempt) {
		require.NoError(t, s.Modify(ctx, []string{"h"}, func(found []refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Attempt: &a}}}, nil
		}))
	}
	first := refresh.Attempt{ModelID: "h", UID: "u1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
	write(first)
	second := refresh.Attempt{ModelID: "h", UID: "u2", AttemptNo: 2, StartedAt: t0.Add(2 * time.Hour), DeadlineAt: t0.Add(3 * time.Hour)}
	// The end of attempt u1 completes its row.
	write(refresh.Attempt{ModelID: "h", UID: "u1", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour), FinishedAt: t0.Add(2 * time.Minute),
		Outcome: "failure", ErrorKind: "http_503", ErrorMessage: "upstream 503", Decision: "retry", Delay: time.Minute})
	write(second)

	h, err := s.History(ctx, "h", time.Time{}, 10)
	require.NoError(t, err)
	require.Len(t, h, 2)
	require.Equal(t, "u2", h[0].UID, "newest first")
	require.Equal(t, "", h[0].Outcome)
	require.True(t, h[0].FinishedAt.IsZero())
	u1 := h[1]
	require.Equal(t, "u1", u1.UID)
	require.True(t, u1.StartedAt.Equal(t0))
	require.True(t, u1.FinishedAt.Equal(t0.Add(2*time.Minute)))
	require.Equal(t, []any{"failure", "http_503", "upstream 503", "retry", time.Minute, 1},
		[]any{u1.Outcome, u1.ErrorKind, u1.ErrorMessage, u1.Decision, u1.Delay, u1.AttemptNo})

	h, err = s.History(ctx, "h", time.Time{}, 1)
	require.NoError(t, err)
	require.Len(t, h, 1)
	require.Equal(t, "u2", h[0].UID)
	// The next page starts before the last attempt of this one.
	h, err = s.History(ctx, "h", h[0].StartedAt, 1)
	require.NoError(t, err)
	require.Len(t, h, 1)
	require.Equal(t, "u1", h[0].UID)
	h, err = s.History(ctx, "h", h[0].StartedAt, 1)
	require.NoError(t, err)
	require.Empty(t, h, "nothing started before the first attempt")
	h, err = s.History(ctx, "h", t0.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, h, 1, "before is a time between the two starts")
	require.Equal(t, "u1", h[0].UID)
	_, err = s.History(ctx, "nope", time.Time{}, 10)
	requireCode(t, refresh.ENOTFOUND, err)
}

func testList(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	disabled := model("disabled", time.Time{})
	disabled.DisabledAt, disabled.ConsecutiveFailures = t0, 3
	failing := model("failing", t0)
	failing.ConsecutiveFailures = 1
	running := model("running", t0.Add(time.Hour))
	running.AttemptUID, running.DeadlineAt = "u", t0.Add(time.Hour)
	paused := model("paused", t0)
	paused.Paused = true
	other := model("other", t0)
	other.Queue = "thumbs"
	put(t, s, disabled, failing, running, paused, other, model("plain", t0))

	ids := func(f refresh.Filter) []string {
		ms, err := s.List(ctx, f)
		require.NoError(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	yes, no := true, false
	require.Equal(t, []string{"disabled", "failing", "other", "paused", "plain", "running"}, ids(refresh.Filter{}))
	require.Equal(t, []string{"disabled"}, ids(refresh.Filter{Disabled: &yes}))
	require.Equal(t, []string{"failing", "other", "paused", "plain", "running"}, ids(refresh.Filter{Disabled: &no}))
	require.Equal(t, []string{"disabled", "failing"}, ids(refresh.Filter{Failing: &yes}))
	require.Equal(t, []string{"running"}, ids(refresh.Filter{Running: &yes}))
	require.Equal(t, []string{"paused"}, ids(refresh.Filter{Paused: &yes}))
	require.Equal(t, []string{"other"}, ids(refresh.Filter{Queue: "thumbs"}))
	require.Equal(t, []string{"disabled", "failing"}, ids(refresh.Filter{Limit: 2}))
	require.Equal(t, []string{"other", "paused"}, ids(refresh.Filter{After: "failing", Limit: 2}))
	require.Equal(t, []string{"failing"}, ids(refresh.Filter{After: "disabled", Failing: &yes}))

	for _, noPayload := range []bool{false, true} {
		ms, err := s.List(ctx, refresh.Filter{Queue: "thumbs", NoPayload: noPayload})
		require.NoError(t, err)
		require.Len(t, ms, 1)
		if noPayload {
			require.Nil(t, ms[0].Payload, "NoPayload leaves the payload out")
		} else {
			require.JSONEq(t, `{"input_url": "https://example.com/a.csv"}`, string(ms[0].Payload))
		}
		require.Equal(t, "thumbs", ms[0].Queue, "the other fields are there")
	}
}

func testDelete(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	put(t, s, model("d", t0), model("keep", t0))
	require.NoError(t, s.Modify(ctx, []string{"d"}, func(found []refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Attempt: &refresh.Attempt{ModelID: "d", UID: "u", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0}}}}, nil
	}))
	del := func(id string) {
		require.NoError(t, s.Modify(ctx, []string{id}, func(found []refresh.Model) (refresh.Batch, error) {
			require.Len(t, found, 1)
			return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Delete: true}}}, nil
		}))
	}
	del("d")
	_, err := s.Get(ctx, "d")
	requireCode(t, refresh.ENOTFOUND, err)
	_, err = s.History(ctx, "d", time.Time{}, 10)
	requireCode(t, refresh.ENOTFOUND, err)
	_, err = s.Get(ctx, "keep")
	require.NoError(t, err, "only the named model goes")
	// The id can be used again, with an empty history.
	put(t, s, model("d", t0))
	h, err := s.History(ctx, "d", time.Time{}, 10)
	require.NoError(t, err)
	require.Empty(t, h)
}

func testTryModify(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	put(t, s, model("a", t0), model("c", t0))
	var seen []string
	require.NoError(t, s.TryModify(ctx, []string{"a", "b", "c"}, func(found []refresh.Model, busy []string) (refresh.Batch, error) {
		require.Empty(t, busy, "no other caller holds a model")
		for _, m := range found {
			seen = append(seen, m.ID)
		}
		m := found[0]
		m.AttemptNo = 4
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	require.ElementsMatch(t, []string{"a", "c"}, seen)
	got, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 4, got.AttemptNo, "TryModify writes its batch")
	require.JSONEq(t, `{"input_url": "https://example.com/a.csv"}`, string(got.Payload), "the payload stays")

	// Models come without their payload, and a payload in a change is not
	// written, also beside another change of the same batch.
	require.NoError(t, s.TryModify(ctx, []string{"a", "c"}, func(found []refresh.Model, _ []string) (refresh.Batch, error) {
		var changes []refresh.Change
		for _, m := range found {
			require.Nil(t, m.Payload, "model %s comes without its payload", m.ID)
			if m.ID == "c" {
				m.Payload = json.RawMessage(`{"v":2}`)
			}
			changes = append(changes, refresh.Change{Model: m})
		}
		return refresh.Batch{Changes: changes}, nil
	}))
	a, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.JSONEq(t, `{"input_url": "https://example.com/a.csv"}`, string(a.Payload))
	c, err := s.Get(ctx, "c")
	require.NoError(t, err)
	require.JSONEq(t, `{"input_url": "https://example.com/a.csv"}`, string(c.Payload))
}

// testClaimPayloadBytes: a claim passes models in due order while their
// payloads fit refresh.BatchPayloadBytes, and always the first.
func testClaimPayloadBytes(t *testing.T, s refresh.Store) {
	putPayloadCrowd(t, s)
	claim := func() []string { return claimPlanning(t, s, t0.Add(time.Hour), 10, t0.Add(48*time.Hour)) }
	require.Equal(t, []string{"a", "b", "c"}, claim(), "three thirds fit")
	require.Equal(t, []string{"d"}, claim(), "the next does not fit with d: it waits for the next claim")
	require.Equal(t, []string{"e"}, claim(), "the first model of a claim is passed whatever its size")
	require.Equal(t, []string{"f"}, claim())
	require.Empty(t, claim())
}

// putPayloadCrowd writes models a to f, due in that order, whose payloads
// add up to more than refresh.BatchPayloadBytes: a, b and c a third of it
// each, d and f 2 bytes, e one byte more than all of it.
func putPayloadCrowd(t *testing.T, s refresh.Store) {
	t.Helper()
	big := func(id string, at time.Time, size int) refresh.Model {
		m := model(id, at)
		m.Payload = json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
		return m
	}
	third := refresh.BatchPayloadBytes / 3
	put(t, s, big("a", t0, third), big("b", t0.Add(time.Second), third), big("c", t0.Add(2*time.Second), third),
		big("d", t0.Add(3*time.Second), 2), big("e", t0.Add(4*time.Second), refresh.BatchPayloadBytes+1),
		big("f", t0.Add(5*time.Second), 2))
}

// testListBoundPayloads: a list with BoundPayloads ends with the first
// model whose payload does not fit refresh.BatchPayloadBytes (the first
// model always fits), so that the reader knows where it was cut.
func testListBoundPayloads(t *testing.T, s refresh.Store) {
	putPayloadCrowd(t, s)
	g, h := model("g", t0), model("h", t0)
	g.Payload, h.Payload = nil, nil
	put(t, s, g, h)
	ids := func(f refresh.Filter) []string {
		t.Helper()
		ms, err := s.List(context.Background(), f)
		require.NoError(t, err)
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID)
			if m.ID < "g" {
				require.Equal(t, f.NoPayload, m.Payload == nil, "model %s", m.ID)
			}
		}
		return out
	}
	bound := func(after string) []string { return ids(refresh.Filter{After: after, BoundPayloads: true}) }
	require.Equal(t, []string{"a", "b", "c", "d"}, bound(""), "three thirds fit; d, which does not, ends the list")
	require.Equal(t, []string{"d", "e"}, bound("c"), "e does not fit with d")
	require.Equal(t, []string{"e", "f"}, bound("d"), "the first model fits whatever its size, and the next does not")
	require.Equal(t, []string{"f", "g", "h"}, bound("e"), "models without a payload weigh nothing")
	require.Equal(t, []string{"g", "h"}, bound("f"), "also from the first")
	require.Empty(t, bound("h"))
	require.Equal(t, []string{"c", "d"}, ids(refresh.Filter{After: "b", Limit: 2, BoundPayloads: true}), "the limit ends the list first")
	require.Equal(t, []string{"a", "b"}, ids(refresh.Filter{Limit: 2, BoundPayloads: true}), "the limit still holds")
	all := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	require.Equal(t, all, ids(refresh.Filter{}), "unbounded")
	require.Equal(t, all, ids(refresh.Filter{BoundPayloads: true, NoPayload: true}), "without payloads, nothing to bound")
}

// takeAll takes every event written so far.
func takeAll(t *testing.T, s refresh.Store) []refresh.Event {
	t.Helper()
	var all []refresh.Event
	for {
		n, err := s.TakeEvents(context.Background(), 1000, func(events []refresh.Event) error {
			all = append(all, events...)
			return nil
		})
		require.NoError(t, err)
		if n == 0 {
			return all
		}
	}
}

func testEvents(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	write := func(id string, types ...string) {
		var events []refresh.Event
		for _, typ := range types {
			events = append(events, refresh.Event{At: t0, ModelID: id, Type: typ, AttemptNo: 1, Delay: time.Minute})
		}
		m := model(id, t0)
		require.NoError(t, s.Modify(ctx, []string{id}, func([]refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}, Events: events}, nil
		}))
	}
	write("a", "create", "trigger")
	write("b", "create")
	write("a", "start")

	// A failing fn keeps the events.
	boom := errors.New("boom")
	_, err := s.TakeEvents(ctx, 1000, func([]refresh.Event) error { return boom })
	require.ErrorIs(t, err, boom)

	// One caller at a time: a second one is told the first is busy.
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	var first []refresh.Event
	go func() {
		_, err := s.TakeEvents(ctx, 1, func(events []refresh.Event) error {
			first = slices.Clone(events)
			close(inside)
			<-release
			return nil
		})
		done <- err
	}()
	<-inside
	_, err = s.TakeEvents(ctx, 1000, func([]refresh.Event) error {
		t.Error("a second caller took events while the first held them")
		return nil
	})
	require.ErrorIs(t, err, refresh.ErrBusy)
	close(release)
	require.NoError(t, <-done)

	rest := takeAll(t, s)
	var got []string
	for _, e := range append(first, rest...) {
		got = append(got, e.ModelID+":"+e.Type)
		require.True(t, e.At.Equal(t0))
		require.Equal(t, time.Minute, e.Delay)
	}
	require.Equal(t, []string{"a:create", "a:trigger", "b:create", "a:start"}, got, "in commit order, each once")
	require.Empty(t, takeAll(t, s))
}
