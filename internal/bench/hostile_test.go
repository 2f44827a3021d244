package bench

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// TestWorstSchedulesAreAccepted checks that the schedules the hostile run
// writes as accepted pass every check of a PUT, whatever the day, the time
// and the variant, and that those it writes as refused are refused by the
// schedule's rules.
func TestWorstSchedulesAreAccepted(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	for _, now := range []time.Time{
		time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2028, 2, 29, 0, 0, 1, 0, time.UTC),
		time.Date(2031, 7, 14, 12, 0, 0, 0, time.UTC),
	} {
		for _, variant := range []int{0, 1, 59, maxVariants / 2, maxVariants - 1, maxVariants} {
			for _, s := range worstSchedules(now, variant) {
				p, err := refresh.ParsePolicy([]byte(`{"schedule":`+jsonString(s.text)+`}`), lim)
				require.NoError(t, err, "%s, variant %d", s.name, variant)
				require.NoError(t, p.CheckAt(now, now, lim), "%s at %s, variant %d", s.name, now, variant)
			}
			for _, s := range refusedSchedules(now, variant) {
				p, err := refresh.ParsePolicy([]byte(`{"schedule":`+jsonString(s.text)+`}`), lim)
				if err == nil {
					err = p.CheckAt(now, now, lim)
				}
				var verr *refresh.ValidationError
				require.ErrorAs(t, err, &verr, "%s, variant %d", s.name, variant)
				require.Equal(t, "schedule", verr.Fields[0].Field, "%s: %v", s.name, err)
			}
		}
	}
}

func TestWorstSchedulesVariantsDiffer(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 5, 30, 0, 0, time.UTC)
	seen := map[string]int{}
	for variant := range maxVariants {
		for _, s := range worstSchedules(now, variant) {
			prev, dup := seen[s.text]
			require.False(t, dup, "%s: variant %d repeats variant %d", s.name, variant, prev)
			seen[s.text] = variant
		}
	}
}

func TestHostileConfig(t *testing.T) {
	t.Parallel()
	c, err := HostileConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, HostileConfig{
		Duration: DefaultHostileDuration, Repeats: DefaultHostileRepeats, Settle: DefaultHostileSettle,
		Background: DefaultHostileBackground, Concurrency: DefaultHostileConcurrency, Clients: DefaultHostileClients,
		IdleConns: DefaultHostileIdleConns, SlowConns: DefaultHostileSlowConns, TrickleEvery: DefaultHostileTrickle,
		Pass: DefaultHostilePass, Crowd: DefaultHostileCrowd,
	}, c)
	for _, tc := range []struct {
		cfg HostileConfig
		err string
	}{
		{HostileConfig{Repeats: -1}, "bench: hostile: Repeats: must be >= 1, got -1"},
		{HostileConfig{IdleConns: -2}, "bench: hostile: IdleConns: must be >= 1, got -2"},
		{HostileConfig{Crowd: -3}, "bench: hostile: Crowd: must be >= 1, got -3"},
		{HostileConfig{Settle: -time.Second}, "bench: hostile: Settle: must be > 0, got -1s"},
		{HostileConfig{Pass: maxVariants + 1}, "bench: hostile: Pass: must be at most 3600 (the variants of a schedule), got 3601"},
	} {
		_, err := tc.cfg.withDefaults()
		require.EqualError(t, err, tc.err)
	}
}

func TestTraffic(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	perSecond := make([]int, 60)
	perSecond[10], perSecond[20] = 2, 1 // 3 models: two due at :10, one at :20
	attempts := []bgAttempt{
		{second: 10, started: at(10*time.Second + 5*time.Millisecond), finished: at(10*time.Second + 9*time.Millisecond), success: true},
		{second: 10, started: at(10*time.Second + 40*time.Millisecond), finished: at(11 * time.Second), success: true},
		// Due at 06:00:20, started 1.5s late, finished after the window.
		{second: 20, started: at(21500 * time.Millisecond), finished: at(31 * time.Second), success: true},
		// Due at 06:01:10, after the window.
		{second: 10, started: at(70*time.Second + time.Millisecond), finished: at(70*time.Second + 2*time.Millisecond), success: true},
		// Due before the window, finished in it, but failed.
		{second: 20, started: at(-40 * time.Second), finished: at(5 * time.Second)},
	}
	got := traffic(attempts, perSecond, base, at(30*time.Second))
	require.Equal(t, Traffic{
		Window: 30 * time.Second, Due: 3, Started: 3, Applied: 2,
		P50: 40 * time.Millisecond, P99: 1500 * time.Millisecond, Max: 1500 * time.Millisecond,
	}, got)

	// A window that starts off the second counts the occurrences in it.
	got = traffic(nil, perSecond, at(10*time.Second+time.Millisecond), at(80*time.Second))
	require.Equal(t, 1+2, got.Due, "06:00:20 (1 model), 06:01:10 (2); not 06:00:10, before the window")
}

func TestThreadsCPUAgreesWithStat(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	c0, err := threadsCPU(pid)
	if err != nil {
		t.Skipf("no schedstat: %v", err)
	}
	s0, err := processCPU(pid)
	require.NoError(t, err)
	x := 0
	for c := c0; c-c0 < 300*time.Millisecond; c, err = threadsCPU(pid) {
		require.NoError(t, err)
		for i := range 1_000_000 {
			x += i
		}
	}
	c1, err := threadsCPU(pid)
	require.NoError(t, err)
	s1, err := processCPU(pid)
	require.NoError(t, err)
	// Other tests run meanwhile: both count them. Ticks are 10 ms.
	require.InDelta(t, float64(s1-s0), float64(c1-c0), float64((c1-c0)/4+50*time.Millisecond), "spun %d", x)
}

func TestDeepPayloadIsAtTheLimits(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	p := deepPayload(lim.MaxPayloadDepth, lim.MaxPayloadBytes)
	require.Len(t, p, lim.MaxPayloadBytes)
	require.Equal(t, lim.MaxPayloadDepth, strings.Count(p, "{"))
}

func TestFailureOutcomeIsValidUTF8OfTheLengthAsked(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 4, 5, 9999, 10_000} {
		msg := string(failureOutcome("m", "u", n))
		require.Contains(t, msg, `"outcome":"failure"`)
		body := msg[strings.Index(msg, `"message":"`)+len(`"message":"`) : len(msg)-2]
		require.LessOrEqual(t, len(body), n)
		require.Greater(t, len(body), n-3, "at most a character cut off")
	}
}

func TestFormatInt(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1_048_576: "1,048,576", -12345: "-12,345"} {
		require.Equal(t, want, formatInt(n))
	}
}

// TestHostileRequestsAreAnsweredAsPromised runs every reproduction that is
// only HTTP against the API handler of freshen serve (over a memory store,
// with short read timeouts), and checks each gets the answer its limit
// promises: the inputs of the hostile run are refused or accepted as they
// claim.
func TestHostileRequestsAreAnsweredAsPromised(t *testing.T) {
	t.Parallel()
	svc := &refresh.Service{Store: memory.NewStore(), Clock: refresh.SystemClock{}, Logger: slog.New(slog.DiscardHandler)}
	srv := httptest.NewUnstartedServer(refreshhttp.NewServer(svc, refreshhttp.WithLogger(slog.New(slog.DiscardHandler))))
	srv.Config.ReadHeaderTimeout = 300 * time.Millisecond
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	cfg, err := HostileConfig{IdleConns: 20, SlowConns: 2, TrickleEvery: 50 * time.Millisecond}.withDefaults()
	require.NoError(t, err)
	h := &hostile{
		b:      &Bench{clock: refresh.SystemClock{}},
		cfg:    cfg,
		serve:  &child{addr: strings.TrimPrefix(srv.URL, "http://")},
		base:   srv.URL,
		client: srv.Client(),
	}
	ctx := context.Background()
	ran := 0
	for _, r := range h.repros() {
		if r.redis {
			continue // no Redis here
		}
		for i := range 2 { // a create, then a replace
			measured, err := r.prepare(ctx, i, "")
			require.NoError(t, err, r.name)
			a, err := measured(ctx)
			require.NoError(t, err, r.name)
			if a.release != nil {
				a.release()
			}
			require.True(t, a.ok, "%s: %s", r.name, a.status)
		}
		ran++
	}
	require.Greater(t, ran, 20, "reproductions run")
}
