package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts redis-server with args in dir and stops it (SIGKILL)
// at the test's end if it still runs.
func startServer(t *testing.T, bin, dir string, args ...string) *exec.Cmd {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	log, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Logf("log of %s:\n%s", dir, b)
		}
	})
	return cmd
}

// within tries f every 50ms until it succeeds or d has passed.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("%s: not within %s: %v", what, d, err)
		case <-tick.C:
		}
	}
}

// syncBuffer is a buffer log lines are written to from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFailover runs jobs and outcomes through a primary, a replica and a
// Sentinel, kills the primary under load, and checks that work resumes on
// the promoted replica and that nothing is lost but what asynchronous
// replication had not carried yet.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis servers")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	pPort, rPort, sPort := freePort(t), freePort(t), freePort(t)
	common := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	primary := startServer(t, bin, filepath.Join(dir, "primary"), append([]string{"--port", strconv.Itoa(pPort)}, common...)...)
	startServer(t, bin, filepath.Join(dir, "replica"), append([]string{"--port", strconv.Itoa(rPort),
		"--replicaof", "127.0.0.1", strconv.Itoa(pPort)}, common...)...)
	sdir := filepath.Join(dir, "sentinel")
	require.NoError(t, os.MkdirAll(sdir, 0o755))
	conf := filepath.Join(sdir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bind 127.0.0.1
sentinel monitor fo 127.0.0.1 %d 1
sentinel down-after-milliseconds fo 500
sentinel failover-timeout fo 5000
`, sPort, pPort)), 0o644))
	startServer(t, bin, sdir, conf, "--sentinel")

	direct := func(port int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	primaryC, sentinelC := direct(pPort), redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", sPort)})
	t.Cleanup(func() { _ = sentinelC.Close() })
	within(t, 15*time.Second, "replica in sync and known to the sentinel", func() error {
		info, err := primaryC.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "state=online") {
			return errors.New("replica not online")
		}
		replicas, err := sentinelC.Replicas(ctx, "fo").Result()
		if err != nil {
			return err
		}
		if len(replicas) != 1 || replicas[0]["flags"] != "slave" {
			return fmt.Errorf("sentinel sees replicas %v", replicas)
		}
		return nil
	})

	logs := &syncBuffer{}
	SetRedisLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	client, err := NewClient(ClientConfig{URL: "redis://?dial_timeout=300ms&read_timeout=1s&write_timeout=1s",
		SentinelMaster: "fo", SentinelAddrs: []string{fmt.Sprintf("127.0.0.1:%d", sPort)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })

	const prefix = "fo"
	clock := refresh.SystemClock{}
	q, err := New(client, Options{Prefix: prefix, Consumer: "c1", Clock: clock, Logger: quiet})
	require.NoError(t, err)
	worker, err := NewWorker(client, WorkerOptions{Prefix: prefix, Queue: "q", Concurrency: 4, Block: 200 * time.Millisecond,
		Clock: clock, Logger: quiet}, func(context.Context, Job) error { return nil })
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var loops sync.WaitGroup
	t.Cleanup(func() {
		stop()
		loops.Wait()
	})
	loops.Go(func() { _ = worker.Run(runCtx) })
	loops.Go(func() { _ = q.Heartbeat(runCtx) })

	// The consumer: records which models' outcomes arrived.
	var mu sync.Mutex
	done := map[string]bool{}
	var lastRecvErr time.Time
	loops.Go(func() {
		for runCtx.Err() == nil {
			outs, err := q.Receive(runCtx, 100, 200*time.Millisecond)
			if err == nil {
				err = q.Ack(runCtx, nil)
			}
			mu.Lock()
			for _, o := range outs {
				done[o.ModelID] = true
			}
			if err != nil {
				lastRecvErr = time.Now()
			}
			mu.Unlock()
			if err != nil {
				select {
				case <-runCtx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	})

	// The scheduler's side: pushes jobs one by one, recording those Redis
	// acknowledged.
	var confirmed []string
	phase := 0 // 0 before the replication barrier, 1 after it, 2 after promotion
	byPhase := [3][]string{}
	pushStop := make(chan struct{})
	pushed := make(chan struct{})
	loops.Go(func() {
		defer close(pushed)
		for i := 0; ; i++ {
			select {
			case <-pushStop:
				return
			default:
			}
			id := fmt.Sprintf("m%05d", i)
			now := time.Now()
			err := q.Push(runCtx, []refresh.Job{{ModelID: id, AttemptUID: "u" + id, AttemptNo: 1, Queue: "q",
				StartedAt: now, DeadlineAt: now.Add(time.Hour)}})
			mu.Lock()
			if err == nil {
				confirmed = append(confirmed, id)
				byPhase[phase] = append(byPhase[phase], id)
			}
			mu.Unlock()
			if err != nil {
				select {
				case <-pushStop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	})
	count := func(ids []string) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if done[id] {
				n++
			}
		}
		return n
	}
	within(t, 10*time.Second, "load", func() error {
		mu.Lock()
		n := len(confirmed)
		mu.Unlock()
		if n < 2000 {
			return fmt.Errorf("%d jobs pushed", n)
		}
		return nil
	})

	// Replication barrier: a write on the primary, then WAIT until the
	// replica has it, so everything confirmed before it is on the replica.
	mu.Lock()
	phase = 1
	mu.Unlock()
	require.NoError(t, primaryC.Set(ctx, prefix+":barrier", "1", 0).Err())
	acked, err := primaryC.Wait(ctx, 1, 2*time.Second).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, acked)
	require.NoError(t, primary.Process.Signal(syscall.SIGKILL))
	killedAt := time.Now()

	within(t, 20*time.Second, "promotion", func() error {
		addr, err := sentinelC.GetMasterAddrByName(ctx, "fo").Result()
		if err != nil {
			return err
		}
		if addr[1] != strconv.Itoa(rPort) {
			return fmt.Errorf("master is %v", addr)
		}
		return nil
	})
	promotedAt := time.Now()
	mu.Lock()
	phase = 2
	mu.Unlock()
	within(t, 10*time.Second, "jobs pushed after promotion", func() error {
		mu.Lock()
		n := len(byPhase[2])
		mu.Unlock()
		if n < 500 {
			return fmt.Errorf("%d jobs pushed", n)
		}
		return nil
	})
	close(pushStop)
	<-pushed

	mu.Lock()
	before, between, after := byPhase[0], byPhase[1], byPhase[2]
	mu.Unlock()
	within(t, 15*time.Second, "outcomes of the jobs confirmed before the barrier and after promotion", func() error {
		if n := count(before); n < len(before) {
			return fmt.Errorf("%d of %d before the barrier", n, len(before))
		}
		if n := count(after); n < len(after) {
			return fmt.Errorf("%d of %d after promotion", n, len(after))
		}
		return nil
	})
	lost := len(between) - count(between)
	t.Logf("jobs confirmed: %d before the replication barrier, %d between it and the promotion (%d lost), %d after; primary killed %s, promoted after %s",
		len(before), len(between), lost, len(after), killedAt.Format(time.StampMilli), promotedAt.Sub(killedAt).Round(time.Millisecond))

	// Nothing keeps failing: a new job goes round at once.
	mu.Lock()
	lastErr := lastRecvErr
	mu.Unlock()
	require.True(t, lastErr.Before(promotedAt.Add(5*time.Second)), "receive failed %s after promotion", lastErr.Sub(promotedAt))
	now := time.Now()
	require.NoError(t, q.Push(ctx, []refresh.Job{{ModelID: "last", AttemptUID: "ulast", Queue: "q", StartedAt: now, DeadlineAt: now.Add(time.Hour)}}))
	within(t, 5*time.Second, "a job after the failover", func() error {
		if count([]string{"last"}) == 0 {
			return errors.New("no outcome yet")
		}
		return nil
	})
	require.Contains(t, logs.String(), `"msg":"sentinel: new master=`, "go-redis logs through slog")
}
