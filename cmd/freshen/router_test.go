package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// /readyz tells everyone whether serve is ready, and only an admin token
// without a prefix (and the log) what is wrong: the detail names internal
// addresses.
func TestReadyDetail(t *testing.T) {
	auth, err := refreshhttp.NewAuth([]refreshhttp.Token{
		{Name: "ops", Hash: refreshhttp.HashToken("t-admin"), Scopes: []refreshhttp.Scope{"admin"}},
		{Name: "acme-ops", Hash: refreshhttp.HashToken("t-acme"), Scopes: []refreshhttp.Scope{"admin"}, Prefix: "acme-"},
		{Name: "reader", Hash: refreshhttp.HashToken("t-read"), Scopes: []refreshhttp.Scope{"read"}},
	}, nil)
	require.NoError(t, err)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	var store atomic.Pointer[postgres.Store]
	rt := newRouter(client, "127.0.0.1:1", &store, redactor{}, auth, log)
	rt.addDetail(func(context.Context) []string { return []string{"notifications: none arrived for 5m"} })

	get := func(token string) (int, map[string]any) {
		r := httptest.NewRequest("GET", "/readyz", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, r)
		var body map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
		require.NotContains(t, w.Body.String(), "127.0.0.1", "nothing but the detail names an address")
		return w.Code, body
	}
	for _, token := range []string{"", "t-read", "t-acme", "unknown"} {
		code, body := get(token)
		require.Equal(t, http.StatusServiceUnavailable, code, token)
		require.Equal(t, map[string]any{"status": "unavailable"}, body, "token %q sees the status only", token)
	}

	r := httptest.NewRequest("GET", "/readyz", nil)
	r.Header.Set("Authorization", "Bearer t-admin")
	w := httptest.NewRecorder()
	rt.ServeHTTP(w, r)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	var body readiness
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Equal(t, "unavailable", body.Status)
	require.Len(t, body.Detail, 3, body.Detail)
	require.Equal(t, "postgres: not connected yet", body.Detail[0])
	require.True(t, strings.HasPrefix(body.Detail[1], "redis: 127.0.0.1:1: "), body.Detail[1])
	require.Contains(t, body.Detail[1], "connection refused")
	require.Equal(t, "notifications: none arrived for 5m", body.Detail[2], "an added check is appended")

	require.Contains(t, logs.String(), "readiness: postgres: not connected yet; redis: 127.0.0.1:1: ")
	require.Equal(t, 1, strings.Count(logs.String(), "readiness:"), "the same detail is logged once: %s", logs.String())

	// Without tokens every caller is admin, as for the API.
	open := newRouter(client, "127.0.0.1:1", &store, redactor{}, nil, log)
	w = httptest.NewRecorder()
	open.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
	require.Contains(t, w.Body.String(), `"detail":["postgres: not connected yet","redis: 127.0.0.1:1: `)
}
