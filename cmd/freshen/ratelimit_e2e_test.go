package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestE2ERateLimitTenantsFromTokens runs freshen serve with tokens limited
// to the prefixes acme- and globex-, and a rate_key limit of two starts
// per 3s. Two first models take the window's starts; then acme-1, acme-2,
// acme-3 and globex-1 are triggered in that order and wait for the limit.
// The tokens' prefixes are tenants (serve's TenantsFunc), which take
// turns: the next window's two starts go to acme-1 and globex-1, the
// first of each tenant — refresh_at order alone would give them to acme-1
// and acme-2.
func TestE2ERateLimitTenantsFromTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tokens := "[" + strings.Join([]string{
		tokenEntry("admin", "admin", ""), tokenEntry("acme", "write", "acme-"), tokenEntry("globex", "write", "globex-"),
	}, ",") + "]"
	p := e.serve("tenants-test", "--tokens", tokens, "--max-sleep", "100ms")
	code, _, body := call(t, p, "PUT", "/limits/rate_key/api.example.com", "admin", `{"max_starts": 2, "per": "3s"}`)
	require.Equal(t, http.StatusOK, code, body)

	running := func(id string) bool {
		t.Helper()
		code, _, m := call(t, p, "GET", "/models/"+id, "admin", "")
		require.Equal(t, http.StatusOK, code, m)
		return m["running"] == true
	}
	put := func(id, token string) {
		t.Helper()
		code, _, m := call(t, p, "PUT", "/models/"+id, token, `{"queue": "pulls", "rate_key": "api.example.com", "trigger": true}`)
		require.Equal(t, http.StatusCreated, code, m)
	}
	put("first-1", "admin")
	put("first-2", "admin")
	waitFor(t, 30*time.Second, "first-1 and first-2 to start", func() bool { return running("first-1") && running("first-2") })
	for _, id := range []string{"acme-1", "acme-2", "acme-3"} {
		put(id, "acme")
	}
	put("globex-1", "globex")
	waitFor(t, 30*time.Second, "globex-1 to wait for the limit", func() bool {
		code, _, m := call(t, p, "GET", "/models/globex-1", "admin", "")
		require.Equal(t, http.StatusOK, code)
		return m["waiting_limit"] == "rate_key:api.example.com" || m["running"] == true
	})

	waitFor(t, 30*time.Second, "acme-1 to start", func() bool { return running("acme-1") })
	waitFor(t, 30*time.Second, "globex-1 to start", func() bool { return running("globex-1") })
	require.False(t, running("acme-2"), "globex-1 starts before acme-2: the tenants take turns")
	require.False(t, running("acme-3"))
	waitFor(t, 30*time.Second, "acme-2 and acme-3 to start, in the next window", func() bool { return running("acme-2") && running("acme-3") })
	p.stop()
}
