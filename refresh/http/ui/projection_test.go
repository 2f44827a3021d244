package ui_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
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

// rateSpec: two models share a rate key of 1 start per 10m, so feed-b
// waits; feed-c, alone under 1 start per hour, fails and retries after
// 5m, by when its own start still fills the window. Attempts succeed
// after a minute, as the succeeding projection of a model with no other
// history assumes.
const rateSpec = `{"start": "2026-03-02T14:28:00Z", "until": "%s",
	"limits": [{"kind": "rate_key", "key": "api.example.com", "max_starts": 1, "per": "10m"},
	           {"kind": "rate_key", "key": "slow.example.com", "max_starts": 1, "per": "1h"}],
	"models": [
	  {"id": "feed-a", "rate_key": "api.example.com", "trigger": true, "policy": {"timeout": "5m"}, "default": {"outcome": "success", "after": "1m"}},
	  {"id": "feed-b", "rate_key": "api.example.com", "trigger": true, "policy": {"timeout": "5m"}, "default": {"outcome": "success", "after": "1m"}},
	  {"id": "feed-c", "rate_key": "slow.example.com", "trigger": true, "policy": {"timeout": "5m", "retry": {"delays": ["5m"]}},
	   "attempts": [{"outcome": "failure", "after": "1m", "kind": "http_503", "message": "upstream 503"}],
	   "default": {"outcome": "success", "after": "1m"}}
	]}`

// TestModelPageProjectionOfARateWait: the projection of a model held back by a
// rate limit says which limit and until when, and plans its start no
// earlier; it agrees with scenarios.Run of the whole situation (the
// oracle): the store is brought to now by a run of the spec, and the
// projection from there has the same waits, starts and successes as the
// run that goes on.
func TestModelPageProjectionOfARateWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lim := refresh.DefaultLimits()
	run := func(until time.Time, opts ...scenarios.RunOption) []scenarios.Entry {
		spec, err := scenarios.ParseSpec([]byte(strings.Replace(rateSpec, "%s", until.Format(time.RFC3339), 1)), lim)
		require.NoError(t, err)
		timeline, err := scenarios.Run(context.Background(), spec, lim, opts...)
		require.NoError(t, err)
		return timeline
	}
	run(now, scenarios.WithStore(b.store))
	waiting := b.get(t, "feed-b")
	require.True(t, waiting.WaitingForSlot)
	require.Equal(t, now.Add(8*time.Minute), waiting.WaitingUntil)
	require.False(t, b.get(t, "feed-c").WaitingForSlot) // its retry is due at 14:34
	oracle := run(now.Add(4 * 24 * time.Hour))
	br := b.signedIn(t, readToken)

	for _, tt := range []struct {
		id, summary string
		want        []string // the oracle's entries of the model from now, as rateRows writes them
	}{
		{"feed-b", `Waits now for rate_key "api.example.com" (max_starts 1 per 10m) until Mon 2 Mar 2026, 14:38 UTC.`,
			[]string{"start 2026-03-02T14:38:00Z", "success 2026-03-02T14:39:00Z"}},
		{"feed-c", `Waits from Mon 2 Mar 2026, 14:34 UTC for rate_key "slow.example.com" (max_starts 1 per 1h) until Mon 2 Mar 2026, 15:28 UTC.`,
			[]string{"wait 2026-03-02T14:34:00Z until 2026-03-02T15:28:00Z", "start 2026-03-02T15:28:00Z", "success 2026-03-02T15:29:00Z"}},
	} {
		var fromOracle []string
		for _, e := range oracle {
			if e.Model == tt.id && !e.At.Before(now) {
				row := e.Event + " " + e.At.Format(time.RFC3339)
				if !e.WaitingUntil.IsZero() {
					row += " until " + e.WaitingUntil.Format(time.RFC3339)
				}
				fromOracle = append(fromOracle, row)
			}
		}
		require.Equal(t, tt.want, fromOracle, tt.id)

		res, page := br.get("/ui/models/" + tt.id)
		require.Equal(t, http.StatusOK, res.StatusCode)
		page = html.UnescapeString(page)
		require.Contains(t, page, tt.summary)
		require.Equal(t, fromOracle, rateRows(t, page, "the next attempt succeeds"), tt.id)
	}
}

var (
	entryRow  = regexp.MustCompile(`(?s)<tr class="ev-([a-z_]+)">\s*<td class="nowrap">([^<]*)</td>.*?<td>([^<]*)</td>\s*</tr>`)
	untilText = regexp.MustCompile(` until (\S+)$`)
)

// rateRows returns the rows of the events table of the projection whose
// title ends with title: "event at", and " until waiting_until" for a
// wait for a rate limit.
func rateRows(t *testing.T, page, title string) []string {
	t.Helper()
	i := strings.Index(page, title+"</h3>")
	require.GreaterOrEqual(t, i, 0, "no projection %q", title)
	section := page[i:]
	section = section[:strings.Index(section, "</section>")]
	var out []string
	for _, m := range entryRow.FindAllStringSubmatch(section, -1) {
		row := m[1] + " " + m[2]
		if u := untilText.FindStringSubmatch(m[3]); u != nil {
			row += " until " + u[1]
		}
		out = append(out, row)
	}
	return out
}
