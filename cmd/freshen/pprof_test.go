package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The profiler has no tokens: serve refuses to open it beyond loopback
// unless --insecure, naming the flag and the rule, and never shows the
// command line, which may hold a password.
func TestPprof(t *testing.T) {
	m := NewMain(io.Discard)
	m.Logger = slog.New(slog.DiscardHandler)
	err := m.servePprof(":0")
	require.ErrorContains(t, err, "--pprof-addr :0: other hosts can reach it (it is no loopback address)")
	require.ErrorContains(t, err, "--insecure")
	require.Nil(t, m.pprof, "no profiler was opened")

	require.NoError(t, m.servePprof("127.0.0.1:0"))
	require.NoError(t, m.Close())

	m = NewMain(io.Discard)
	m.Logger = slog.New(slog.DiscardHandler)
	m.Config.Insecure = true
	require.NoError(t, m.servePprof(":0"), "--insecure allows it")
	require.NoError(t, m.Close())

	srv := httptest.NewServer(pprofHandler())
	defer srv.Close()
	for path, want := range map[string]int{
		"/debug/pprof/cmdline":   http.StatusNotFound,
		"/debug/pprof/":          http.StatusOK,
		"/debug/pprof/goroutine": http.StatusOK,
	} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, path)
		if path == "/debug/pprof/cmdline" {
			require.False(t, strings.Contains(string(body), "-test."), "the command line is not shown: %s", body)
		}
	}
}
