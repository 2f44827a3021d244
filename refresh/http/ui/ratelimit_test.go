package ui_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestModelRateKeyAndRateWait: a model's page shows its rate key and,
// while it waits for a rate limit, the limit and when it admits the next
// start; a wait for a concurrency slot still reads as one.
func TestModelRateKeyAndRateWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "pull-1", RateKey: "api.example.com <b>", Policy: []byte(`{"timeout": "10m"}`)})
	require.NoError(t, err)
	b.put(t, "plain-1", `{"timeout": "10m"}`)
	br := b.signedIn(t, readToken)

	res, body := br.get("/ui/models/pull-1")
	require.Equal(t, http.StatusOK, res.StatusCode)
	contains(t, body, `<dt>Rate key</dt><dd><span class="id">api.example.com &lt;b&gt;</span> <span class="muted">`)
	lacks(t, body, "Waiting for")
	_, body = br.get("/ui/models/plain-1")
	lacks(t, body, "Rate key", "a model without a rate key shows none")

	b.modify(t, "pull-1", func(m *refresh.Model) {
		m.RefreshAt, m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil = now, true, "rate_key:api.example.com <b>", now.Add(90*time.Second)
	})
	_, body = br.get("/ui/models/pull-1")
	require.Regexp(t, `<span class="badge running" title="[^"]*">waiting for a rate limit</span>`, body)
	contains(t, body, `It is due, but the rate limit of the rate_key &#34;api.example.com &lt;b&gt;&#34; admits no start yet`)
	contains(t, body, `<dt>Waiting for a rate limit</dt><dd>rate_key:api.example.com &lt;b&gt; admits its next start Mon 2 Mar 2026, 14:31:30 UTC <span class="muted">(in 1 min; it starts then, or at its turn among the models waiting for the limit)`)
	lacks(t, body, "Waiting for a slot")

	// The list shows the same state.
	_, body = br.get("/ui/models")
	require.Regexp(t, `title="It is due, but the rate limit of the rate_key[^"]*">waiting for a rate limit</span>`, body)

	// A wait for a concurrency slot has no waiting_until.
	b.modify(t, "pull-1", func(m *refresh.Model) { m.WaitingLimit, m.WaitingUntil = "queue:default", time.Time{} })
	_, body = br.get("/ui/models/pull-1")
	require.Regexp(t, `<span class="badge running" title="[^"]*">waiting for a slot</span>`, body)
	contains(t, body, `<dt>Waiting for a slot</dt><dd>yes <span class="muted">(due, but the concurrency limit queue:default is full`)
	lacks(t, body, "Waiting for a rate limit")
}
