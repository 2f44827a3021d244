package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	testAudit(t, setup(t))
}

func TestPostgresAudit(t *testing.T) {
	t.Parallel()
	testAudit(t, setupPostgres(t))
}

// testAudit writes a model every way the API can and reads its audit
// back, also after the model is deleted.
func testAudit(t *testing.T, b *bundle) {
	ctx := context.Background()
	c := b.client(t, "")
	_, created, err := c.Put(ctx, "m1", []byte(`{"queue": "tables", "payload": {"url": "https://example.com/a.csv"},
		"policy": {"timeout": "1h"}, "reason": "new customer"}`))
	require.NoError(t, err)
	require.True(t, created)
	b.clock.Advance(time.Minute)
	_, err = c.Patch(ctx, "m1", []byte(`{"policy": {"timeout": "30m"}, "reason": "faster input"}`))
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	_, err = c.Patch(ctx, "m1", []byte(`{"policy": {"timeout": "30m"}}`))
	require.NoError(t, err, "a write that changes nothing")
	_, err = c.ActWithReason(ctx, "m1", refresh.ActionPause, "maintenance")
	require.NoError(t, err)
	res, err := c.Act(ctx, "m1", refresh.ActionPause)
	require.NoError(t, err)
	require.False(t, res.Changed, "a no-op action")
	b.clock.Advance(time.Minute)
	_, err = c.ActWithReason(ctx, "m1", refresh.ActionPause, strings.Repeat("x", refresh.MaxAuditReasonBytes+1))
	require.ErrorContains(t, err, "reason: must be at most 500 bytes, got 501")
	_, _, err = c.Put(ctx, "m1", []byte(`{"queue": "tables", "reason": 7}`))
	require.ErrorContains(t, err, "reason: must be a string, got 7")
	require.NoError(t, c.DeleteWithReason(ctx, "m1", "customer left"))

	at := func(minutes int) refreshhttp.Time {
		return refreshhttp.Time(start.Add(time.Duration(minutes) * time.Minute))
	}
	list, err := c.Audit(ctx, "m1", "", 0)
	require.NoError(t, err)
	require.Equal(t, "", list.Next)
	for i := range list.Audit {
		require.NotZero(t, list.Audit[i].ID)
		list.Audit[i].ID = 0
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	require.Equal(t, []refreshhttp.AuditEntry{
		{At: at(3), Actor: "anonymous", Action: "delete", Reason: "customer left"},
		{At: at(2), Actor: "anonymous", Action: "pause", Reason: "maintenance"},
		{At: at(1), Actor: "anonymous", Action: "patch", Reason: "faster input", Changes: []refresh.FieldChange{
			{Field: "policy.timeout", Before: raw(`"1h"`), After: raw(`"30m"`)},
		}},
		{At: at(0), Actor: "anonymous", Action: "create", Reason: "new customer", Changes: list.Audit[3].Changes},
	}, list.Audit, "newest first; the refused and the no-op writes are not there")
	fields := map[string]string{}
	for _, ch := range list.Audit[3].Changes {
		require.Nil(t, ch.Before, ch.Field)
		fields[ch.Field] = string(ch.After)
	}
	require.Equal(t, `"tables"`, fields["queue"])
	require.Equal(t, `{"url":"https://example.com/a.csv"}`, fields["payload"])
	require.Equal(t, `"1h"`, fields["policy.timeout"])

	// Pages.
	page, err := c.Audit(ctx, "m1", "", 3)
	require.NoError(t, err)
	require.Len(t, page.Audit, 3)
	require.NotEmpty(t, page.Next)
	rest, err := c.Audit(ctx, "m1", page.Next, 3)
	require.NoError(t, err)
	require.Equal(t, "", rest.Next)
	require.Len(t, rest.Audit, 1)
	require.Equal(t, "create", rest.Audit[0].Action)

	_, err = c.Audit(ctx, "nope", "", 0)
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "neither a model nor entries")
	code, body := b.do(t, "GET", "/models/m1/audit?after=0&limit=1001", "")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `limit: must be an integer between 1 and 1000, got "1001"; after: must be the next of a previous page, a positive integer, got "0"`, body["error"])
}

// TestAuditActorAndTrigger: the actor is the token's name; a write with
// trigger: true is marked, and a replace records only what it changed.
func TestAuditActorAndTrigger(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	ctx := context.Background()
	_, _, err := b.client(t, "writer").Put(ctx, "acme-1", []byte(`{"queue": "q2", "trigger": true}`))
	require.NoError(t, err)
	list, err := b.client(t, "acme").Audit(ctx, "acme-1", "", 1)
	require.NoError(t, err)
	require.Len(t, list.Audit, 1)
	e := list.Audit[0]
	require.Equal(t, "writer", e.Actor)
	require.Equal(t, "replace", e.Action)
	require.True(t, e.Trigger)
	require.Equal(t, []refresh.FieldChange{{Field: "queue", Before: json.RawMessage(`"default"`), After: json.RawMessage(`"q2"`)}}, e.Changes)
	_, err = b.client(t, "acme").Audit(ctx, "globex-1", "", 1)
	require.Equal(t, http.StatusForbidden, err.(*refreshhttp.APIError).StatusCode, "a prefix token reads its own models' audit only")
}

// TestAuditCutsLongValues: a value longer than MaxAuditValueBytes is kept
// as a JSON string of its start.
func TestAuditCutsLongValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.client(t, "")
	long := `{"blob": "` + strings.Repeat(`é"<`, 2000) + `"}`
	long = strings.ReplaceAll(long, `é"<`, `é\"<`)
	_, _, err := c.Put(ctx, "m1", []byte(`{"payload": `+long+`}`))
	require.NoError(t, err)
	list, err := c.Audit(ctx, "m1", "", 1)
	require.NoError(t, err)
	var payload refresh.FieldChange
	for _, ch := range list.Audit[0].Changes {
		if ch.Field == "payload" {
			payload = ch
		}
	}
	require.True(t, payload.Cut)
	require.LessOrEqual(t, len(payload.After), refresh.MaxAuditValueBytes)
	var s string
	require.NoError(t, json.Unmarshal(payload.After, &s), "a JSON string")
	require.True(t, strings.HasPrefix(s, `{"blob":"é\"<é`), s)
	require.True(t, strings.HasSuffix(s, "…"), s)
}

func TestCheckReason(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ reason, rule string }{
		{"", ""},
		{"deploy 42\n\tsee ticket", ""},
		{strings.Repeat("é", refresh.MaxAuditReasonBytes/2), ""},
		{strings.Repeat("x", refresh.MaxAuditReasonBytes+1), "must be at most 500 bytes, got 501"},
		{"a\x00b", "must not hold NUL or other control characters (tab and newline are allowed)"},
		{"a\x1bb", "must not hold NUL or other control characters (tab and newline are allowed)"},
		{"a\xffb", "must be UTF-8"},
	} {
		require.Equal(t, tt.rule, refresh.CheckReason(tt.reason), "%q", tt.reason)
	}
}
