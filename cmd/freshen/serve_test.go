package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/rrule"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeParseFlags(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://plain/db")
	t.Setenv("REDIS_URL", "redis://plain:6379/0")
	t.Setenv("FRESHEN_BATCH_SIZE", "50")
	t.Setenv("FRESHEN_REDIS_URL", "redis://prefixed:6379/1")

	m := NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--addr", "127.0.0.1:9999", "--max-sleep", "5s", "--log-level", "debug", "--migrate"}))
	c := m.Config
	require.Equal(t, "postgres://plain/db", c.DatabaseURL)  // plain variable
	require.Equal(t, "redis://prefixed:6379/1", c.RedisURL) // FRESHEN_ wins over plain
	require.Equal(t, 50, c.BatchSize)                       // from FRESHEN_BATCH_SIZE
	require.Equal(t, "127.0.0.1:9999", c.Addr)              // flag
	require.Equal(t, 5*time.Second, c.MaxSleep)
	require.Equal(t, slog.LevelDebug, c.LogLevel)
	require.True(t, c.Migrate)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, host, c.InstanceID, "the default instance id is the host name: stable across restarts")
	require.Equal(t, "freshen/"+host, c.Session.ApplicationName)
	require.Equal(t, queue.DefaultPrefix, c.RedisPrefix)
	require.Equal(t, postgres.DefaultSession().LockTimeout, c.Session.LockTimeout)

	// Every duration flag reads ISO 8601 too, from the command line and
	// from the environment.
	t.Setenv("FRESHEN_DB_LOCK_TIMEOUT", "PT2S")
	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--max-sleep", "PT30S", "--db-idle-in-transaction-timeout", "PT1.5S",
		"--http-idle-timeout", "P1D", "--http-request-timeout", "PT5S", "--db-statement-timeout", "0s", "--instance-id", "b-2"}))
	c = m.Config
	require.Equal(t, 30*time.Second, c.MaxSleep)
	require.Equal(t, 2*time.Second, c.Session.LockTimeout)
	require.Equal(t, 1500*time.Millisecond, c.Session.IdleInTransactionTimeout)
	require.Zero(t, c.Session.StatementTimeout)
	require.Equal(t, 24*time.Hour, c.HTTP.IdleTimeout)
	require.Equal(t, 5*time.Second, c.HTTP.RequestTimeout)
	require.Equal(t, "freshen/b-2", c.Session.ApplicationName)
	t.Setenv("FRESHEN_DB_LOCK_TIMEOUT", "")

	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--batch-size", "7", "--database-url", "postgres://flag/db"}))
	require.Equal(t, 7, m.Config.BatchSize)
	require.Equal(t, "postgres://flag/db", m.Config.DatabaseURL)
	require.Equal(t, refresh.DefaultLimits().MinInterval, m.Config.Limits.MinInterval)
	require.Equal(t, rrule.DefaultLimits, m.Config.Limits.Schedule)
	require.Equal(t, queue.DefaultConsumerTimeout, m.Config.ConsumerLease)

	// The memory limit follows the batch size and the heap floor, unless
	// it is set.
	for args, want := range map[string]int{
		"":                                    40,
		"--batch-size 1000":                   40,
		"--batch-size 2000":                   79,
		"--batch-size 2000 --memory-limit 64": 64,
		"--batch-size 2000 --memory-limit 0":  0,
		"--gc-min-heap 48":                    48,
	} {
		m = NewMain(io.Discard)
		require.NoError(t, m.ParseFlags(strings.Fields(args)), args)
		require.Equal(t, want, m.Config.MemoryLimitMiB, args)
	}
	t.Setenv("FRESHEN_MEMORY_LIMIT", "200")
	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--batch-size", "5000"}))
	require.Equal(t, 200, m.Config.MemoryLimitMiB, "set by its variable")
	t.Setenv("FRESHEN_MEMORY_LIMIT", "")

	// Every global limit is a flag; Redis Sentinel and Cluster take lists.
	t.Setenv("FRESHEN_MAX_SCHEDULE_RULES", "7")
	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags([]string{"--min-interval", "PT1S", "--max-payload-depth", "8", "--consumer-lease", "2s",
		"--redis-sentinel-master", "mymaster", "--redis-sentinel-addrs", "10.0.0.1:26379, 10.0.0.2:26379", "--redis-sentinel-password", "s3cret"}))
	c = m.Config
	require.Equal(t, time.Second, c.Limits.MinInterval)
	require.Equal(t, 8, c.Limits.MaxPayloadDepth)
	require.Equal(t, 7, c.Limits.Schedule.MaxRules)
	require.Equal(t, 2*time.Second, c.ConsumerLease)
	require.Equal(t, "mymaster", c.RedisSentinelMaster)
	require.Equal(t, []string{"10.0.0.1:26379", "10.0.0.2:26379"}, c.RedisSentinelAddrs)
	require.Equal(t, "a xxxxx b", m.redact.String("a s3cret b"), "the sentinel password is a secret")
	t.Setenv("FRESHEN_MAX_SCHEDULE_RULES", "")

	for args, want := range map[string]string{
		"--batch-size 0":                    "--batch-size: must be >= 1, got 0",
		"--log-level loud":                  `--log-level: must be debug, info, warn or error, got "loud"`,
		"--max-sleep 0s":                    "--max-sleep: must be > 0, got 0s",
		"--instance-id=":                    "--instance-id: must not be empty",
		"extra":                             `unexpected argument "extra"`,
		"--max-sleep forever":               `invalid value "forever" for flag -max-sleep`,
		"--max-sleep P1M":                   `invalid value "P1M" for flag -max-sleep`,
		"--db-lock-timeout -1s":             "--db-lock-timeout: must be >= 0, got -1s",
		"--http-read-timeout 0":             "--http-read-timeout: must be > 0, got 0s",
		"--http-max-conns 0":                "--http-max-conns: must be >= 1, got 0",
		"--http-response-mib 0":             "--http-response-mib: must be >= 1, got 0",
		"--max-retries 0":                   "--max-retries: must be > 0, got 0",
		"--min-timeout 2h --max-timeout 1h": "--min-timeout: must be <= --max-timeout (1h0m0s), got 2h0m0s",
		"--consumer-lease 0s":               "--consumer-lease: must be > 0, got 0s",
	} {
		err := NewMain(io.Discard).ParseFlags(strings.Fields(args))
		require.ErrorContains(t, err, want, args)
	}

	t.Setenv("DATABASE_URL", "")
	t.Setenv("REDIS_URL", "")
	t.Setenv("FRESHEN_REDIS_URL", "")
	err = NewMain(io.Discard).ParseFlags(nil)
	require.EqualError(t, err, "--database-url (or DATABASE_URL) and --redis-url (or REDIS_URL) must be set")
}

// TestServe runs freshen serve against the real servers: a model created
// through the API with trigger is run by a Go worker, and the model then
// shows its success.
func TestServe(t *testing.T) {
	dbURL, redisURL := os.Getenv("DATABASE_URL"), os.Getenv("REDIS_URL")
	if dbURL == "" || redisURL == "" {
		t.Skip("DATABASE_URL and REDIS_URL are not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	suffix := randomHex(t)

	// A schema and a Redis prefix of the test's own.
	schema := "serve_" + suffix
	execSQL(t, dbURL, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { execSQL(t, dbURL, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", "freshen-"+suffix)
	u.RawQuery = q.Encode()
	prefix := "serve-test-" + suffix
	ru, err := url.Parse(redisURL)
	require.NoError(t, err)
	rq := ru.Query()
	rq.Set("client_name", "freshen-"+suffix)
	ru.RawQuery = rq.Encode()

	logs := &syncBuffer{}
	m := NewMain(logs)
	applied := make(chan refresh.ConsumeResult, 100)
	m.AppliedFunc = func(res refresh.ConsumeResult, err error) {
		if err == nil && res.Received > 0 {
			applied <- res
		}
	}
	require.NoError(t, m.ParseFlags([]string{"--database-url", u.String(), "--redis-url", ru.String(), "--redis-prefix", prefix,
		"--addr", "127.0.0.1:0", "--migrate", "--instance-id", "serve-test", "--log-level", "debug"}))
	require.NoError(t, m.Run(ctx))
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close()
		}
	})
	base := "http://" + m.Addr()

	// A worker that succeeds.
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	client := redis.NewClient(opt)
	t.Cleanup(func() {
		keys, _ := client.Keys(ctx, prefix+":*").Result()
		if len(keys) > 0 {
			client.Del(ctx, keys...)
		}
		_ = client.Close()
	})
	ran := make(chan queue.Job, 10)
	worker, err := queue.NewWorker(client, queue.WorkerOptions{Prefix: prefix, Queue: "thumbnails", Block: 100 * time.Millisecond},
		func(ctx context.Context, job queue.Job) error {
			ran <- job
			return nil
		})
	require.NoError(t, err)
	workerCtx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- worker.Run(workerCtx) }()
	t.Cleanup(func() {
		stopWorker()
		<-workerDone
	})

	code, body := request(t, "GET", base+"/healthz", "")
	require.Equal(t, http.StatusOK, code, body)

	code, body = request(t, "PUT", base+"/models/thumb-1", `{"queue": "thumbnails", "payload": {"image": "cat.png"}, "trigger": true}`)
	require.Equal(t, http.StatusCreated, code, body)

	job := <-ran
	require.Equal(t, "thumb-1", job.ModelID)
	require.JSONEq(t, `{"image": "cat.png"}`, string(job.Payload))
	waitApplied(applied)

	code, body = request(t, "GET", base+"/models/thumb-1", "")
	require.Equal(t, http.StatusOK, code, body)
	require.NotNil(t, body["last_success_at"], body)
	require.Nil(t, body["attempt_uid"])
	require.Equal(t, 0.0, body["consecutive_failures"])

	// Lost connections are survived: every connection serve holds to
	// PostgreSQL (pool and LISTEN) and to Redis is killed, and a trigger
	// still runs the model again.
	execSQL(t, dbURL, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'freshen-"+suffix+"'")
	killRedisClients(t, client, "freshen-"+suffix)
	for try := 0; ; try++ {
		// The first request may meet a dead pooled connection.
		code, body = request(t, "POST", base+"/models/thumb-1/trigger", "")
		if code == http.StatusOK || try == 5 {
			break
		}
	}
	require.Equal(t, http.StatusOK, code, body)
	job = <-ran
	require.Equal(t, "thumb-1", job.ModelID)
	waitApplied(applied)

	code, body = request(t, "GET", base+"/models/thumb-1/attempts", "")
	require.Equal(t, http.StatusOK, code, body)
	attempts := body["attempts"].([]any)
	require.Len(t, attempts, 2)
	require.Equal(t, "success", attempts[0].(map[string]any)["outcome"])
	require.Equal(t, "success", attempts[1].(map[string]any)["outcome"])

	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(text), "freshen_attempts_succeeded_total 2")
	require.Contains(t, string(text), `freshen_queue_jobs_pushed_total{consumer="serve-test"} 2`)

	require.NoError(t, m.Close())
	closed = true
	_, err = http.Get(base + "/healthz")
	require.Error(t, err)
	require.Contains(t, logs.String(), `"msg":"serving"`)
}

// waitApplied waits for a consumer pass that applied an outcome.
func waitApplied(applied <-chan refresh.ConsumeResult) {
	for res := range applied {
		if res.Applied > 0 {
			return
		}
	}
}

// killRedisClients closes the connections of the Redis clients named name.
func killRedisClients(t *testing.T, client *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	list, err := client.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] != name {
			continue
		}
		require.NoError(t, client.Do(ctx, "CLIENT", "KILL", "ID", fields["id"]).Err())
		killed++
	}
	require.NotZero(t, killed)
}

func request(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}
