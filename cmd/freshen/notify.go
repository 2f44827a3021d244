package main

import (
	"context"
	"sync/atomic"
	"time"
)

// pollInterval is how often the scheduler looks at the database while
// serve does not know that notifications reach it: until its LISTEN
// connection has heard its own notification, and for good if it never
// does (a pooler in transaction mode, without --listen-database-url).
const pollInterval = 500 * time.Millisecond

// probeTimeout is how long serve waits for its own notification before
// it says that notifications do not arrive.
const probeTimeout = 5 * time.Second

// deafDetail is the line of /readyz's detail, and of the log, while
// notifications do not arrive.
const deafDetail = "notifications: LISTEN on the database URL hears no notification (a pooler in transaction mode?): set --listen-database-url to a direct connection; until then the scheduler polls every 500ms"

// notifications is what serve knows of its LISTEN connection.
type notifications struct {
	// heard is true while the current connection has heard serve's own
	// notification; deaf once one did not within probeTimeout.
	heard, deaf atomic.Bool
	warned      bool // deafDetail was logged (listen's goroutine only)
}

// detail is the /readyz check of notifications.
func (n *notifications) detail(context.Context) []string {
	if n.deaf.Load() {
		return []string{deafDetail}
	}
	return nil
}

// listen wakes the scheduler on every PostgreSQL notification of a model
// that became due earlier, so that a model created or triggered through
// another instance starts at once. A lost connection is re-opened with
// backoff; the scheduler is woken after each (re)connection to make up for
// the notifications missed meanwhile. Until a connection hears serve's own
// notification the scheduler is woken every pollInterval; if it does not
// within probeTimeout, serve says so once in the log, and in /readyz's
// detail while it lasts.
func (m *Main) listen(ctx context.Context, wake func()) {
	go m.poll(ctx, wake)
	backoff := time.Duration(0)
	store := m.store.Load()
	for ctx.Err() == nil {
		m.notify.heard.Store(false)
		l, err := store.Listen(ctx)
		if err != nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			m.Logger.Error("listen for due models", "err", err, "retry_in", backoff.String())
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		wake()
		heard, timeout := l.Heard, time.After(probeTimeout)
		for open := true; open; {
			select {
			case _, open = <-l.Wake:
				wake()
			case <-heard:
				heard, timeout = nil, nil
				m.notify.heard.Store(true)
				m.notify.deaf.Store(false)
				m.Logger.Info("notifications arrive: the scheduler wakes on them")
			case <-timeout:
				timeout = nil
				m.notify.deaf.Store(true)
				if !m.notify.warned {
					m.notify.warned = true
					m.Logger.Warn(deafDetail)
				}
			}
		}
		if ctx.Err() == nil {
			m.Logger.Warn("listen connection lost; reconnecting")
		}
	}
}

// poll wakes the scheduler every pollInterval while notifications are not
// known to arrive, until ctx ends.
func (m *Main) poll(ctx context.Context, wake func()) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !m.notify.heard.Load() {
				wake()
			}
		}
	}
}
