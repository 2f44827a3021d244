package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

func TestSoakSummarize(t *testing.T) {
	t.Parallel()
	sample := func(cycles float64, p99 time.Duration, bytes int64, ended, timedOut int) SoakSample {
		return SoakSample{CyclesPerSec: cycles, LateP99: p99, TotalBytes: bytes, Ended: ended, TimedOut: timedOut}
	}
	// 10 minutes sampled every minute: windows of 2 samples (a fifth),
	// growth over the last 3 (a third, 200s).
	r := SoakResult{Duration: 10 * time.Minute, Samples: []SoakSample{
		sample(100, 10*time.Millisecond, 1000, 100, 1),
		sample(100, 30*time.Millisecond, 1000, 100, 1),
		sample(90, 5*time.Millisecond, 1000, 100, 0),
		sample(90, 5*time.Millisecond, 1000, 100, 0),
		sample(90, 5*time.Millisecond, 1000, 100, 0),
		sample(90, 5*time.Millisecond, 1000, 100, 0),
		sample(90, 5*time.Millisecond, 1000, 100, 0),
		sample(90, 5*time.Millisecond, 1100, 100, 0),
		sample(90, 60*time.Millisecond, 1100, 100, 0),
		sample(110, 20*time.Millisecond, 1210, 100, 2),
	}}
	r.Samples[3].ReachedP99 = 80 * time.Millisecond
	r.Samples[8].ReachedP99 = 70 * time.Millisecond
	r.summarize(time.Minute)
	require.Equal(t, 2*time.Minute, r.Window)
	require.InDelta(t, 0, r.CyclesDriftPct, 1e-9)   // (90+110)/2 against (100+100)/2
	require.InDelta(t, 100, r.P99DriftPct, 1e-9)    // 40ms against 20ms
	require.Equal(t, 200*time.Second, r.GrowthSpan) // 3 samples back: 1000 -> 1210
	require.InDelta(t, 21, r.SizeGrowthPct, 1e-9)
	require.Equal(t, 60*time.Millisecond, r.WorstP99)
	require.Equal(t, 80*time.Millisecond, r.WorstReachedP99)
	require.InDelta(t, 0.4, r.TimedOutPct, 1e-9)

	// A run shorter than its windows compares its first and last samples.
	short := SoakResult{Duration: 30 * time.Second, Samples: []SoakSample{sample(50, 0, 10, 0, 0), sample(75, 0, 20, 0, 0)}}
	short.summarize(time.Minute)
	require.InDelta(t, 50, short.CyclesDriftPct, 1e-9)
	require.InDelta(t, 100, short.SizeGrowthPct, 1e-9)
	require.Zero(t, short.P99DriftPct) // no lateness at first: no ratio
}

func TestQuantiles(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p50, p99, worst := quantiles(d)
	require.Equal(t, 51*time.Millisecond, p50)
	require.Equal(t, 100*time.Millisecond, p99)
	require.Equal(t, 100*time.Millisecond, worst)
	require.Equal(t, 100*time.Millisecond, d[0], "the samples are left in their order")
	p50, p99, worst = quantiles(nil)
	require.Zero(t, p50+p99+worst)
}

// The worker's output is read line by line, however it is cut: each
// "took" line reaches the waiting sample, and only the other lines are
// kept for error messages.
func TestSlowest(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	require.Empty(t, slowest(map[time.Time]int{}, t0))
	got := slowest(map[time.Time]int{at(61): 3, at(62): 900, at(70): 3, at(75): 40, at(80): 1, at(81): 3, at(90): 2}, t0)
	require.Equal(t, []SlowSecond{{62 * time.Second, 900}, {75 * time.Second, 40}, {61 * time.Second, 3}, {70 * time.Second, 3}, {81 * time.Second, 3}}, got,
		"the most first, a tie the earliest first, five at most")
}

func TestTookLines(t *testing.T) {
	t.Parallel()
	took := &tookLines{waiting: map[string]chan time.Time{}}
	got := took.wait("lat-0000001")
	out := &output{watch: WorkerReady + "\n", seen: make(chan struct{}), line: took.line}
	for _, part := range []string{"rea", "dy\ntook lat-000", "0001 1700000000000000000 1 1699999999000000000\n", "took lat-9 12 1 11\nsome", " error\n"} {
		_, err := out.Write([]byte(part))
		require.NoError(t, err)
	}
	select {
	case <-out.seen:
	default:
		t.Fatal("ready not seen")
	}
	require.Equal(t, time.Unix(0, 1700000000000000000), <-got)
	require.Equal(t, "ready\nsome error\n", out.String())
}

// The worker's handler writes a took line for each job of a model with
// the prefix it is given, and parseTook reads back what the job said.
func TestWorkerReportsTook(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	handle := newHandler(WorkerConfig{Report: &out, ReportPrefix: "s-"})
	started := time.Unix(1700000000, 123456789)
	for _, job := range []refresh.Job{
		{ModelID: "s-0000001", AttemptNo: 2, StartedAt: started},
		{ModelID: "bg-0000001", AttemptNo: 1, StartedAt: started},
	} {
		require.NoError(t, handle(context.Background(), queue.Job{Job: job}))
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 1, out.String())
	got, ok := parseTook(lines[0])
	require.True(t, ok, lines[0])
	require.Equal(t, "s-0000001", got.modelID)
	require.Equal(t, 2, got.attempt)
	require.True(t, started.Equal(got.started), "%s", got.started)
	require.False(t, got.at.IsZero())
	for _, l := range []string{"took s-1 12 1", "took s-1 12 x 11", "ready", "took s-1 12 1 11 0"} {
		_, ok := parseTook(l)
		require.False(t, ok, l)
	}
}

// The soak counts how late the jobs of first attempts reach the worker,
// from its occurrence, and hands each interval's lateness once.
func TestReachedLines(t *testing.T) {
	t.Parallel()
	r := &reachedLines{grid: dueGrid}
	at := func(d time.Duration) int64 { return soakAnchor.Add(d).UnixNano() }
	for _, l := range []string{
		fmt.Sprintf("took s-0000001 %d 1 %d", at(3*time.Second+40*time.Millisecond), at(3*time.Second+10*time.Millisecond)),
		fmt.Sprintf("took s-0000002 %d 1 %d", at(17*time.Second+5*time.Millisecond), at(17*time.Second+time.Millisecond)),
		fmt.Sprintf("took s-0000002 %d 2 %d", at(18*time.Second), at(17*time.Second+900*time.Millisecond)), // a retry
		fmt.Sprintf("took x-0000001 %d 1 %d", at(time.Second), at(time.Second)),                            // not of the grid
		"ready",
	} {
		r.line(l)
	}
	late, handOff := r.take()
	require.Equal(t, []time.Duration{40 * time.Millisecond, 5 * time.Millisecond}, late)
	require.Equal(t, []time.Duration{30 * time.Millisecond, 4 * time.Millisecond}, handOff)
	late, handOff = r.take()
	require.Empty(t, late)
	require.Empty(t, handOff)
}

// dueGrid is a grid of three models due every 10 seconds.
var dueGrid = steadyGrid{prefix: "s-", period: 10 * time.Second, offsets: []int64{0, 3, 7}}

// dueCases are starts of models of dueGrid with the occurrence each
// started for.
func dueCases() []struct {
	id           string
	started, due time.Time
} {
	at := func(d time.Duration) time.Time { return soakAnchor.Add(d) }
	return []struct {
		id           string
		started, due time.Time
	}{
		{"s-0000000", at(25 * time.Millisecond), at(0)},
		{"s-0000001", at(3*time.Second + 25*time.Millisecond), at(3 * time.Second)},
		{"s-0000001", at(13*time.Second + 900*time.Millisecond), at(13 * time.Second)},
		{"s-0000001", at(12*time.Second + 999*time.Millisecond), at(3 * time.Second)}, // 9.999s late
		{"s-0000002", at(27 * time.Second), at(27 * time.Second)},
		{"s-0000002", at(time.Second), at(-3 * time.Second)}, // before the first occurrence
		{"s-0000002", at(1000*time.Hour + 8*time.Second), at(1000*time.Hour + 7*time.Second)},
	}
}

func TestSteadyGridDue(t *testing.T) {
	t.Parallel()
	for _, c := range dueCases() {
		due, err := dueGrid.due(c.id, c.started)
		require.NoError(t, err, c.id)
		require.Equal(t, c.due, due, "%s started %s", c.id, c.started)
	}
	for _, id := range []string{"s-0000003", "x-0000001", "s-abc", "s--1", ""} {
		_, err := dueGrid.due(id, soakAnchor)
		require.ErrorContains(t, err, "is not one of the grid's", id)
	}
}

// The samples compute an occurrence in Go (steadyGrid.due), the final
// check in SQL (dueSQL): both give the same for the same starts.
func TestSteadyGridDueMatchesSQL(t *testing.T) {
	t.Parallel()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, c := range dueCases() {
		i, err := strconv.Atoi(strings.TrimPrefix(c.id, dueGrid.prefix))
		require.NoError(t, err)
		var due time.Time
		err = conn.QueryRow(ctx, `SELECT `+dueSQL+` FROM (SELECT $3::bigint AS off_s) o, (SELECT $4::timestamptz AS started_at) a`,
			soakAnchor, dueGrid.period.Seconds(), dueGrid.offsets[i], c.started).Scan(&due)
		require.NoError(t, err)
		want, err := dueGrid.due(c.id, c.started)
		require.NoError(t, err)
		require.True(t, want.Equal(due), "%s started %s: Go %s, SQL %s", c.id, c.started, want, due)
	}
}
