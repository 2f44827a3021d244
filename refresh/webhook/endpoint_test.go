package webhook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestWebhookNamesAndKeys(t *testing.T) {
	at := time.Date(2026, 3, 2, 6, 0, 0, 500, time.UTC)
	overdue := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e     refresh.Event
		names []string
		keys  []string
	}{
		{refresh.Event{ModelID: "m", Type: refresh.EventStart, AttemptUID: "u"}, []string{"started"}, []string{"m:started:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventSuccess, AttemptUID: "u"}, []string{"succeeded"}, []string{"m:succeeded:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventSuccess, AttemptUID: "u", Recovered: true},
			[]string{"succeeded", "recovered"}, []string{"m:succeeded:u", "m:recovered:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventFailure, Decision: refresh.DecisionDisable, AttemptUID: "u"},
			[]string{"failed", "disabled"}, []string{"m:failed:u", "m:disabled:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventTimeout, Decision: refresh.DecisionRetryAligned, AttemptUID: "u"},
			[]string{"failed", "retry_scheduled"}, []string{"m:failed:u", "m:retry_scheduled:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventEnable, At: at}, []string{"enabled"}, []string{"m:enabled:2026-03-02T06:00:00.0000005Z"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventStatus, AttemptUID: "u", At: at}, []string{"status"}, []string{"m:status:2026-03-02T06:00:00.0000005Z"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventSkip, At: at.Truncate(time.Second)}, []string{"skipped"}, []string{"m:skipped:2026-03-02T06:00:00Z"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventSnooze, AttemptUID: "u"}, []string{"snoozed"}, []string{"m:snoozed:u"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventFreshnessLost, At: at, OverdueSince: overdue},
			[]string{"freshness_lost"}, []string{"m:freshness_lost:2026-03-02T05:00:00Z"}},
		{refresh.Event{ModelID: "m", Type: refresh.EventFreshnessRestored, At: at, AttemptUID: "u", OverdueSince: overdue},
			[]string{"freshness_restored"}, []string{"m:freshness_restored:2026-03-02T05:00:00Z"}},
	} {
		require.Equal(t, tc.names, tc.e.Lifecycle(), tc.e.Type)
		var keys []string
		for _, n := range tc.names {
			require.Contains(t, refresh.LifecycleNames, n)
			keys = append(keys, IdempotencyKey(tc.e, n))
		}
		require.Equal(t, tc.keys, keys, tc.e.Type)
	}
}

func TestWebhookValidate(t *testing.T) {
	ok := Endpoint{Name: "crm", URL: "https://crm.example.com/h", Secret: "0123456789abcdef", Events: []string{"disabled"}}
	with := func(f func(*Endpoint)) []Endpoint {
		e := ok
		e.Events = append([]string(nil), ok.Events...)
		f(&e)
		return []Endpoint{e}
	}
	for _, tc := range []struct {
		name string
		eps  []Endpoint
		want string
	}{
		{"valid", []Endpoint{ok}, ""},
		{"none", nil, ""},
		{"name", with(func(e *Endpoint) { e.Name = "a b" }), `webhooks[0].name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, got "a b"`},
		{"duplicate", []Endpoint{ok, ok}, `webhooks[1].name: must be unique, got "crm" twice`},
		{"scheme", with(func(e *Endpoint) { e.URL = "ftp://x/y" }), `webhooks[0].url: must be an absolute http or https URL, got "ftp://x/y"`},
		{"credentials", with(func(e *Endpoint) { e.URL = "https://u:pw@x/y" }), "webhooks[0].url: must not hold credentials (sign with the secret instead)"},
		{"secret", with(func(e *Endpoint) { e.Secret = "" }), "webhooks[0].secret: must be at least 16 characters, got 0"},
		{"no events", with(func(e *Endpoint) { e.Events = nil }), "webhooks[0].events: must name at least one event"},
		{"repeated", with(func(e *Endpoint) { e.Events = []string{"enabled", "enabled"} }), `webhooks[0].events[1]: must not repeat "enabled"`},
		{"unknown", with(func(e *Endpoint) { e.Events = []string{"disable"} }), `webhooks[0].events[0]: must be one of create, update, started`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.eps)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
		})
	}
}

func TestWebhookRouteFiltersByEventAndPrefix(t *testing.T) {
	r, err := NewRouter([]Endpoint{
		{Name: "a", URL: "http://a/", Secret: "0123456789abcdef", Events: []string{"disabled", "failed"}, Prefix: "acme-"},
		{Name: "b", URL: "http://b/", Secret: "0123456789abcdef", Events: []string{"failed"}},
	})
	require.NoError(t, err)
	ds := r.Route([]refresh.Event{
		{ModelID: "acme-1", Type: refresh.EventFailure, Decision: refresh.DecisionDisable, AttemptUID: "u1"},
		{ModelID: "zeta", Type: refresh.EventFailure, Decision: refresh.DecisionDisable, AttemptUID: "u2"},
		{ModelID: "acme-1", Type: refresh.EventStart, AttemptUID: "u3"},
	})
	var got []string
	for _, d := range ds {
		got = append(got, d.Endpoint+" "+d.Key)
	}
	require.Equal(t, []string{"a acme-1:failed:u1", "b acme-1:failed:u1", "a acme-1:disabled:u1", "b zeta:failed:u2"}, got)
}

func TestWebhookSignAndVerify(t *testing.T) {
	now := time.Unix(1_772_431_200, 0)
	body := []byte(`{"type":"disabled"}`)
	sig := Sign("secret", now, body)
	require.Equal(t, "t=1772431200,v1=", sig[:16])
	require.NoError(t, Verify("secret", sig, body, now.Add(time.Minute), 5*time.Minute))
	require.ErrorIs(t, Verify("other", sig, body, now, 0), ErrBadSignature)
	require.ErrorIs(t, Verify("secret", sig, []byte(`{"type":"enabled"}`), now, 0), ErrBadSignature)
	require.ErrorIs(t, Verify("secret", sig, body, now.Add(6*time.Minute), 5*time.Minute), ErrTooOld)
	require.ErrorIs(t, Verify("secret", "v1=00", body, now, 0), ErrBadSignature)
	require.NoError(t, Verify("secret", "t=1772431200,v1=00,"+sig[len("t=1772431200,"):], body, now, 0), "any v1 may match")
}

func TestWebhookBackoff(t *testing.T) {
	b := Backoff{Base: 10 * time.Second, Max: time.Minute, Jitter: 0.5}
	for _, tc := range []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0.5, 10 * time.Second}, {2, 0.5, 20 * time.Second}, {3, 0.5, 40 * time.Second}, {4, 0.5, time.Minute},
		{100, 0.5, time.Minute}, {1, 0, 5 * time.Second}, {3, 0.75, 50 * time.Second}, {0, 0.5, 10 * time.Second},
	} {
		require.Equal(t, tc.want, b.Delay(tc.n, tc.u), "retry %d, u %g", tc.n, tc.u)
	}
}
