package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// TestParseSpecNamesEveryRule: a spec is refused with every broken rule
// named, whether or not it has a model.
func TestParseSpecNamesEveryRule(t *testing.T) {
	t.Parallel()
	fields := func(spec string) []string {
		_, err := scenarios.ParseSpec([]byte(spec), refresh.DefaultLimits())
		var v *refresh.ValidationError
		require.ErrorAs(t, err, &v)
		var out []string
		for _, f := range v.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	const times = `"start": "2026-03-02T05:30:00Z", "until": "2026-03-03T00:00:00Z"`
	require.Equal(t, []string{"model", "attempts[0].outcome", "default.outcome"},
		fields(`{`+times+`, "attempts": [{"outcome": "sucess"}], "default": {"outcome": "maybe"}}`))
	require.Equal(t, []string{"model.id", "attempts[0].outcome"},
		fields(`{`+times+`, "model": {}, "attempts": [{"outcome": "sucess"}]}`))
}

// TestParseSpecLimits: the limits of a spec are refused as the limits API
// refuses them, each broken rule named with the limit's own path; a
// model's rate_key is refused with its path too.
func TestParseSpecLimits(t *testing.T) {
	t.Parallel()
	const head = `{"start": "2026-03-02T06:00:00Z", "until": "2026-03-02T08:00:00Z", "models": [{"id": "a"}], "limits": [`
	parse := func(limits string) (scenarios.Spec, []string) {
		spec, err := scenarios.ParseSpec([]byte(head+limits+`]}`), refresh.DefaultLimits())
		if err == nil {
			return spec, nil
		}
		var v *refresh.ValidationError
		require.ErrorAs(t, err, &v)
		var out []string
		for _, f := range v.Fields {
			out = append(out, f.Field+": "+f.Rule)
		}
		return spec, out
	}
	for _, tt := range []struct {
		name, limits string
		want         []string
	}{
		{"no bound", `{"kind": "queue", "key": "q"}`,
			[]string{"limits[0].max_running: is required (an integer >= 1), unless max_starts is set"}},
		{"max_running 0", `{"kind": "queue", "key": "q", "max_running": 0}`,
			[]string{"limits[0].max_running: must be >= 1 (to start none of the models, pause them), got 0"}},
		{"max_running 0 beside a rate", `{"kind": "queue", "key": "q", "max_running": 0, "max_starts": 5, "per": "1m"}`,
			[]string{"limits[0].max_running: must be >= 1 (to start none of the models, pause them), got 0"}},
		{"max_starts 0", `{"kind": "rate_key", "key": "api.example.com", "max_starts": 0, "per": "1m"}`,
			[]string{"limits[0].max_starts: must be >= 1 (to start none of the models, pause them), got 0"}},
		{"max_starts negative", `{"kind": "rate_key", "key": "api.example.com", "max_starts": -3, "per": "1m"}`,
			[]string{"limits[0].max_starts: must be >= 1 (to start none of the models, pause them), got -3"}},
		{"max_starts without per", `{"kind": "rate_key", "key": "api.example.com", "max_starts": 10}`,
			[]string{"limits[0].per: is required with max_starts (a duration from 1s to 24h)"}},
		{"per not a duration", `{"kind": "rate_key", "key": "api.example.com", "max_starts": 10, "per": "a minute"}`,
			[]string{`limits[0].per: must be a duration like "90s" or "PT5M", got "a minute"`}},
		{"per under 1s", `{"kind": "queue", "key": "q", "max_starts": 10, "per": "500ms"}`,
			[]string{"limits[0].per: must be from 1s to 24h, got 500ms"}},
		{"per over a day", `{"kind": "queue", "key": "q", "max_starts": 10, "per": "P2D"}`,
			[]string{"limits[0].per: must be from 1s to 24h, got 48h"}},
		{"per without max_starts", `{"kind": "queue", "key": "q", "max_running": 2, "per": "1m"}`,
			[]string{"limits[0].max_starts: must be >= 1 (to start none of the models, pause them), got 0"}},
		{"burst 0", `{"kind": "prefix", "key": "acme-", "max_starts": 10, "per": "1m", "burst": 0}`,
			[]string{"limits[0].burst: must be from 1 to 10000, got 0"}},
		{"burst over 10,000", `{"kind": "prefix", "key": "acme-", "max_starts": 20000, "per": "1m", "burst": 10001}`,
			[]string{"limits[0].burst: must be from 1 to 10000, got 10001"}},
		{"burst without max_starts", `{"kind": "prefix", "key": "acme-", "max_running": 1, "burst": 2}`,
			[]string{"limits[0].max_starts: must be >= 1 (to start none of the models, pause them), got 0"}},
		{"rate key too long", `{"kind": "rate_key", "key": "` + strings.Repeat("k", 129) + `", "max_starts": 1, "per": "1s"}`,
			[]string{`limits[0].key: must be 1 to 128 bytes of UTF-8 without control characters, got "` + strings.Repeat("k", 37) + `..."`}},
		{"rate key with a control character", `{"kind": "rate_key", "key": "api\u0007", "max_starts": 1, "per": "1s"}`,
			[]string{`limits[0].key: must be 1 to 128 bytes of UTF-8 without control characters, got "api\a"`}},
		{"every rule of two limits, in the order of the fields",
			`{"kind": "host", "key": "", "max_starts": 0, "per": "2s", "burst": -1}, {"kind": "rate_key", "key": "x", "max_running": 1}, {"kind": "rate_key", "key": "x", "max_running": 2}`,
			[]string{
				`limits[0].kind: must be "queue", "prefix" or "rate_key", got "host"`,
				"limits[0].max_starts: must be >= 1 (to start none of the models, pause them), got 0",
				"limits[0].burst: must be from 1 to 10000, got -1",
				`limits[2]: repeats limits[1] (rate_key "x")`,
			}},
	} {
		_, got := parse(tt.limits)
		require.Equal(t, tt.want, got, tt.name)
	}

	// A rate limit alone, a concurrency limit alone, and both at once.
	spec, errs := parse(`{"kind": "rate_key", "key": "api.example.com", "max_starts": 10, "per": "1m", "burst": 2},
		{"kind": "queue", "key": "q", "max_running": 3}, {"kind": "rate_key", "key": "b", "max_running": 1, "max_starts": 5, "per": "PT1H"}`)
	require.Empty(t, errs)
	require.Equal(t, []refresh.Limit{
		{Kind: "rate_key", Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 2},
		{Kind: "queue", Key: "q", MaxRunning: 3},
		{Kind: "rate_key", Key: "b", MaxRunning: 1, MaxStarts: 5, Per: refresh.Duration(time.Hour)},
	}, spec.Limits)

	// rate_key on a model, in either form.
	const times = `"start": "2026-03-02T06:00:00Z", "until": "2026-03-02T08:00:00Z"`
	for _, tt := range []struct{ spec, want string }{
		{`{` + times + `, "model": {"id": "a", "rate_key": "bad\nkey"}}`,
			`model.rate_key: must be 1 to 128 bytes of UTF-8 without control characters, got "bad\nkey"`},
		{`{` + times + `, "models": [{"id": "a", "rate_key": "ok"}, {"id": "b", "rate_key": "` + strings.Repeat("é", 65) + `"}]}`,
			`models[1].rate_key: must be 1 to 128 bytes of UTF-8 without control characters, got "` + strings.Repeat("é", 65) + `"`},
	} {
		_, err := scenarios.ParseSpec([]byte(tt.spec), refresh.DefaultLimits())
		require.EqualError(t, err, tt.want)
	}
	spec, err := scenarios.ParseSpec([]byte(`{`+times+`, "models": [{"id": "a", "rate_key": "api.example.com"}, {"id": "b"}]}`), refresh.DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "api.example.com", spec.Models[0].RateKey)
	require.Empty(t, spec.Models[1].RateKey)
}
