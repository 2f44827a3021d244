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
// service, tokens (nil: none) and dead letters, and the queue depths and
// lifecycle events of q.
func withDashboard(api http.Handler, svc *refresh.Service, auth *refreshhttp.Auth, dead refreshhttp.DeadLetters,
	q *queue.Redis, log *slog.Logger) http.Handler {
	opts := []ui.Option{ui.WithLogger(log), ui.WithQueues(q), ui.WithEvents(q)}
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
