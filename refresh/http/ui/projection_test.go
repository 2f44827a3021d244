package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestModelPageProjectsOnDemand: a model with nothing to plan once enabled
// or resumed (an on-demand model) is projected as if triggered, as
// docs/dashboard.md promises, so that its projection has attempts.
func TestModelPageProjectsOnDemand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "thumb-1", `{"timeout": "5m", "retry": {"delays": ["1m"]}}`)
	b.disable(t, "thumb-1", "http_503", "upstream 503", "thumbnail creation failed")
	b.put(t, "thumb-2", `{"timeout": "5m"}`)
	_, _, err := b.svc.Act(context.Background(), "thumb-2", refresh.ActionPause)
	require.NoError(t, err)
	br := b.signedIn(t, readToken)

	res, page := br.get("/ui/models/thumb-1")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "If triggered now (which enables it) and every attempt fails with http_503, as the last one did")
	require.Contains(t, page, "If triggered now (which enables it) and the next attempt succeeds")
	require.Contains(t, page, "Disabled Mon 2 Mar")
	require.Contains(t, page, "after 2 failed attempts")
	require.NotContains(t, page, "0 failures in a row")

	res, page = br.get("/ui/models/thumb-2")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "If resumed and triggered now and the next attempt succeeds")
	require.NotContains(t, page, "Nothing happens")
}

// TestModelPageInUTC: the page of a model in UTC shows its next runs in one
// column, and the chart's caption does not send to UTC for UTC.
func TestModelPageInUTC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "hourly-1", `{"schedule": "FREQ=HOURLY"}`)
	b.put(t, "paris-1", `{"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris"}`)
	br := b.signedIn(t, readToken)

	_, page := br.get("/ui/models/hourly-1")
	require.Equal(t, 1, strings.Count(page, "<th>In UTC</th>"), page)
	require.Contains(t, page, "Times on the chart are in UTC.")
	require.NotContains(t, page, "hover for UTC")

	_, page = br.get("/ui/models/paris-1")
	require.Contains(t, page, "<th>In Europe/Paris</th><th>In UTC</th>")
	require.Contains(t, page, "Times on the chart are in Europe/Paris; hover for UTC.")
}
