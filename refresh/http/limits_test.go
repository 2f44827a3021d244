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
)

// TestLimitRefusals: every broken rule of a limit is refused with a 400
// naming its field, and nothing is stored.
func TestLimitRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("k", refresh.MaxRateKeyBytes+1)
	for _, tt := range []struct {
		name, path, body string
		field, rule      string
	}{
		{"max_starts 0", "/limits/rate_key/api", `{"max_starts": 0, "per": "1m"}`, "max_starts", "must be >= 1 (to start none of the models, pause them), got 0"},
		{"max_starts negative", "/limits/queue/q", `{"max_starts": -3, "per": "1m"}`, "max_starts", "must be >= 1 (to start none of the models, pause them), got -3"},
		{"max_running 0", "/limits/queue/q", `{"max_running": 0}`, "max_running", "must be >= 1 (to start none of the models, pause them), got 0"},
		{"max_running 0 beside max_starts", "/limits/queue/q", `{"max_running": 0, "max_starts": 5, "per": "1m"}`, "max_running", "must be >= 1 (to start none of the models, pause them), got 0"},
		{"max_starts not an integer", "/limits/queue/q", `{"max_starts": "10", "per": "1m"}`, "max_starts", `must be an integer, got "10"`},
		{"max_starts a fraction", "/limits/queue/q", `{"max_starts": 2.5, "per": "1m"}`, "max_starts", `must be an integer, got 2.5`},
		{"per under 1s", "/limits/rate_key/api", `{"max_starts": 10, "per": "500ms"}`, "per", "must be from 1s to 24h, got 500ms"},
		{"per over a day", "/limits/rate_key/api", `{"max_starts": 10, "per": "P2D"}`, "per", "must be from 1s to 24h, got 48h"},
		{"per left out", "/limits/rate_key/api", `{"max_starts": 10}`, "per", "must be from 1s to 24h, got 0s"},
		{"per not a duration", "/limits/rate_key/api", `{"max_starts": 10, "per": 60}`, "per", `must be a duration like "90s" or "PT5M", got 60`},
		{"per without max_starts", "/limits/queue/q", `{"max_running": 2, "per": "1m"}`, "max_starts", "must be >= 1 (to start none of the models, pause them), got 0"},
		{"burst over 10,000", "/limits/rate_key/api", `{"max_starts": 20000, "per": "1h", "burst": 10001}`, "burst", "must be from 1 to 10000, got 10001"},
		{"burst 0", "/limits/rate_key/api", `{"max_starts": 10, "per": "1m", "burst": 0}`, "burst", "must be from 1 to 10000, got 0"},
		{"burst without max_starts", "/limits/queue/q", `{"max_running": 2, "burst": 2}`, "max_starts", "must be >= 1 (to start none of the models, pause them), got 0"},
		{"neither", "/limits/rate_key/api", `{}`, "max_running", "missing, as is max_starts: a limit sets max_running, max_starts with per, or both"},
		{"neither, nulls", "/limits/rate_key/api", `{"max_running": null, "max_starts": null}`, "max_running", "missing, as is max_starts: a limit sets max_running, max_starts with per, or both"},
		{"an unknown field", "/limits/rate_key/api", `{"max_starts": 10, "per": "1m", "period": "1m"}`, "period", "unknown field; want max_running, max_starts, per or burst"},
		{"a rate key over 128 bytes", "/limits/rate_key/" + long, `{"max_starts": 10, "per": "1m"}`, "key", refresh.RateKeyRule + `, got "` + strings.Repeat("k", 37) + `..."`},
		{"a rate key with a newline", "/limits/rate_key/api%0Aexample", `{"max_starts": 10, "per": "1m"}`, "key", refresh.RateKeyRule + `, got "api\nexample"`},
		{"a rate key with a NUL", "/limits/rate_key/api%00", `{"max_starts": 10, "per": "1m"}`, "key", refresh.RateKeyRule + `, got "api\x00"`},
		{"a rate key that is not UTF-8", "/limits/rate_key/api%FF", `{"max_starts": 10, "per": "1m"}`, "key", refresh.RateKeyRule + `, got "api\xff"`},
		{"an unknown kind", "/limits/host/api", `{"max_starts": 10, "per": "1m"}`, "kind", `must be "queue", "prefix" or "rate_key", got "host"`},
	} {
		rec := b.raw(t, "PUT", tt.path, tt.body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", tt.name, rec.Body.String())
		var body struct {
			Fields []refresh.FieldError `json:"fields"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), tt.name)
		require.Contains(t, body.Fields, refresh.FieldError{Field: tt.field, Rule: tt.rule}, "%s: %s", tt.name, rec.Body.String())
	}
	limits, err := b.store.Limits(context.Background())
	require.NoError(t, err)
	require.Empty(t, limits, "nothing stored")
}

// bothStores runs test on the memory store and on PostgreSQL (skipped
// without DATABASE_URL).
func bothStores(t *testing.T, test func(t *testing.T, b *bundle)) {
	t.Run("memory", func(t *testing.T) { t.Parallel(); test(t, setup(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); test(t, setupPostgres(t)) })
}

// TestLimitRoundTrip: a limit put is listed with every field it sets, a
// replace unsets what it leaves out, and the Client speaks the same body.
func TestLimitRoundTrip(t *testing.T) {
	t.Parallel()
	bothStores(t, testLimitRoundTrip)
}

func testLimitRoundTrip(t *testing.T, b *bundle) {
	code, got := b.do(t, "PUT", "/limits/rate_key/api.example.com", `{"max_starts": 10, "per": "PT1M", "burst": 2}`)
	require.Equal(t, http.StatusOK, code, got)
	require.Equal(t, map[string]any{"kind": "rate_key", "key": "api.example.com", "max_starts": 10.0, "per": "1m", "burst": 2.0}, got)
	code, got = b.do(t, "PUT", "/limits/queue/exports", `{"max_running": 5, "max_starts": 100, "per": "1h"}`)
	require.Equal(t, http.StatusOK, code, got)

	list := func() string {
		rec := b.raw(t, "GET", "/limits", "")
		require.Equal(t, http.StatusOK, rec.Code)
		return strings.TrimSpace(rec.Body.String())
	}
	require.JSONEq(t, `{"limits": [
		{"kind": "queue", "key": "exports", "max_running": 5, "max_starts": 100, "per": "1h"},
		{"kind": "rate_key", "key": "api.example.com", "max_starts": 10, "per": "1m", "burst": 2}]}`, list())

	// A replace sets exactly what it gives.
	code, got = b.do(t, "PUT", "/limits/queue/exports", `{"max_running": 3}`)
	require.Equal(t, http.StatusOK, code, got)
	require.JSONEq(t, `{"limits": [
		{"kind": "queue", "key": "exports", "max_running": 3},
		{"kind": "rate_key", "key": "api.example.com", "max_starts": 10, "per": "1m", "burst": 2}]}`, list())

	// The Client sends and reads the same fields.
	c := b.client(t, "")
	ctx := context.Background()
	l, err := c.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2, MaxStarts: 30, Per: refresh.Duration(time.Minute), Burst: 5})
	require.NoError(t, err)
	require.Equal(t, refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 2, MaxStarts: 30, Per: refresh.Duration(time.Minute), Burst: 5}, l)
	all, err := c.Limits(ctx)
	require.NoError(t, err)
	require.Len(t, all.Limits, 3)
	require.Equal(t, l, all.Limits[0], "by kind, then key")
	_, err = c.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Millisecond)})
	require.Equal(t, "per: must be from 1s to 24h, got 1ms", refresh.ErrorMessage(err))

	require.NoError(t, c.DeleteLimit(ctx, refresh.LimitRateKey, "api.example.com"))
	require.NotContains(t, list(), "rate_key")
}

// TestModelRateKey: a model's rate_key is written by PUT and PATCH,
// checked by name, and shown; a model waiting for a rate limit shows the
// limit and when it can start.
func TestModelRateKey(t *testing.T) {
	t.Parallel()
	bothStores(t, testModelRateKey)
}

func testModelRateKey(t *testing.T, b *bundle) {
	m := b.put(t, "m", `{"rate_key": "api.example.com"}`)
	require.Equal(t, "api.example.com", m["rate_key"])
	require.Nil(t, m["waiting_until"])

	for _, tt := range []struct{ method, body, want string }{
		{"PUT", `{"rate_key": 7}`, "rate_key: must be a string, got 7"},
		{"PATCH", `{"rate_key": ["a"]}`, `rate_key: must be a string, got ["a"]`},
		{"PATCH", `{"rate_key": "a\u0007b"}`, "rate_key: " + refresh.RateKeyRule + `, got "a\ab"`},
		{"PUT", `{"rate_key": "` + strings.Repeat("é", 65) + `"}`, "rate_key: " + refresh.RateKeyRule + `, got "` + strings.Repeat("é", 18) + `..."`},
	} {
		rec := b.raw(t, tt.method, "/models/m", tt.body)
		require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
		msg, _ := errorOf(t, rec)
		require.Contains(t, msg, tt.want, tt.body)
	}
	code, m := b.do(t, "PATCH", "/models/m", `{"queue": "q"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "api.example.com", m["rate_key"], "kept by a patch that leaves it out")
	code, m = b.do(t, "PATCH", "/models/m", `{"rate_key": null}`)
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, m["rate_key"])
	code, m = b.do(t, "PUT", "/models/m", `{"rate_key": "cdn.example.com", "queue": "q"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "cdn.example.com", m["rate_key"])

	// The model waits for a rate limit (as the scheduler leaves it).
	until := start.Add(90 * time.Second)
	require.NoError(t, b.svc.Store.Modify(context.Background(), []string{"m"}, func(found []refresh.Model) (refresh.Batch, error) {
		w := found[0]
		w.WaitingForSlot, w.WaitingLimit, w.WaitingUntil = true, "rate_key:cdn.example.com", until
		return refresh.Batch{Changes: []refresh.Change{{Model: w}}}, nil
	}))
	code, m = b.do(t, "GET", "/models/m", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, m["waiting_for_slot"])
	require.Equal(t, "rate_key:cdn.example.com", m["waiting_limit"])
	require.Equal(t, "2026-03-02T05:31:30Z", m["waiting_until"])
}
