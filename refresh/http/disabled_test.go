package http_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestUpdateReEnablesDisabled checks docs/transitions.md's "Changing a
// model" through the API: a PUT or a PATCH that changes the definition of
// a disabled model re-enables it and starts it now; a PUT that changes
// nothing leaves it disabled.
func TestUpdateReEnablesDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const broken = `{"queue": "imports", "payload": {"input_url": "htp:/broken"}, "policy": {"timeout": "10m"}}`
	for _, id := range []string{"by-put", "by-patch", "unchanged"} {
		b.put(t, id, broken)
		code, _ := b.do(t, "POST", "/models/"+id+"/trigger", "")
		require.Equal(t, http.StatusOK, code)
	}
	for _, job := range b.tick(t, "imports") {
		b.deliver(t, refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeFailure,
			Kind: "validation", Message: `parse "htp:/broken": unsupported protocol scheme`})
	}
	for _, id := range []string{"by-put", "by-patch", "unchanged"} {
		_, m := b.do(t, "GET", "/models/"+id, "")
		require.Equal(t, true, m["disabled"], id)
	}
	takeEvents(t, b.svc.Store)
	b.clock.Advance(time.Minute)
	now := b.clock.Now().UTC().Format(time.RFC3339)

	// The same definition again, laid out anew: still disabled, nothing
	// published.
	code, m := b.do(t, "PUT", "/models/unchanged", `{"queue": "imports", "policy": {"timeout": "10m"},
		"payload": {"input_url":  "htp:/broken"}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, true, m["disabled"])
	require.Nil(t, m["refresh_at"])
	code, m = b.do(t, "PATCH", "/models/unchanged", `{"policy": {"timeout": "10m"}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, true, m["disabled"])
	require.Empty(t, takeEvents(t, b.svc.Store))

	reEnabled := func(id string, m map[string]any) {
		t.Helper()
		require.Equal(t, false, m["disabled"], id)
		require.Nil(t, m["disabled_reason"], id)
		require.Equal(t, float64(0), m["consecutive_failures"], id)
		require.Equal(t, float64(0), m["attempt_no"], id)
		require.Equal(t, now, m["refresh_at"], id)
		var types []string
		for _, e := range takeEvents(t, b.svc.Store) {
			types = append(types, e.ModelID+":"+e.Type)
		}
		require.Equal(t, []string{id + ":update", id + ":trigger"}, types, "the update, then the trigger")
		code, audit := b.do(t, "GET", "/models/"+id+"/audit", "")
		require.Equal(t, http.StatusOK, code, audit)
		last := audit["audit"].([]any)[0].(map[string]any)
		require.Equal(t, true, last["trigger"], "the audit entry of the write says it triggered")
	}

	// A PUT that replaces the broken URL.
	code, m = b.do(t, "PUT", "/models/by-put", `{"queue": "imports", "payload": {"input_url": "https://example.com/a.csv"}, "policy": {"timeout": "10m"}}`)
	require.Equal(t, http.StatusOK, code, m)
	reEnabled("by-put", m)

	// A PATCH of the payload.
	code, m = b.do(t, "PATCH", "/models/by-patch", `{"payload": {"input_url": "https://example.com/b.csv"}}`)
	require.Equal(t, http.StatusOK, code, m)
	reEnabled("by-patch", m)

	// Both start now, with their new payloads; the unchanged one does not.
	jobs := b.tick(t, "imports")
	payloads := map[string]string{}
	for _, j := range jobs {
		payloads[j.ModelID] = string(j.Payload)
	}
	require.Equal(t, map[string]string{
		"by-put":   `{"input_url": "https://example.com/a.csv"}`,
		"by-patch": `{"input_url":"https://example.com/b.csv"}`,
	}, payloads)
}

// TestDefaultDisabledMessage checks docs/policy.md's disabled message: the
// default names no {error}, so a customer reads none of the worker's
// message, which stays in last_error; a policy that names {error} gets
// it; and a model stored with another message takes the default back
// with a PATCH of null.
func TestDefaultDisabledMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const withError = "Refresh disabled after {attempts} failed attempt(s): {error}"
	b.put(t, "default", `{"queue": "imports", "trigger": true}`)
	b.put(t, "named", `{"queue": "imports", "trigger": true, "policy": {"disabled_message": "`+withError+`"}}`)
	const stderr = "exit status 3: psql: connection to db-7.internal:5432 failed\nSELECT * FROM customers"
	for _, job := range b.tick(t, "imports") {
		b.deliver(t, refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeFailure,
			Kind: "exit_3", Message: stderr, Retryable: new(bool)})
	}
	_, m := b.do(t, "GET", "/models/default", "")
	require.Equal(t, "Refresh disabled after 1 failed attempt(s).", m["disabled_reason"])
	require.Equal(t, stderr, m["last_error"].(map[string]any)["message"], "operators still read the error")
	require.Equal(t, "Refresh disabled after {attempts} failed attempt(s).", m["policy"].(map[string]any)["disabled_message"], "the default, stated")
	_, m = b.do(t, "GET", "/models/named", "")
	require.Equal(t, "Refresh disabled after 1 failed attempt(s): "+stderr, m["disabled_reason"], "{error} when the policy names it")

	code, m := b.do(t, "PATCH", "/models/named", `{"policy": {"disabled_message": null}}`)
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, "Refresh disabled after {attempts} failed attempt(s).", m["policy"].(map[string]any)["disabled_message"])
}
