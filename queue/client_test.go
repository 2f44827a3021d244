package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestNewClientErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  ClientConfig
		err  string
	}{
		{"nothing", ClientConfig{}, "redis: url: must not be empty without sentinel_master or cluster_addrs"},
		{"both", ClientConfig{SentinelMaster: "m", SentinelAddrs: []string{"h:26379"}, ClusterAddrs: []string{"h:7000"}},
			"redis: sentinel_master and cluster_addrs: set only one of them"},
		{"master without sentinels", ClientConfig{SentinelMaster: "m"}, "redis: sentinel_addrs: must not be empty with sentinel_master"},
		{"sentinels without master", ClientConfig{SentinelAddrs: []string{"h:26379"}}, "redis: sentinel_master: must not be empty with sentinel_addrs"},
		{"sentinel password alone", ClientConfig{URL: "redis://h:6379", SentinelPassword: "pw"}, "redis: sentinel_password: needs sentinel_master and sentinel_addrs"},
		{"bad sentinel address", ClientConfig{SentinelMaster: "m", SentinelAddrs: []string{"h:26379", "h"}}, `redis: sentinel_addrs[1]: must be host:port, got "h"`},
		{"bad cluster address", ClientConfig{ClusterAddrs: []string{":7000"}}, `redis: cluster_addrs[0]: must be host:port, got ":7000"`},
		{"scheme", ClientConfig{URL: "http://h:6379"}, "redis: url: invalid URL scheme: http"},
		{"unparsable, password not repeated", ClientConfig{URL: "redis://u:secret@h:6379/%zz"}, `redis: url: invalid URL escape "%zz"`},
		{"option", ClientConfig{URL: "redis://h:6379?speed=fast"}, "redis: url: unexpected option: speed"},
		{"host with sentinels", ClientConfig{URL: "redis://h:6379", SentinelMaster: "m", SentinelAddrs: []string{"s:26379"}},
			`redis: url: must have no host with sentinel_master or cluster_addrs, got "h:6379"`},
		{"database on a cluster", ClientConfig{URL: "redis:///2", ClusterAddrs: []string{"h:7000"}}, "redis: url: database must be 0 with cluster_addrs, got 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg)
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestNewClientModes(t *testing.T) {
	t.Parallel()
	c, err := NewClient(ClientConfig{URL: "rediss://u:pw@h:6380/3?dial_timeout=2s&max_retries=5"})
	require.NoError(t, err)
	single := c.(*redis.Client).Options()
	require.Equal(t, 0, single.MaxRetries, "no command is sent again, whatever the URL says (-1 set, 0 once the client holds it)")
	require.Equal(t, "h:6380", single.Addr)
	require.Equal(t, 3, single.DB)
	require.NotNil(t, single.TLSConfig)

	c, err = NewClient(ClientConfig{URL: "redis://u:pw@/3?dial_timeout=2s", SentinelMaster: "m",
		SentinelAddrs: []string{"s1:26379", "s2:26379"}, SentinelPassword: "spw"})
	require.NoError(t, err)
	failover := c.(*redis.Client).Options() // follows the primary through the Sentinels
	require.Equal(t, "u", failover.Username)
	require.Equal(t, "pw", failover.Password)
	require.Equal(t, 3, failover.DB)
	require.Equal(t, 2*time.Second, failover.DialTimeout)
	require.Equal(t, 0, failover.MaxRetries)

	c, err = NewClient(ClientConfig{URL: "redis://:pw@?read_timeout=4s", ClusterAddrs: []string{"n1:7000", "n2:7000"}})
	require.NoError(t, err)
	cluster := c.(*redis.ClusterClient).Options()
	require.Equal(t, []string{"n1:7000", "n2:7000"}, cluster.Addrs)
	require.Equal(t, "pw", cluster.Password)
	require.Equal(t, 4*time.Second, cluster.ReadTimeout)
	require.Equal(t, 0, cluster.MaxRedirects, "no command is sent again")
	c, err = NewClient(ClientConfig{ClusterAddrs: []string{"n1:7000"}})
	require.NoError(t, err)
	require.IsType(t, &redis.ClusterClient{}, c)
}

// TestWarnRetries: a consumer on a client that sends commands again on its
// own is worth a warning; on one from NewClient it is not.
func TestWarnRetries(t *testing.T) {
	t.Parallel()
	ours, err := NewClient(ClientConfig{URL: "redis://h:6379"})
	require.NoError(t, err)
	cluster, err := NewClient(ClientConfig{ClusterAddrs: []string{"n1:7000"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		warn   bool
	}{
		{"NewClient", ours, false},
		{"NewClient, cluster", cluster, false},
		{"go-redis default", redis.NewClient(&redis.Options{Addr: "h:6379"}), true},
		{"go-redis cluster default", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"n1:7000"}}), true},
		{"MaxRetries -1", redis.NewClient(&redis.Options{Addr: "h:6379", MaxRetries: -1}), false},
	} {
		var logs bytes.Buffer
		_, err := New(tc.client, Options{Consumer: "c", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		if tc.warn {
			require.Equal(t, 1, strings.Count(logs.String(), "sends a command again"), tc.name)
		} else {
			require.Empty(t, logs.String(), tc.name)
		}
	}
}

func TestNewClientConnects(t *testing.T) {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Skip("REDIS_URL not set")
	}
	t.Parallel()
	c, err := NewClient(ClientConfig{URL: url})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Ping(context.Background()).Err())
}

func TestRedisLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := redisLogger{log: slog.New(slog.NewJSONHandler(&buf, nil)).With("component", "go-redis")}
	l.Printf(context.Background(), "redis: connection pool: failed to dial %s\n", "h:6379")
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	delete(line, "time")
	require.Equal(t, map[string]any{"level": "WARN", "msg": "connection pool: failed to dial h:6379", "component": "go-redis"}, line)
}
