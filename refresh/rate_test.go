package refresh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestAdmits checks the sliding windows of a rate limit: at most
// max_starts starts in any window of per, and with a burst at most burst
// in any window of per*burst/max_starts (rounded up), counted at the
// start instant, half-open.
func TestAdmits(t *testing.T) {
	t.Parallel()
	now := morning
	at := func(d time.Duration, n int) refresh.RateStarts { return refresh.RateStarts{At: now.Add(d), N: n} }
	perMinute := func(n, burst int) refresh.Limit {
		return refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: n, Per: refresh.Duration(time.Minute), Burst: burst}
	}
	tests := []struct {
		name  string
		limit refresh.Limit
		log   []refresh.RateStarts
		free  int
		next  time.Time
	}{
		{name: "no max_starts: any number", limit: refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxRunning: 2},
			log: []refresh.RateStarts{at(-time.Second, 100)}, free: -1, next: now},
		{name: "an empty log", limit: perMinute(10, 0), free: 10, next: now},
		{name: "starts within the window count", limit: perMinute(10, 0),
			log: []refresh.RateStarts{at(-59*time.Second, 3), at(-time.Second, 4)}, free: 3, next: now},
		{name: "a start exactly per ago is out of the window", limit: perMinute(10, 0),
			log: []refresh.RateStarts{at(-time.Minute, 10)}, free: 10, next: now},
		{name: "a start a nanosecond less than per ago counts", limit: perMinute(10, 0),
			log: []refresh.RateStarts{at(-time.Minute+time.Nanosecond, 10)}, free: 0, next: now.Add(time.Nanosecond)},
		{name: "a start at now counts", limit: perMinute(10, 0),
			log: []refresh.RateStarts{at(0, 10)}, free: 0, next: now.Add(time.Minute)},
		{name: "entries older than per are left out", limit: perMinute(2, 0),
			log: []refresh.RateStarts{at(-time.Hour, 5), at(-2*time.Minute, 1), at(-10*time.Second, 1)}, free: 1, next: now},
		{name: "full: the next start when the oldest leaves", limit: perMinute(3, 0),
			log:  []refresh.RateStarts{at(-50*time.Second, 1), at(-40*time.Second, 1), at(-30*time.Second, 1)},
			free: 0, next: now.Add(10 * time.Second)},
		{name: "full, the log out of order", limit: perMinute(3, 0),
			log:  []refresh.RateStarts{at(-30*time.Second, 1), at(-50*time.Second, 1), at(-40*time.Second, 1)},
			free: 0, next: now.Add(10 * time.Second)},
		{name: "over full: enough entries must leave", limit: perMinute(3, 0),
			log:  []refresh.RateStarts{at(-30*time.Second, 2), at(-50*time.Second, 2), at(-40*time.Second, 1)},
			free: 0, next: now.Add(20 * time.Second)},
		{name: "entries at one instant leave together", limit: perMinute(3, 0),
			log:  []refresh.RateStarts{at(-50*time.Second, 1), at(-50*time.Second, 1), at(-40*time.Second, 1), at(-30*time.Second, 1)},
			free: 0, next: now.Add(10 * time.Second)},
		{name: "an entry after now (another instance's clock) counts", limit: perMinute(3, 0),
			log: []refresh.RateStarts{at(time.Second, 3)}, free: 0, next: now.Add(61 * time.Second)},
		{name: "burst: at most burst at once", limit: perMinute(10, 2),
			free: 2, next: now},
		{name: "burst: the short window is full", limit: perMinute(10, 2), // window 12s
			log: []refresh.RateStarts{at(-5*time.Second, 2)}, free: 0, next: now.Add(7 * time.Second)},
		{name: "burst: the short window is half full", limit: perMinute(10, 2),
			log: []refresh.RateStarts{at(-20*time.Second, 2), at(-5*time.Second, 1)}, free: 1, next: now},
		{name: "burst: the short window has passed, the long one holds", limit: perMinute(10, 2),
			log: []refresh.RateStarts{at(-50*time.Second, 4), at(-30*time.Second, 4), at(-13*time.Second, 1)}, free: 1, next: now},
		{name: "burst: the long window full, the short one free", limit: perMinute(10, 2),
			log: []refresh.RateStarts{at(-50*time.Second, 5), at(-30*time.Second, 5)}, free: 0, next: now.Add(10 * time.Second)},
		{name: "burst: both full, the later instant", limit: perMinute(4, 2), // window 30s
			log: []refresh.RateStarts{at(-50*time.Second, 2), at(-5*time.Second, 2)}, free: 0, next: now.Add(25 * time.Second)},
		{name: "burst: the short window is rounded up", // 10s*1/3 = 3.333333334s
			limit: refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 3, Per: refresh.Duration(10 * time.Second), Burst: 1},
			log:   []refresh.RateStarts{at(-3333333333, 1)}, free: 0, next: now.Add(time.Nanosecond)},
		{name: "burst: rounded up, a nanosecond more is out",
			limit: refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 3, Per: refresh.Duration(10 * time.Second), Burst: 1},
			log:   []refresh.RateStarts{at(-3333333334, 1)}, free: 1, next: now},
		{name: "a burst of max_starts bounds nothing more", limit: perMinute(4, 4),
			log: []refresh.RateStarts{at(-time.Second, 3)}, free: 1, next: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			free, next := tt.limit.Admits(tt.log, now)
			require.Equal(t, tt.free, free)
			requireTime(t, tt.next, next)
			if free == 0 {
				// At next, the limit admits a start; a nanosecond before, none.
				later, _ := tt.limit.Admits(tt.log, next)
				require.Positive(t, later, "admits at next")
				before, _ := tt.limit.Admits(tt.log, next.Add(-time.Nanosecond))
				require.Zero(t, before, "admits none before next")
			}
		})
	}
}

// TestAdmitsAnyWindow starts as many as Admits admits, one pass every
// 700ms for ten minutes, and checks that no window of per ever holds more
// than max_starts starts, nor a burst window more than burst.
func TestAdmitsAnyWindow(t *testing.T) {
	t.Parallel()
	for _, l := range []refresh.Limit{
		{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 7, Per: refresh.Duration(10 * time.Second)},
		{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 7, Per: refresh.Duration(10 * time.Second), Burst: 3},
		{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 1, Per: refresh.Duration(time.Second)},
	} {
		var log, all []refresh.RateStarts
		now := morning
		for range 1000 {
			free, _ := l.Admits(log, now)
			if free > 0 {
				n := min(free, 2) // fewer than admitted at times, so that entries spread
				log = append(log, refresh.RateStarts{At: now, N: n})
				all = append(all, refresh.RateStarts{At: now, N: n})
			}
			now = now.Add(700 * time.Millisecond)
		}
		windowMax := func(w time.Duration) int {
			most := 0
			for _, e := range all {
				n := 0
				for _, f := range all {
					if !f.At.Before(e.At) && f.At.Before(e.At.Add(w)) {
						n += f.N
					}
				}
				most = max(most, n)
			}
			return most
		}
		require.Equal(t, l.MaxStarts, windowMax(time.Duration(l.Per)), "%s", l)
		if l.Burst > 0 {
			w := (time.Duration(l.Per)*time.Duration(l.Burst) + time.Duration(l.MaxStarts) - 1) / time.Duration(l.MaxStarts)
			require.Equal(t, l.Burst, windowMax(w), "%s", l)
		}
	}
}

func TestTenant(t *testing.T) {
	t.Parallel()
	prefixes := []string{"acme-", "acme-eu-", "beta", "acme-eu-"}
	for _, tc := range []struct{ id, want string }{
		{"acme-1", "acme-"},
		{"acme-eu-7", "acme-eu-"},
		{"acme-e", "acme-"},
		{"beta-x", "beta"},
		{"acm", ""},
		{"other", ""},
		{"", ""},
	} {
		require.Equal(t, tc.want, refresh.Tenant(tc.id, prefixes), "id %q", tc.id)
	}
	require.Empty(t, refresh.Tenant("acme-1", nil))
}
