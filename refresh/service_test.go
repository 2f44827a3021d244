package refresh_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestServicePutValidates(t *testing.T) {
	b := setup(t)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{
		ID: "bad/id", Queue: "", Payload: json.RawMessage(`{`),
		Policy: json.RawMessage(`{"timeout": "-1s", "retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`),
	})
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "got %v", err)
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	var fields []string
	for _, f := range v.Fields {
		fields = append(fields, f.Field)
	}
	require.Contains(t, fields, "id")
	require.Contains(t, fields, "payload")
	require.Contains(t, fields, "policy.timeout")
	require.Contains(t, fields, "policy.retry.backoff.multiplier")
	require.Contains(t, err.Error(), "policy.retry.backoff.multiplier: must be >= 1, got 0.5")
	_, err = b.store.Get(context.Background(), "bad/id")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "nothing written")
}

func TestServicePutCreatesThenReplaces(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	m, created, err := b.svc.Put(ctx, refresh.PutRequest{ID: "r", Queue: "q", Policy: json.RawMessage(hourly)})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "q", m.Queue)
	require.True(t, m.CreatedAt.Equal(t0))
	require.True(t, m.RefreshAt.Equal(time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)), "first(now) of the hourly rule")
	require.Equal(t, []string{"create:r"}, types(b.events(t)))

	// Replacing an idle model re-plans it under the new schedule and keeps its state.
	b.clock.Advance(time.Minute)
	m, created, err = b.svc.Put(ctx, refresh.PutRequest{ID: "r", Queue: "q", Policy: json.RawMessage(`{"schedule": "DTSTART:20260302T000000Z\nRRULE:FREQ=DAILY;BYHOUR=12", "timeout": "5m"}`)})
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, m.RefreshAt.Equal(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)))
	require.True(t, m.CreatedAt.Equal(t0))
	require.Empty(t, b.events(t), "a replace without trigger is not a lifecycle event")

	// Replacing with trigger refreshes at once.
	m = b.put(t, "r", `{"timeout": "5m"}`, true)
	require.True(t, m.RefreshAt.Equal(b.clock.Now()))
	require.Equal(t, []string{"trigger:r"}, types(b.events(t)))
	got, err := b.store.Get(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "", got.Policy.Schedule)
}

func TestServicePutKeepsARetryRound(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "r", `{"timeout": "10m", "retry": {"delays": ["30m"]}}`, true)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	_, err := s.RunOnce(ctx)
	require.NoError(t, err)
	job := b.queue.Take("q", 1)[0]
	b.queue.Deliver(refresh.Outcome{ModelID: "r", AttemptUID: job.AttemptUID, Type: refresh.OutcomeFailure, Kind: "x"})
	_, err = b.consumer(t, b.store).RunOnce(ctx)
	require.NoError(t, err)
	m, err := b.store.Get(ctx, "r")
	require.NoError(t, err)
	retryAt := m.RefreshAt
	require.True(t, retryAt.Equal(t0.Add(30*time.Minute)))

	m = b.put(t, "r", `{"timeout": "20m", "retry": {"delays": ["30m"]}}`, false)
	require.True(t, m.RefreshAt.Equal(retryAt), "the pending retry stays planned")
	require.Equal(t, 1, m.AttemptNo)
}

func TestServiceAct(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	_, _, err := b.svc.Act(ctx, "nope", refresh.ActionTrigger)
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
	b.put(t, "m", hourly, false)
	_, _, err = b.svc.Act(ctx, "m", "explode")
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))

	woken := 0
	b.svc.WakeFunc = func() { woken++ }
	for _, action := range []string{refresh.ActionPause, refresh.ActionTrigger, refresh.ActionResume, refresh.ActionCancel, refresh.ActionEnable, refresh.ActionPause, refresh.ActionPause} {
		m, d, err := b.svc.Act(ctx, "m", action)
		require.NoError(t, err)
		require.Equal(t, action, d.Event)
		require.NotEmpty(t, d.Why)
		got, err := b.store.Get(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, m.State, got.State, "the returned model is the one written")
	}
	require.Equal(t, 5, woken, "no-op actions wake nothing")
	require.Equal(t, []string{"create:m", "pause:m", "trigger:m", "resume:m", "cancel:m", "pause:m"}, types(b.events(t)),
		"enable on an enabled model and pause on a paused one publish nothing")
}

func TestNames(t *testing.T) {
	tests := []struct {
		name      string
		id, queue bool
	}{
		{"a", true, true},
		{"Z9._@-x", true, true},
		{"tenant:model", true, false},
		{strings.Repeat("a", 200), true, true},
		{strings.Repeat("a", 201), false, false},
		{"", false, false},
		{"-a", false, false},
		{".a", false, false},
		{"a/b", false, false},
		{"a b", false, false},
		{"a\x00", false, false},
		{"a\xff", false, false},
		{"é", false, false},
		{"a\n", false, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.id, refresh.ValidID(tt.name), "id %q", tt.name)
		require.Equal(t, tt.queue, refresh.ValidQueue(tt.name), "queue %q", tt.name)
	}
}

func TestServiceRefusesBadIDsEverywhere(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for _, id := range []string{"a\x00", "a\xff", "", "a/b"} {
		_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: id})
		require.Equal(t, "id: "+refresh.IDRule, refresh.ErrorMessage(err))
		_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: id})
		require.Equal(t, "id: "+refresh.IDRule, refresh.ErrorMessage(err))
		_, _, err = b.svc.Act(ctx, id, refresh.ActionTrigger)
		require.Equal(t, "id: "+refresh.IDRule, refresh.ErrorMessage(err))
		err = b.svc.Delete(ctx, id)
		require.Equal(t, "id: "+refresh.IDRule, refresh.ErrorMessage(err))
	}
	_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", Queue: "a:b"})
	require.Equal(t, "queue: "+refresh.QueueRule, refresh.ErrorMessage(err))
}

func TestServicePayloadRules(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		rule    string // "" if accepted
	}{
		{"object", `{"input_url": "s3://x"}`, ""},
		{"as deep as allowed", strings.Repeat("[", 32) + strings.Repeat("]", 32), ""},
		{"brackets in strings do not nest", `["` + strings.Repeat("[", 100) + `\"["]`, ""},
		{"NUL escape", `{"a": "x\u0000y"}`, ""},
		{"lone surrogate", `"\ud800"`, ""},
		{"one level too deep", strings.Repeat("[", 33) + strings.Repeat("]", 33), "payload: nested deeper than 32 levels"},
		{"deep objects", strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000), "payload: nested deeper than 32 levels"},
		{"too large", `"` + strings.Repeat("x", 64<<10) + `"`, "payload: must be at most 65536 bytes, got 65538"},
		{"not UTF-8", "\"\xff\"", "payload: must be UTF-8"},
		{"not JSON", `{"a": }`, "payload: must be JSON"},
		{"raw NUL", "\"\x00\"", "payload: must be JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			m, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "m", Payload: json.RawMessage(tt.payload)})
			if tt.rule != "" {
				require.Equal(t, tt.rule, refresh.ErrorMessage(err))
				require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.payload, string(m.Payload), "stored as written")
		})
	}
}

func TestServicePolicyWithNULIsRefused(t *testing.T) {
	b := setup(t)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "m", Policy: json.RawMessage(`{"disabled_message": "a\u0000b"}`)})
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v))
	require.Len(t, v.Fields, 1)
	require.True(t, strings.HasPrefix(v.Fields[0].Field, "policy"), v.Fields[0].Field)
	// An escaped backslash before "u0000" is no NUL.
	_, _, err = b.svc.Put(context.Background(), refresh.PutRequest{ID: "m", Policy: json.RawMessage(`{"disabled_message": "a\\u0000b"}`)})
	require.NoError(t, err)
}

func TestServiceErrorsAreCapped(t *testing.T) {
	b := setup(t)
	b.svc.Limits.MaxFieldErrors = 5
	var policy strings.Builder
	policy.WriteString("{")
	for i := range 1000 {
		fmt.Fprintf(&policy, `"x%d": 1,`, i)
	}
	policy.WriteString(`"timeout": "1h"}`)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "-", Policy: json.RawMessage(policy.String())})
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "got %v", err)
	require.Len(t, v.Fields, 5)
	require.Equal(t, "id", v.Fields[0].Field)
	require.Equal(t, "policy.x0", v.Fields[1].Field)
}

func TestServicePutChecksTheScheduleAtTheTimeOfTheWrite(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ended := `{"schedule": "DTSTART:20250101T000000Z\nRRULE:FREQ=DAILY;UNTIL=20250201T000000Z"}`
	_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", Policy: json.RawMessage(ended)})
	require.Equal(t, "policy.schedule: rule has no occurrence after 2026-03-02T04:30:00Z", refresh.ErrorMessage(err))

	// A schedule that ends after its last run stays as it is when the
	// rest of the definition changes, but is checked again when it changes.
	once := `{"schedule": "DTSTART:20260302T060000Z\nRRULE:FREQ=DAILY;COUNT=1"}`
	_, _, err = b.svc.Put(ctx, refresh.PutRequest{ID: "m", Policy: json.RawMessage(once)})
	require.NoError(t, err)
	b.clock.Advance(24 * time.Hour)
	m, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", Payload: json.RawMessage(`{"v": 2}`), Policy: json.RawMessage(once)})
	require.NoError(t, err)
	require.True(t, m.RefreshAt.IsZero(), "nothing left to plan")
	_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", Payload: json.RawMessage(`{"v": 3}`)})
	require.NoError(t, err)
	_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", Policy: json.RawMessage(`{"timezone": "Europe/Paris"}`)})
	require.Equal(t, "policy.schedule: rule has no occurrence after 2026-03-03T04:30:00Z", refresh.ErrorMessage(err))

	// Occurrences closer than the minimum interval (1m by default).
	_, _, err = b.svc.Put(ctx, refresh.PutRequest{ID: "dense", Policy: json.RawMessage(`{"schedule": "FREQ=SECONDLY;INTERVAL=10"}`)})
	require.Equal(t, "policy.schedule: occurrences must be at least 1m apart, got 10s", refresh.ErrorMessage(err))
	_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", Policy: json.RawMessage(`{"schedule": "FREQ=MINUTELY;BYSECOND=0,30"}`)})
	require.Equal(t, "policy.schedule: occurrences must be at least 1m apart, got 30s", refresh.ErrorMessage(err))
}

func TestServicePatchMergesLikeRFC7396(t *testing.T) {
	// RFC 7396 appendix A, over the payload.
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Members keep their order and untouched values their bytes.
		{`{"z": 1, "a": {"x": "<&>",  "y": [1, 2]}}`, `{"b": 2, "z": 3}`, `{"z":3,"a":{"x": "<&>",  "y": [1, 2]},"b":2}`},
		{`{"a":1}`, `{"a":null,"a":2}`, `{"a":2}`},
	}
	for _, tt := range tests {
		b := setup(t)
		ctx := context.Background()
		_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", Payload: json.RawMessage(tt.target)})
		require.NoError(t, err)
		m, err := b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", Payload: json.RawMessage(tt.patch)})
		require.NoError(t, err, tt.patch)
		require.Equal(t, tt.want, string(m.Payload), "%s + %s", tt.target, tt.patch)
	}
	// A null payload removes it.
	b := setup(t)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "m", Payload: json.RawMessage(`{"a":"foo"}`)})
	require.NoError(t, err)
	m, err := b.svc.Patch(context.Background(), refresh.PatchRequest{ID: "m", Payload: json.RawMessage(`null`)})
	require.NoError(t, err)
	require.Nil(t, m.Payload)
}

func TestServicePatch(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	_, err := b.svc.Patch(ctx, refresh.PatchRequest{ID: "nope", Queue: json.RawMessage(`"q"`)})
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
	_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "nope", IfMatch: []string{"*"}})
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "an unknown model is not found, whatever the precondition")

	created := b.put(t, "m", hourly, false)
	patch := func(req refresh.PatchRequest) (refresh.Model, error) {
		req.ID = "m"
		return b.svc.Patch(ctx, req)
	}
	m, err := patch(refresh.PatchRequest{Policy: json.RawMessage(`{"timeout": "20m"}`)})
	require.NoError(t, err)
	require.Equal(t, refresh.Duration(20*time.Minute), m.Policy.Timeout)
	require.Equal(t, created.Policy.Schedule, m.Policy.Schedule, "members left out are kept")
	require.Equal(t, created.Policy.Retry, m.Policy.Retry)
	require.Equal(t, "q", m.Queue)
	require.True(t, m.RefreshAt.Equal(created.RefreshAt))

	m, err = patch(refresh.PatchRequest{Queue: json.RawMessage(`null`), Policy: json.RawMessage(`{"retry": null}`)})
	require.NoError(t, err)
	require.Equal(t, refresh.DefaultQueue, m.Queue, "null returns a member to its default")
	require.Equal(t, refresh.DefaultPolicy().Retry, m.Policy.Retry)

	// The merged model is checked as a PUT of it, and nothing is written
	// when it breaks a rule.
	_, err = patch(refresh.PatchRequest{Policy: json.RawMessage(`{"retry": {"backoff": {"strategy": "fixed", "base": "1m"}}}`)})
	require.Equal(t, "policy.retry: set either delays or backoff, not both", refresh.ErrorMessage(err))
	_, err = patch(refresh.PatchRequest{Policy: json.RawMessage(`{"schedule": null, "on_exhausted": "wait_next"}`)})
	require.Equal(t, "policy.on_exhausted: wait_next needs a schedule", refresh.ErrorMessage(err))
	_, err = patch(refresh.PatchRequest{Queue: json.RawMessage(`3`), Policy: json.RawMessage(`[1]`)})
	require.Equal(t, "queue: must be a string, got 3", refresh.ErrorMessage(err))
	_, err = patch(refresh.PatchRequest{Payload: json.RawMessage(strings.Repeat("[", 40) + strings.Repeat("]", 40))})
	require.Equal(t, "payload: nested deeper than 32 levels", refresh.ErrorMessage(err))
	got, err := b.store.Get(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, m, got)

	m, err = patch(refresh.PatchRequest{Policy: json.RawMessage(`{"retry": {"delays": null, "backoff": {"strategy": "fixed", "base": "1m"}}}`)})
	require.NoError(t, err)
	require.Equal(t, refresh.BackoffFixed, m.Policy.Retry.Backoff.Strategy)
	require.Nil(t, m.Policy.Retry.Delays)

	b.events(t)
	m, err = patch(refresh.PatchRequest{Trigger: true})
	require.NoError(t, err)
	require.True(t, m.RefreshAt.Equal(b.clock.Now()))
	require.Equal(t, []string{"trigger:m"}, types(b.events(t)))
}

func TestServicePreconditions(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	put := func(req refresh.PutRequest) (refresh.Model, bool, error) {
		req.ID = "m"
		return b.svc.Put(ctx, req)
	}
	_, _, err := put(refresh.PutRequest{IfMatch: []string{"*"}})
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err), "If-Match on a model that does not exist")
	m, created, err := put(refresh.PutRequest{IfNoneMatch: []string{"*"}})
	require.NoError(t, err)
	require.True(t, created)
	tag := refresh.DefinitionTag(m)
	_, _, err = put(refresh.PutRequest{IfNoneMatch: []string{"*"}})
	require.Equal(t, `put model m: model "m" already exists`, err.Error())
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err))

	// The tag is the definition's: the run state does not change it.
	_, _, err = b.svc.Act(ctx, "m", refresh.ActionPause)
	require.NoError(t, err)
	got, err := b.store.Get(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, tag, refresh.DefinitionTag(got))

	m, _, err = put(refresh.PutRequest{Payload: json.RawMessage(`{"v": 2}`), IfMatch: []string{"other", tag}})
	require.NoError(t, err)
	tag2 := refresh.DefinitionTag(m)
	require.NotEqual(t, tag, tag2)
	_, _, err = put(refresh.PutRequest{IfMatch: []string{tag}})
	require.Equal(t, fmt.Sprintf(`put model m: model "m" has changed: its definition tag is now %q`, tag2), err.Error())
	_, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", IfMatch: []string{tag}})
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err))
	_, _, err = put(refresh.PutRequest{IfNoneMatch: []string{tag2}})
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err))
	m, _, err = put(refresh.PutRequest{Payload: json.RawMessage(`{"v":2}`), IfNoneMatch: []string{tag}})
	require.NoError(t, err)
	require.Equal(t, tag2, refresh.DefinitionTag(m), "the same definition, whitespace aside, has the same tag")
}

// racingStore runs race before each Modify, as if another writer got
// there between the request's read and its transaction.
type racingStore struct {
	refresh.Store
	race func()
}

func (s racingStore) Modify(ctx context.Context, ids []string, fn func([]refresh.Model) (refresh.Batch, error)) error {
	s.race()
	return s.Store.Modify(ctx, ids, fn)
}

func TestServicePreconditionsHoldInTheTransaction(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	m := b.put(t, "m", hourly, false)
	tag := refresh.DefinitionTag(m)
	other := &refresh.Service{Store: b.store, Clock: b.clock}
	racing := &refresh.Service{Store: racingStore{Store: b.store, race: func() {
		_, err := other.Patch(ctx, refresh.PatchRequest{ID: "m", Payload: json.RawMessage(`{"by": "other"}`)})
		require.NoError(t, err)
	}}, Clock: b.clock}
	_, _, err := racing.Put(ctx, refresh.PutRequest{ID: "m", Queue: "q", Policy: json.RawMessage(hourly), IfMatch: []string{tag}})
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err))
	_, err = racing.Patch(ctx, refresh.PatchRequest{ID: "m", Payload: json.RawMessage(`{"by": "me"}`), IfMatch: []string{tag}})
	require.Equal(t, refresh.EPRECONDITION, refresh.ErrorCode(err))

	// Without a precondition, a patch merges into what the other wrote.
	m, err = racing.Patch(ctx, refresh.PatchRequest{ID: "m", Payload: json.RawMessage(`{"me": 1}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"by": "other", "me": 1}`, string(m.Payload))
}

func TestServiceErrorsAreCappedWhateverTheLimit(t *testing.T) {
	b := setup(t)
	b.svc.Limits.MaxFieldErrors = -1
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "-", Queue: "-"})
	var v *refresh.ValidationError
	require.True(t, errors.As(err, &v), "got %v", err)
	require.Len(t, v.Fields, 1)
}
