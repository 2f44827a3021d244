package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/http/ui"
)

// Every form of the dashboard that writes changes only what it shows. The
// forms that write models are the preview's Save (the policy) and the
// model page's action buttons (the run state); the replay only
// simulates; the dead letters' form acts on the entries ticked. (The
// sign-in and sign-out forms write sessions: see session_test.go.)

// definedModel creates model id with every field of a definition set
// away from its default, paused, and returns it.
func (b *bundle) definedModel(t *testing.T, id string) refresh.Model {
	t.Helper()
	ctx := context.Background()
	for _, up := range []string{"up-1", "up-2"} {
		b.put(t, up, `{"timeout": "10m"}`)
	}
	_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: id, Queue: "reports", Payload: json.RawMessage(`{"input_url": "https://example.com/a", "n": 3}`),
		Policy: json.RawMessage(scheduled), Upstreams: []string{"up-1", "up-2"}, UpstreamsMode: "any", RateKey: "api.example.com"})
	require.NoError(t, err)
	_, _, err = b.svc.Act(ctx, id, refresh.ActionPause)
	require.NoError(t, err)
	return b.get(t, id)
}

// requireKept fails unless after has before's queue, payload, upstreams,
// their mode, rate key and its paused flag.
func requireKept(t *testing.T, before, after refresh.Model, what string) {
	t.Helper()
	require.Equal(t, before.Queue, after.Queue, "%s keeps the queue", what)
	require.JSONEq(t, string(before.Payload), string(after.Payload), "%s keeps the payload", what)
	require.Equal(t, before.Upstreams, after.Upstreams, "%s keeps the upstreams", what)
	require.Equal(t, before.UpstreamsMode, after.UpstreamsMode, "%s keeps the upstreams' mode", what)
	require.Equal(t, before.RateKey, after.RateKey, "%s keeps the rate key", what)
}

// The preview's Save replaces the policy, and only the policy: the
// upstreams, their mode, the queue, the payload, the rate key and the run
// state stay,
// and the audit records the policy's members before and after.
func TestFormPreviewSaveKeepsTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.definedModel(t, "m1")
	writer := b.signedIn(t, writeToken)
	_, body := writer.get("/ui/preview?model=m1")
	tag := tagField.FindStringSubmatch(body)[1]
	res, body := writer.post("/ui/preview", url.Values{"csrf": {writer.csrf("/ui/preview")}, "model": {"m1"}, "tag": {tag}, "do": {"save"},
		"policy": {hourly}, "attempts": {"failure"}, "then": {"success"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P1D"}, "id": {"m1"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)

	after := b.get(t, "m1")
	require.Equal(t, "FREQ=HOURLY", after.Policy.Schedule, "the policy is saved")
	requireKept(t, before, after, "a save of the policy")
	require.True(t, after.Paused, "a save of the policy keeps the model paused")

	audit, err := b.store.Audit(context.Background(), "m1", 0, 1)
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, refresh.AuditReplace, audit[0].Action)
	require.Equal(t, "writer", audit[0].Actor)
	require.NotEmpty(t, audit[0].Changes)
	for _, c := range audit[0].Changes {
		require.Contains(t, c.Field, "policy.", "only the policy changed: %+v", c)
		require.True(t, c.Before != nil || c.After != nil, "%s has a before or an after", c.Field)
	}

	// A model changed since the preview opened is not written over.
	_, err = b.svc.Patch(context.Background(), refresh.PatchRequest{ID: "m1", Upstreams: json.RawMessage(`["up-1"]`), IfMatch: []string{"*"}})
	require.NoError(t, err)
	_, body = writer.get("/ui/preview?model=m1")
	stale := tag
	tag = tagField.FindStringSubmatch(body)[1]
	require.NotEqual(t, stale, tag)
	res, _ = writer.post("/ui/preview", url.Values{"csrf": {writer.csrf("/ui/preview")}, "model": {"m1"}, "tag": {stale}, "do": {"save"},
		"policy": {scheduled}, "attempts": {"failure"}, "then": {"success"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P1D"}, "id": {"m1"}})
	require.Equal(t, http.StatusPreconditionFailed, res.StatusCode)
	require.Equal(t, []string{"up-1"}, b.get(t, "m1").Upstreams)
}

// The model page's buttons change the run state, never the definition.
func TestFormActionsKeepTheDefinition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.definedModel(t, "m1")
	tag := refresh.DefinitionTag(before)
	writer := b.signedIn(t, writeToken)
	for _, action := range []string{"resume", "trigger", "cancel", "pause", "enable"} {
		res, body := writer.post("/ui/models/m1/"+action, url.Values{"csrf": {writer.csrf("/ui/models/m1")}, "action": {action}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "%s: %s", action, body)
		after := b.get(t, "m1")
		requireKept(t, before, after, action)
		require.Equal(t, tag, refresh.DefinitionTag(after), "%s keeps the policy", action)
	}
}

// The replay simulates: it writes nothing, not even an audit entry.
func TestFormReplayWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.definedModel(t, "m1")
	reader := b.signedIn(t, writeToken)
	res, body := reader.post("/ui/models/m1/replay", url.Values{"csrf": {reader.csrf("/ui/models/m1/replay")}, "policy": {hourly}, "days": {"30"}})
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	after := b.get(t, "m1")
	requireKept(t, before, after, "a replay")
	require.Equal(t, refresh.DefinitionTag(before), refresh.DefinitionTag(after))
	audit, err := b.store.Audit(context.Background(), "m1", 0, 10)
	require.NoError(t, err)
	require.Empty(t, audit, "the test's writes carry no audit; the replay wrote none")
}

// recordedDead is a dead-letter list of two entries that records what is
// done to it.
type recordedDead struct {
	mu   sync.Mutex
	done []string
}

func (d *recordedDead) DeadLetters(context.Context, string, int) ([]refresh.DeadLetter, string, error) {
	return []refresh.DeadLetter{{ID: "aa", At: now, Reason: "r", Message: "{}", List: "outcomes"},
		{ID: "bb", At: now, Reason: "r", Message: "{}", List: "outcomes"}}, "", nil
}

func (d *recordedDead) record(what string, ids []string) (refresh.DeadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.done = append(d.done, what+" "+id)
	}
	if ids == nil {
		d.done = append(d.done, what+" all")
	}
	return refresh.DeadResult{Done: len(ids)}, nil
}

func (d *recordedDead) RequeueDead(_ context.Context, ids []string) (refresh.DeadResult, error) {
	return d.record("requeue", ids)
}
func (d *recordedDead) RequeueAllDead(context.Context) (refresh.DeadResult, error) {
	return d.record("requeue", nil)
}
func (d *recordedDead) DropDead(_ context.Context, ids []string) (refresh.DeadResult, error) {
	return d.record("drop", ids)
}
func (d *recordedDead) DropAllDead(context.Context) (refresh.DeadResult, error) {
	return d.record("drop", nil)
}

// The dead letters' form acts on the entries ticked, and on no other.
func TestFormDeadActsOnTheTicked(t *testing.T) {
	t.Parallel()
	dead := &recordedDead{}
	b := setup(t, ui.WithDeadLetters(dead))
	admin := b.signedIn(t, adminToken)
	for _, do := range []string{"requeue", "drop"} {
		res, body := admin.post("/ui/dead", url.Values{"csrf": {admin.csrf("/ui/dead")}, "do": {do}, "ids": {"bb"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	}
	require.Equal(t, []string{"requeue bb", "drop bb"}, dead.done)
}
