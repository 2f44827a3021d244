package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

func TestParseLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want refresh.Limit
		err  string
	}{
		{in: "queue:exports=5", want: refresh.Limit{Kind: "queue", Key: "exports", MaxRunning: 5}},
		{in: "prefix:acme-=2", want: refresh.Limit{Kind: "prefix", Key: "acme-", MaxRunning: 2}},
		{in: "prefix:a:b=1", want: refresh.Limit{Kind: "prefix", Key: "a:b", MaxRunning: 1}},
		{in: "rate_key:api.example.com=3", want: refresh.Limit{Kind: "rate_key", Key: "api.example.com", MaxRunning: 3}},
		{in: "rate_key:a=b=3", want: refresh.Limit{Kind: "rate_key", Key: "a=b", MaxRunning: 3}},
		{in: "queue:exports=0", err: `"queue:exports=0": max_running: must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got 0`},
		{in: "exports=5", err: `"exports=5": want queue:NAME=N, prefix:PREFIX=N or rate_key:KEY=N`},
		{in: "host:x=5", err: `"host:x=5": want queue:NAME=N, prefix:PREFIX=N or rate_key:KEY=N`},
		{in: "queue:exports", err: `"queue:exports": want queue:NAME=N, prefix:PREFIX=N or rate_key:KEY=N`},
		{in: "queue:exports=many", err: `"queue:exports=many": max_running must be an integer, got "many"`},
		{in: "queue:exports=-1", err: `"queue:exports=-1": max_running: must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got -1`},
		{in: "queue:a:b=1", err: `"queue:a:b=1": key: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "a:b"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseLimit(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	var limits []refresh.Limit
	f := limitsFlag{&limits}
	require.NoError(t, f.Set("queue:a=1, prefix:b-=2"))
	require.NoError(t, f.Set("queue:c=3"))
	require.Equal(t, "queue:a=1,prefix:b-=2,queue:c=3", f.String())
}

// TestLimitsCLI sets, lists and deletes limits of every kind through the
// API: the concurrency form KIND:KEY=N and the flags of a rate limit.
func TestLimitsCLI(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	url := memoryAPI(t, store, time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC), refresh.DefaultLimits())

	code, out, errOut := runCLI(t, url, "", "limits", "set", "queue:exports=5")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "queue \"exports\" (max_running 5)\n", out)
	code, out, errOut = runCLI(t, url, "", "limits", "set", "rate_key:api.example.com", "--max-starts", "10", "--per", "1m", "--burst", "2")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "rate_key \"api.example.com\" (max_starts 10 per 1m, burst 2)\n", out)
	code, out, errOut = runCLI(t, url, "", "limits", "set", "--max-running", "3", "prefix:acme-", "--max-starts", "100", "--per", "PT1H")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "prefix \"acme-\" (max_running 3, max_starts 100 per 1h)\n", out)
	got, err := store.Limits(context.Background())
	require.NoError(t, err)
	require.Equal(t, []refresh.Limit{
		{Kind: "prefix", Key: "acme-", MaxRunning: 3, MaxStarts: 100, Per: refresh.Duration(time.Hour)},
		{Kind: "queue", Key: "exports", MaxRunning: 5},
		{Kind: "rate_key", Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 2},
	}, got)

	code, out, errOut = runCLI(t, url, "", "limits", "list")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []string{
		"KIND      KEY              MAX_RUNNING  MAX_STARTS  PER  BURST",
		"prefix    acme-            3            100         1h   -",
		"queue     exports          5            -           -    -",
		"rate_key  api.example.com  -            10          1m   2",
	}, strings.Split(strings.TrimRight(out, "\n"), "\n"))
	code, out, errOut = runCLI(t, url, "", "limits", "list", "--json")
	require.Equal(t, 0, code, errOut)
	require.JSONEq(t, `{"limits": [
		{"kind": "prefix", "key": "acme-", "max_running": 3, "max_starts": 100, "per": "1h"},
		{"kind": "queue", "key": "exports", "max_running": 5},
		{"kind": "rate_key", "key": "api.example.com", "max_starts": 10, "per": "1m", "burst": 2}]}`, out)

	// Refused before any request, each naming the field and the rule.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"rate_key:api", "--max-starts", "0", "--per", "1m"}, "--max-starts: must be >= 1, got 0"},
		{[]string{"rate_key:api", "--max-starts", "10", "--per", "500ms"}, "per: must be from 1s to 24h, got 500ms"},
		{[]string{"rate_key:api", "--max-starts", "10"}, "per: must be from 1s to 24h, got 0s"},
		{[]string{"rate_key:api", "--max-starts", "10", "--per", "1m", "--burst", "10001"}, "burst: must be from 1 to 10000, got 10001"},
		{[]string{"rate_key:api", "--per", "1m"}, "max_starts: must be >= 1"},
		{[]string{"rate_key:" + strings.Repeat("k", 129), "--max-starts", "1", "--per", "1m"}, "key: " + refresh.RateKeyRule},
		{[]string{"host:api", "--max-starts", "1", "--per", "1m"}, `"host:api": want queue:NAME, prefix:PREFIX or rate_key:KEY`},
		{[]string{"rate_key:api", "--per", "soon"}, `invalid value "soon" for flag -per`},
	} {
		code, _, errOut := runCLI(t, url, "", append([]string{"limits", "set"}, tt.args...)...)
		require.Equal(t, 2, code, "%v: %s", tt.args, errOut)
		require.Contains(t, errOut, tt.want, tt.args)
	}

	code, out, errOut = runCLI(t, url, "", "limits", "delete", "rate_key:api.example.com")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "deleted rate_key api.example.com\n", out)
	got, err = store.Limits(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 2)
}

// TestTenantsFunc: serve hands the prefixes of the prefixed tokens to the
// scheduler, each once; none without such tokens.
func TestTenantsFunc(t *testing.T) {
	t.Parallel()
	auth, err := loadAuth("", "["+strings.Join([]string{
		tokenEntry("root", "admin", ""), tokenEntry("globex", "write", "globex-"),
		tokenEntry("acme", "write", "acme-"), tokenEntry("acme-ro", "read", "acme-"),
	}, ",")+"]", nil)
	require.NoError(t, err)
	f := tenantsFunc(auth)
	require.NotNil(t, f)
	require.Equal(t, []string{"acme-", "globex-"}, f())

	auth, err = loadAuth("", "["+tokenEntry("root", "admin", "")+"]", nil)
	require.NoError(t, err)
	require.Nil(t, tenantsFunc(auth))
	require.Nil(t, tenantsFunc(nil))
}
