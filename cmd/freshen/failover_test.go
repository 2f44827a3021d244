package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// TestE2ERedisFailover runs freshen serve and a Go worker through Redis
// Sentinel (a primary, a replica, one Sentinel) while a few hundred models
// refresh every two seconds (timing out after three), and kills the
// primary with SIGKILL under that load. Just before, replication is cut
// after a barrier the replica acknowledged, and the worker is held until
// jobs wait on the primary, so that the primary dies with writes the
// replica never received. The Sentinel promotes the replica and the whole
// system follows it: every model then succeeds in an attempt started after
// the promotion; the only loss is what the replica had not received (jobs
// and outcomes of attempts running since the barrier), and it shows as
// attempts that time out and are retried by policy; no model stays running
// past its deadline plus a margin once the new primary serves; serve never
// exits and /readyz answers 200 again.
func TestE2ERedisFailover(t *testing.T) {
	t.Parallel()
	const (
		n       = 300
		master  = "fo"
		options = "redis://?dial_timeout=300ms&read_timeout=1s&write_timeout=1s"
		// margin is how long past its deadline, or past the promotion if
		// that came later, an attempt may still run: the scheduler's
		// backoff after the failed passes of the failover and one pass.
		margin = 4 * time.Second
	)
	e := newEnv(t)
	ctx := context.Background()

	primary := startRedis(t, "primary", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
	replica := startRedis(t, "replica", "--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	sdir := t.TempDir()
	conf := filepath.Join(sdir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`sentinel monitor %s 127.0.0.1 %d 1
sentinel down-after-milliseconds %s 500
sentinel failover-timeout %s 5000
`, master, primary.port, master, master)), 0o644))
	sentinel := startRedis(t, "sentinel", conf, "--sentinel")
	sentinelC := redis.NewSentinelClient(&redis.Options{Addr: sentinel.addr()})
	t.Cleanup(func() { _ = sentinelC.Close() })
	primaryC := primary.client()
	waitFor(t, 15*time.Second, "the replica in sync and known to the Sentinel", func() bool {
		info, err := primaryC.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "state=online") {
			return false
		}
		replicas, err := sentinelC.Replicas(ctx, master).Result()
		return err == nil && len(replicas) == 1 && replicas[0]["flags"] == "slave"
	})

	p := e.serve("fo", "--redis-url", options, "--redis-sentinel-master", master,
		"--redis-sentinel-addrs", sentinel.addr(), "--min-interval", "PT1S", "--batch-size", "100", "--log-level", "warn")

	// The worker, through the Sentinel too.
	client, err := queue.NewClient(queue.ClientConfig{URL: options + "&pool_size=40",
		SentinelMaster: master, SentinelAddrs: []string{sentinel.addr()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	// Its handlers succeed at once, unless held: then they wait for the
	// release.
	const concurrency = 16
	var mu sync.Mutex
	handled, blocked := 0, 0
	released := make(chan struct{})
	close(released)
	hold := func() {
		mu.Lock()
		released = make(chan struct{})
		mu.Unlock()
	}
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-released:
		default:
			close(released)
		}
	}
	worker, err := queue.NewWorker(client, queue.WorkerOptions{
		Prefix: e.prefix, Queue: "fo", Concurrency: concurrency, Block: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}, func(context.Context, queue.Job) error {
		mu.Lock()
		handled++
		wait := released
		blocked++
		mu.Unlock()
		<-wait
		mu.Lock()
		blocked--
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	workCtx, stopWork := context.WithCancel(ctx)
	workDone := make(chan error, 1)
	go func() { workDone <- worker.Run(workCtx) }()
	t.Cleanup(func() {
		release()
		stopWork()
		<-workDone
	})

	// n models due every 2s, half of them on even seconds and half on odd
	// ones, timing out after 3s and retried at once.
	day := time.Now().UTC().Format("20060102")
	for k := range 2 {
		policy, err := refresh.ParsePolicy([]byte(fmt.Sprintf(`{"schedule": "DTSTART:%sT00000%dZ\nRRULE:FREQ=SECONDLY;INTERVAL=2",
			"timeout": "3s", "retry": {"backoff": {"strategy": "immediate", "max_retries": 5}, "align": false}}`, day, k)),
			refresh.Limits{MinInterval: time.Second})
		require.NoError(t, err)
		stored, err := json.Marshal(policy)
		require.NoError(t, err)
		_, err = e.db.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
			SELECT 'm-' || lpad(i::text, 3, '0'), 'fo', '{}', (SELECT freshen_policy_id($1::jsonb)), now(), now()
			FROM generate_series($2::int, $3::int, 2) AS i`, string(stored), k, n-1)
		require.NoError(t, err)
	}
	succeededSince := func(t0 time.Time) int {
		return e.count(`SELECT count(DISTINCT model_id) FROM attempts WHERE outcome = 'success' AND started_at > $1`, t0)
	}
	// stuck counts the models running past max(deadline, floor) + margin.
	maxLate := 0.0 // seconds
	stuck := func(floor time.Time) int {
		var late float64
		var count int
		require.NoError(t, e.db.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE greatest(deadline_at, $1) < now() - make_interval(secs => $2)),
				coalesce(extract(epoch FROM max(now() - greatest(deadline_at, $1))), 0)::float8
			FROM models WHERE attempt_uid IS NOT NULL`, floor, margin.Seconds()).Scan(&count, &late))
		maxLate = max(maxLate, late)
		return count
	}
	loadedAt := time.Now()
	waitFor(t, 30*time.Second, "every model to succeed twice", func() bool {
		require.Zero(t, stuck(time.Time{}), "models running past their deadline before the failover")
		return e.count(`SELECT count(*) FROM (SELECT model_id FROM attempts WHERE outcome = 'success'
			GROUP BY model_id HAVING count(*) >= 2) s`) == n
	})
	before := e.count(`SELECT count(*) FROM attempts WHERE outcome IS NOT NULL`)
	t.Logf("load: %d attempts finished in %s", before, time.Since(loadedAt).Round(time.Millisecond))

	// Replication stops at a known point: everything written before the
	// barrier is on the replica (WAIT), then the primary drops the link and
	// the replica cannot come back (it authenticates as a user the primary
	// does not know). Writes from then on live on the primary alone.
	require.NoError(t, primaryC.Set(ctx, e.prefix+":barrier", "1", 0).Err())
	waitFor(t, 30*time.Second, "the replica to acknowledge the barrier", func() bool {
		acked, err := primaryC.Wait(ctx, 1, 2*time.Second).Result()
		return err == nil && acked == 1
	})
	barrierAt := time.Now()
	replicaC := replica.client()
	require.NoError(t, replicaC.ConfigSet(ctx, "masteruser", "nobody").Err())
	require.NoError(t, replicaC.ConfigSet(ctx, "masterauth", "wrong").Err())
	require.NoError(t, primaryC.ClientKillByFilter(ctx, "TYPE", "replica").Err())
	waitFor(t, 5*time.Second, "the replication link to be down", func() bool {
		info, err := replicaC.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:down")
	})

	// Under load, with jobs waiting that only the primary has (the worker
	// is held: every handler blocks, so no job moves), the primary dies.
	hold()
	jobs := func(c *redis.Client) map[string]bool {
		items, err := c.LRange(ctx, e.key("jobs:fo"), 0, -1).Result()
		require.NoError(t, err)
		uids := map[string]bool{}
		for _, item := range items {
			var job refresh.Job
			require.NoError(t, json.Unmarshal([]byte(item), &job))
			uids[job.AttemptUID] = true
		}
		return uids
	}
	var lost []string // attempts whose job only the primary has
	waitFor(t, 10*time.Second, "jobs waiting on the primary alone", func() bool {
		mu.Lock()
		all := blocked == concurrency
		mu.Unlock()
		if !all {
			return false
		}
		lost = lost[:0]
		onReplica := jobs(replicaC)
		for uid := range jobs(primaryC) {
			if !onReplica[uid] {
				lost = append(lost, uid)
			}
		}
		return len(lost) >= n/10
	})
	primary.kill()
	killedAt := time.Now()
	waitFor(t, 20*time.Second, "the replica's promotion", func() bool {
		addr, err := sentinelC.GetMasterAddrByName(ctx, master).Result()
		return err == nil && addr[1] == strconv.Itoa(replica.port)
	})
	promotedAt := time.Now()
	release()

	// Work resumes on the new primary.
	waitFor(t, 30*time.Second, "every model to succeed in an attempt started after the promotion", func() bool {
		require.True(t, p.running(), "serve exited:\n%s", p.log.tail(20))
		require.Zero(t, stuck(promotedAt), "models running past their deadline (or the promotion) plus %s", margin)
		return succeededSince(promotedAt) == n
	})
	recovered := time.Now()
	waitFor(t, 10*time.Second, "/readyz to answer 200", p.ready)
	require.True(t, p.running())

	// The loss: every attempt whose job only the primary had timed out;
	// every attempt that timed out was running after the barrier and
	// started before the promotion (its job or outcome was on the primary
	// alone), and was retried by policy.
	timedOut := e.count(`SELECT count(*) FROM attempts WHERE outcome = 'timeout'`)
	require.Equal(t, len(lost), e.count(`SELECT count(*) FROM attempts WHERE uid = ANY($1) AND outcome = 'timeout'`, lost),
		"attempts whose job was on the primary alone that timed out")
	require.Zero(t, e.count(`SELECT count(*) FROM attempts WHERE outcome = 'timeout'
		AND (deadline_at <= $1 OR started_at >= $2)`, barrierAt, promotedAt),
		"attempts timed out that ended before the barrier or started after the promotion")
	require.Zero(t, e.count(`SELECT count(*) FROM attempt_history WHERE outcome = 'timeout' AND decision IS DISTINCT FROM 'retry'`),
		"timeouts not retried at once")
	require.Zero(t, e.count(`SELECT count(*) FROM attempts WHERE outcome NOT IN ('success', 'timeout')`),
		"attempts that ended otherwise than by success or timeout")
	require.Zero(t, e.count(`SELECT count(*) FROM models WHERE disabled_at IS NOT NULL`))
	e.checkNoOverlap()
	mu.Lock()
	total := handled
	mu.Unlock()
	t.Logf("primary killed %s after the load began, %d jobs waiting on it alone; promoted after %s; every model succeeded again %s after the kill; "+
		"%d attempts timed out (lost with the primary); latest an attempt ran past max(deadline, promotion): %s; %d jobs handled",
		killedAt.Sub(loadedAt).Round(time.Millisecond), len(lost), promotedAt.Sub(killedAt).Round(time.Millisecond),
		recovered.Sub(killedAt).Round(time.Millisecond), timedOut,
		time.Duration(maxLate*float64(time.Second)).Round(time.Millisecond), total)
	p.stop()
}
