package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// t0 is the virtual clock's start in tests.
var t0 = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.DiscardHandler)

// backend is a Redis to test against, with a prefix of its own so tests can
// share a real server.
type backend struct {
	client redis.UniversalClient
	prefix string
	keys   keys
}

// eachBackend runs f against miniredis and, when REDIS_URL is set, against
// that real Redis.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		f(t, newMini(t))
	})
	t.Run("redis", func(t *testing.T) {
		url := os.Getenv("REDIS_URL")
		if url == "" {
			t.Skip("REDIS_URL not set")
		}
		t.Parallel()
		f(t, newReal(t, url))
	})
}

func newMini(tb testing.TB) backend {
	mr := miniredis.RunT(tb)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1}) // as NewClient
	tb.Cleanup(func() { _ = client.Close() })
	return newBackend(client)
}

// newReal connects to url and deletes the test's keys when it ends.
func newReal(tb testing.TB, url string) backend {
	opt, err := redis.ParseURL(url)
	require.NoError(tb, err)
	opt.MaxRetries = -1 // as NewClient
	client := redis.NewClient(opt)
	require.NoError(tb, client.Ping(context.Background()).Err())
	b := newBackend(client)
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, b.prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		_ = client.Close()
	})
	return b
}

func newBackend(client redis.UniversalClient) backend {
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	prefix := "test" + hex.EncodeToString(buf)
	return backend{client: client, prefix: prefix, keys: newKeys(prefix)}
}

// newRedis returns a Redis on b for consumer.
func (b backend) newRedis(t testing.TB, consumer string, clock refresh.Clock) *Redis {
	r, err := New(b.client, Options{Prefix: b.prefix, Consumer: consumer, Clock: clock, Logger: quiet})
	require.NoError(t, err)
	return r
}

// newSmallRedis is newRedis with messages of at most 1 KiB
// (Limits.MaxBytes), so that the bounds in bytes show with small messages.
func (b backend) newSmallRedis(t testing.TB, consumer string) *Redis {
	r, err := New(b.client, Options{Prefix: b.prefix, Consumer: consumer, Clock: refresh.NewVirtualClock(t0), Logger: quiet,
		Limits: Limits{MaxBytes: 1024}})
	require.NoError(t, err)
	return r
}

// lrange returns the whole list key, left to right.
func (b backend) lrange(t testing.TB, key string) []string {
	v, err := b.client.LRange(context.Background(), key, 0, -1).Result()
	require.NoError(t, err)
	return v
}

// lpush pushes raw messages onto key, as a worker in any language would.
func (b backend) lpush(t testing.TB, key string, msgs ...string) {
	args := make([]any, len(msgs))
	for i, m := range msgs {
		args[i] = m
	}
	require.NoError(t, b.client.LPush(context.Background(), key, args...).Err())
}

// redisZ is a heartbeat entry: member seen at at.
func redisZ(at time.Time, member string) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: member}
}
