package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// stalledWriter is a client that does not read: a Write of more than 64
// KiB blocks until release is closed, once entered is closed.
type stalledWriter struct {
	*httptest.ResponseRecorder
	entered, release chan struct{}
}

func (w *stalledWriter) Write(b []byte) (int, error) {
	if len(b) > 64<<10 {
		close(w.entered)
		<-w.release
	}
	return w.ResponseRecorder.Write(b)
}

// stallLarge sends GET path to h for a client that does not read, and
// returns once its answer, over 64 KiB, is being written; release lets
// the client read, waits for the answer's end and returns its status.
func stallLarge(t *testing.T, h http.Handler, path string) (release func() int) {
	t.Helper()
	w := &stalledWriter{ResponseRecorder: httptest.NewRecorder(), entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	}()
	select {
	case <-w.entered:
	case <-done:
		t.Fatalf("GET %s: answered %d without a body over 64 KiB", path, w.Code)
	}
	return func() int {
		close(w.release)
		<-done
		return w.Code
	}
}

// TestLargeResponsesBounded: while a large answer waits for its client,
// a page of models, which reserves room for its read, and another large
// answer that does not fit the budget with it are 503 with Retry-After;
// small answers pass; once the first is read, large answers pass again.
// One answer larger than the budget alone passes.
func TestLargeResponsesBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, refreshhttp.WithResponseBytes(250<<10))
	body := func(n int) string { return `{"payload": "` + strings.Repeat("x", n) + `"}` }
	for i := 1; i <= 3; i++ {
		b.put(t, fmt.Sprintf("m%d", i), body(60_000))
	}
	b.put(t, "m4", body(65_000))
	release := stallLarge(t, b.handler, "/models") // about 250 KB

	refused := func(path string) {
		t.Helper()
		rec := b.raw(t, "GET", path, "")
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.JSONEq(t, `{"error": "the server holds 250 KiB of large answers at once, its most; try again"}`, rec.Body.String())
	}
	refused("/models?limit=1") // the reservation of a page
	refused("/models/m4")      // an answer of 65 KB
	code, res := b.do(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, code, "an answer under 64 KiB")
	require.Equal(t, "m1", res["id"])

	require.Equal(t, http.StatusOK, release())
	for range 2 {
		code, res = b.do(t, "GET", "/models", "")
		require.Equal(t, http.StatusOK, code)
		require.Len(t, res["models"], 4)
		code, _ = b.do(t, "GET", "/models/m4", "")
		require.Equal(t, http.StatusOK, code)
	}
	series, _ := scrape(t, b.handler)
	require.Equal(t, 2.0, series["freshen_http_large_responses_refused_total{}"])

	// One answer larger than the whole budget is written when it is alone.
	small := setup(t, refreshhttp.WithResponseBytes(100<<10))
	for i := 1; i <= 3; i++ {
		small.put(t, fmt.Sprintf("m%d", i), body(60_000))
	}
	code, res = small.do(t, "GET", "/models", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, res["models"], 3)
}
