package main

import (
	"log/slog"
	"net/http"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
)

// withDashboard returns api with the dashboard mounted at /ui/: the same
// service, tokens (nil: none) and dead letters, the queue depths and
// lifecycle events of q, and the options more (serve's sessions).
func withDashboard(api http.Handler, svc *refresh.Service, auth *refreshhttp.Auth, dead refreshhttp.DeadLetters,
	q *queue.Redis, log *slog.Logger, more ...ui.Option) http.Handler {
	opts := append([]ui.Option{ui.WithLogger(log), ui.WithQueues(q), ui.WithEvents(q)}, more...)
	if auth != nil {
		opts = append(opts, ui.WithAuth(auth))
	}
	if dead != nil {
		opts = append(opts, ui.WithDeadLetters(dead))
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.New(svc, opts...))
	mux.Handle("/", api)
	return mux
}
