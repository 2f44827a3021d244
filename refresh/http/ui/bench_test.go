package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/http/ui"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// benchHandler is an open dashboard over n models of the hourly policy.
func benchHandler(b *testing.B, n int) http.Handler {
	b.Helper()
	store := memory.NewStore()
	svc := &refresh.Service{Store: store, Clock: refresh.NewVirtualClock(now)}
	for i := range n {
		_, _, err := svc.Put(context.Background(), refresh.PutRequest{ID: fmt.Sprintf("m-%05d", i), Queue: fmt.Sprintf("q%d", i%20), Policy: []byte(hourly)})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ui.New(svc)
}

func benchGet(b *testing.B, h http.Handler, path string) {
	b.Helper()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, rec.Code)
		}
	}
}

// BenchmarkOverview counts 10,000 models, the default bound.
func BenchmarkOverview(b *testing.B) { benchGet(b, benchHandler(b, 10_000), "/ui/") }

// BenchmarkModels lists a page of 50 models.
func BenchmarkModels(b *testing.B) { benchGet(b, benchHandler(b, 1_000), "/ui/models") }

// BenchmarkModel renders a model's page: two simulations and their charts.
func BenchmarkModel(b *testing.B) { benchGet(b, benchHandler(b, 1), "/ui/models/m-00000") }

// BenchmarkPreview simulates the preview's example.
func BenchmarkPreview(b *testing.B) {
	h := benchHandler(b, 0)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/preview", nil))
	var csrf string
	for _, c := range rec.Result().Cookies() {
		if c.Name == "freshen_csrf" {
			csrf = c.Value
		}
	}
	token := csrfField.FindStringSubmatch(rec.Body.String())[1]
	form := url.Values{"csrf": {token}, "policy": {hourly}, "attempts": {"5x failure http_503 after 1m"},
		"then": {"success after 5m"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P3D"}, "id": {"preview"}}.Encode()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/ui/preview", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "freshen_csrf", Value: csrf})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("preview: %d", rec.Code)
		}
	}
}
