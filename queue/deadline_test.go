package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// Contexts are cancelled at their deadlines, earliest first, on the clock;
// a removed one is not.
func TestDeadlines(t *testing.T) {
	clock := refresh.NewVirtualClock(t0)
	ds := newDeadlines(clock)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ds.watch(ctx); close(done) }()
	defer func() { stop(); <-done }()

	fired := make(chan int, 10)
	add := func(i int, after time.Duration) *deadline {
		return ds.add(t0.Add(after), func(cause error) {
			require.ErrorIs(t, cause, context.DeadlineExceeded)
			fired <- i
		})
	}
	add(3, 3*time.Minute)
	add(1, time.Minute)
	gone := add(2, 2*time.Minute)
	add(4, 4*time.Minute)
	ds.remove(gone)
	ds.remove(gone) // twice is harmless

	clock.Advance(time.Minute)
	require.Equal(t, 1, <-fired)
	clock.Advance(2 * time.Minute)
	require.Equal(t, 3, <-fired)
	// One added in the past is cancelled at once.
	add(0, 0)
	require.Equal(t, 0, <-fired)
	clock.Advance(time.Minute)
	require.Equal(t, 4, <-fired)
	require.Empty(t, fired)
	ds.mu.Lock()
	require.Zero(t, ds.h.Len())
	ds.mu.Unlock()
}
