package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// replayDir holds a recorded history's spec and a proposed policy, shared
// with the tests of package scenarios.
var replayDir = filepath.Join("..", "..", "..", "scenarios", "testdata", "replay")

// recorded is a dashboard whose store holds the history of
// replayDir/history.json, recorded by the real service and loops: model
// bigtable-7, failing every day from March 6 and disabled on March 9 at
// 06:05 UTC under give_up_after P3D. Its clock stands at the end of that
// history, March 12.
func recorded(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	data, err := os.ReadFile(filepath.Join(replayDir, "history.json"))
	require.NoError(t, err)
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec(data, lim)
	require.NoError(t, err)
	_, err = scenarios.Run(context.Background(), spec, lim, scenarios.WithStore(b.store))
	require.NoError(t, err)
	b.clock.Set(spec.Until)
	return b
}

// The model's page offers the replay; its form proposes the model's own
// policy; under give_up_after P2D the replay disables the model a day
// earlier than it was, with three attempts fewer.
func TestReplayPage(t *testing.T) {
	t.Parallel()
	b := recorded(t)
	br := b.signedIn(t, readToken)

	res, body := br.get("/ui/models/bigtable-7")
	require.Equal(t, http.StatusOK, res.StatusCode)
	contains(t, body, `action="/ui/models/bigtable-7/replay"`)

	res, body = br.get("/ui/models/bigtable-7/replay?days=20")
	require.Equal(t, http.StatusOK, res.StatusCode)
	contains(t, body, `value="20"`)
	contains(t, body, `&#34;give_up_after&#34;: &#34;72h&#34;`, "the form proposes the model's own policy")

	policy, err := os.ReadFile(filepath.Join(replayDir, "policy.json"))
	require.NoError(t, err)
	csrf := br.csrf("/ui/models/bigtable-7/replay")
	res, body = br.post("/ui/models/bigtable-7/replay", url.Values{"csrf": {csrf}, "policy": {string(policy)}, "days": {"30"}})
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	contains(t, body, "period covered: 2026-03-01T00:00:00Z to 2026-03-12T00:00:00Z (asked from 2026-02-10T00:00:00Z; the model was created at 2026-03-01T00:00:00Z)")
	contains(t, body, "15 attempts, 6 retries; disabled Mon 9 Mar 2026, 06:05 UTC.")
	contains(t, body, "12 attempts, 4 retries; disabled Sun 8 Mar 2026, 06:05 UTC.")
	require.Equal(t, 2, strings.Count(body, `<svg class="chart"`), "a chart of each")

	// The same replay under the model's own policy changes nothing.
	own := b.get(t, "bigtable-7")
	ownPolicy, err := json.Marshal(own.Policy)
	require.NoError(t, err)
	res, body = br.post("/ui/models/bigtable-7/replay", url.Values{"csrf": {csrf}, "policy": {string(ownPolicy)}, "days": {"30"}})
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, 2, strings.Count(body, "15 attempts, 6 retries; disabled Mon 9 Mar 2026, 06:05 UTC."))
}

func TestReplayPageBadInput(t *testing.T) {
	t.Parallel()
	b := recorded(t)
	br := b.signedIn(t, readToken)
	csrf := br.csrf("/ui/models/bigtable-7/replay")
	policy, err := os.ReadFile(filepath.Join(replayDir, "policy.json"))
	require.NoError(t, err)
	tests := []struct {
		name         string
		policy, days string
		status       int
		want         string
	}{
		{"no days", string(policy), "", http.StatusBadRequest, `must be a whole number of days from 1 to 366, got &#34;&#34;`},
		{"negative days", string(policy), "-3", http.StatusBadRequest, `must be a whole number of days from 1 to 366, got &#34;-3&#34;`},
		{"too many days", string(policy), "367", http.StatusBadRequest, `must be a whole number of days from 1 to 366, got &#34;367&#34;`},
		{"no policy", "", "30", http.StatusBadRequest, "is required: a JSON object"},
		{"invalid policy", `{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`, "30", http.StatusBadRequest,
			"policy.retry.backoff.multiplier: must be &gt;= 1, got 0.5"},
		{"no history in the period", string(policy), "1", http.StatusOK,
			"bigtable-7 has no recorded attempt in the last 1 day (since Wed 11 Mar 2026, 00:00 UTC): there is nothing to replay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := br.post("/ui/models/bigtable-7/replay", url.Values{"csrf": {csrf}, "policy": {tt.policy}, "days": {tt.days}})
			require.Equal(t, tt.status, res.StatusCode)
			contains(t, body, tt.want)
			lacks(t, body, `id="result"`)
		})
	}

	res, _ := br.post("/ui/models/bigtable-7/replay", url.Values{"policy": {string(policy)}, "days": {"30"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a replay needs the CSRF token")
	res, _ = br.get("/ui/models/nope/replay")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}
