package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// metricsReader waits while serve answers 503 (starting), and is done once
// the successes reach the models wanted.
func TestMetricsReader(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := calls.Add(1)
		if n <= 2 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "# TYPE freshen_attempts_started_total counter\nfreshen_attempts_started_total %d\n"+
			"# TYPE freshen_attempts_succeeded_total counter\nfreshen_attempts_succeeded_total %d\n", 10*n, 10*(n-3))
	}))
	t.Cleanup(srv.Close)
	clock := refresh.SystemClock{}
	r := newMetricsReader(strings.TrimPrefix(srv.URL, "http://"), 50, clock)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- r.run(ctx) }()
	select {
	case <-r.finished():
	case err := <-errs:
		t.Fatalf("run ended: %v", err)
	case <-clock.After(10 * time.Second):
		t.Fatal("not done after 10s")
	}
	cancel()
	require.NoError(t, <-errs)
	started, succeeded := r.counts()
	require.GreaterOrEqual(t, succeeded, 50)
	require.Greater(t, started, succeeded)
	firstStart, firstSuccess, doneAt, _ := r.times()
	require.False(t, firstStart.IsZero())
	require.True(t, firstSuccess.After(firstStart), "the first read after the 503s saw starts and no success")
	require.False(t, doneAt.Before(firstSuccess))
	require.Zero(t, r.xreads())
}

// A run is followed on the events stream only if it carries started and
// succeeded.
func TestNewProgress(t *testing.T) {
	t.Parallel()
	b := &Bench{clock: refresh.SystemClock{}}
	for events, stream := range map[string]bool{"": true, "all": true, "-failed": true, "-started,-succeeded": false, "succeeded": false} {
		p, err := b.newProgress(events, false, "127.0.0.1:1", 1)
		require.NoError(t, err)
		_, isStream := p.(*eventReader)
		require.Equal(t, stream, isStream, "events %q", events)
		p, err = b.newProgress(events, true, "127.0.0.1:1", 1)
		require.NoError(t, err)
		require.IsType(t, &metricsReader{}, p, "events %q, metrics asked", events)
	}
	_, err := b.newProgress("strated", false, "127.0.0.1:1", 1)
	require.ErrorContains(t, err, "bench: e2e: Events: must be all, none, or names")
}
