package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// TestModelsRateKeyCLI: put and patch set a model's rate_key with
// --rate-key, show prints it and, while the model waits for a rate limit,
// the limit and when it admits the next start.
func TestModelsRateKeyCLI(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	now := time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)
	url := memoryAPI(t, store, now, refresh.DefaultLimits())
	rateKey := func() string {
		t.Helper()
		m, err := store.Get(context.Background(), "pull-1")
		require.NoError(t, err)
		return m.RateKey
	}

	code, out, errOut := runCLI(t, url, `{"queue": "pulls"}`, "models", "put", "pull-1", "--rate-key", "api.example.com")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^rate key\s+api\.example\.com$`, out)
	require.Equal(t, "api.example.com", rateKey())

	// A patch of --rate-key alone needs no body; "" removes it.
	code, out, errOut = runCLI(t, url, "", "models", "patch", "pull-1", "--rate-key", "cdn.example.com", "--reason", "moved")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^rate key\s+cdn\.example\.com$`, out)
	code, out, errOut = runCLI(t, url, "", "models", "patch", "pull-1", "--rate-key", "")
	require.Equal(t, 0, code, errOut)
	require.NotRegexp(t, `(?m)^rate key`, out)
	require.Empty(t, rateKey())
	code, _, errOut = runCLI(t, url, `{"payload": {"v": 2}}`, "models", "patch", "pull-1", "--rate-key", "api.example.com")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "api.example.com", rateKey())

	// Refusals name the field.
	code, _, errOut = runCLI(t, url, "", "models", "patch", "pull-1", "--rate-key", "api\nexample")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "rate_key: "+refresh.RateKeyRule)
	code, _, errOut = runCLI(t, url, `{"rate_key": "x"}`, "models", "patch", "pull-1", "--rate-key", "y")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "rate_key: duplicate field")
	code, _, errOut = runCLI(t, url, "", "models", "put", "pull-1", "--rate-key", "y")
	require.Equal(t, 2, code, "a put needs its whole body")
	require.Contains(t, errOut, "--rate-key: needs a JSON object body")
	require.Equal(t, "api.example.com", rateKey())

	// The model waits for a rate limit, as the scheduler leaves it.
	until := now.Add(90 * time.Second)
	require.NoError(t, store.Modify(context.Background(), []string{"pull-1"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.RefreshAt, m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil = now, true, "rate_key:api.example.com", until
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	code, out, errOut = runCLI(t, url, "", "models", "show", "pull-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^state\s+waiting_for_slot$`, out)
	require.Regexp(t, `(?m)^waiting for slot\s+`+regexp.QuoteMeta("yes (due; the rate limit rate_key:api.example.com admits its next start at 2026-03-02 05:31:30Z)")+`$`, out)
	code, out, errOut = runCLI(t, url, "", "models", "show", "pull-1", "--json")
	require.Equal(t, 0, code, errOut)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	require.Equal(t, "api.example.com", raw["rate_key"])
	require.Equal(t, "rate_key:api.example.com", raw["waiting_limit"])
	require.Equal(t, "2026-03-02T05:31:30Z", raw["waiting_until"])
}
