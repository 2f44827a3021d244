package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ClientConfig says how to reach Redis: a single server, a primary watched
// by Redis Sentinel (the client follows it across failovers), or a Redis
// Cluster. Exactly one of URL alone, SentinelMaster with SentinelAddrs, or
// ClusterAddrs names the servers.
type ClientConfig struct {
	// URL is a server's URL as redis.ParseURL reads it:
	// redis://[[user]:password@]host[:port][/db][?dial_timeout=3s&...], or
	// rediss:// for TLS. With SentinelMaster or ClusterAddrs it has no host
	// (e.g. rediss://:password@/0) and gives the credentials, database, TLS
	// and options of the data nodes.
	URL string
	// SentinelMaster is the name the Sentinels know the primary by.
	SentinelMaster string
	// SentinelAddrs are the Sentinels' host:port addresses.
	SentinelAddrs []string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels
	// (which may differ from the data nodes' credentials, in URL).
	SentinelUsername string
	SentinelPassword string
	// ClusterAddrs are host:port addresses of some nodes of a Redis
	// Cluster; the others are discovered.
	ClusterAddrs []string
}

// NewClient returns a client for cfg, or an error naming the field at
// fault. It does not connect: the first command does.
//
// The client never sends a command again on its own (MaxRetries -1, and
// MaxRedirects -1 for a cluster, whatever the URL says): after a reply
// lost on the wire, the command may well have run, and the scripts that
// move messages must not run twice. Their callers see the error and put
// things right (see Redis.Receive).
func NewClient(cfg ClientConfig) (redis.UniversalClient, error) {
	sentinel := cfg.SentinelMaster != "" || len(cfg.SentinelAddrs) > 0
	cluster := len(cfg.ClusterAddrs) > 0
	switch {
	case sentinel && cluster:
		return nil, errors.New("redis: sentinel_master and cluster_addrs: set only one of them")
	case !sentinel && !cluster && cfg.URL == "":
		return nil, errors.New("redis: url: must not be empty without sentinel_master or cluster_addrs")
	case !sentinel && (cfg.SentinelUsername != "" || cfg.SentinelPassword != ""):
		return nil, errors.New("redis: sentinel_password: needs sentinel_master and sentinel_addrs")
	case sentinel && cfg.SentinelMaster == "":
		return nil, errors.New("redis: sentinel_master: must not be empty with sentinel_addrs")
	case sentinel && len(cfg.SentinelAddrs) == 0:
		return nil, errors.New("redis: sentinel_addrs: must not be empty with sentinel_master")
	}
	if err := checkAddrs("sentinel_addrs", cfg.SentinelAddrs); err != nil {
		return nil, err
	}
	if err := checkAddrs("cluster_addrs", cfg.ClusterAddrs); err != nil {
		return nil, err
	}
	opt := &redis.Options{}
	if cfg.URL != "" {
		var err error
		if opt, err = parseURL(cfg.URL, sentinel || cluster); err != nil {
			return nil, err
		}
	}
	opt.MaxRetries = -1
	switch {
	case sentinel:
		u := universal(opt)
		u.MasterName, u.Addrs = cfg.SentinelMaster, cfg.SentinelAddrs
		u.SentinelUsername, u.SentinelPassword = cfg.SentinelUsername, cfg.SentinelPassword
		return redis.NewUniversalClient(u), nil
	case cluster:
		if opt.DB != 0 {
			return nil, fmt.Errorf("redis: url: database must be 0 with cluster_addrs, got %d", opt.DB)
		}
		u := universal(opt)
		u.Addrs, u.IsClusterMode = cfg.ClusterAddrs, true
		// A cluster client sends a command again after a network error
		// as often as it follows a redirection: never, either (a
		// redirection fails the command, and reloads the slots for the
		// next one).
		u.MaxRedirects = -1
		return redis.NewUniversalClient(u), nil
	}
	return redis.NewClient(opt), nil
}

// warnRetries logs a warning when the client of a consumer sends commands
// again on its own, as a go-redis client does unless MaxRetries (a
// cluster's MaxRedirects) is -1, which the client then holds as 0; it can
// tell for the client types whose options say. A script that moves
// messages, sent again after its reply was lost, runs twice, and what the
// first run moved then waits in the processing list, unseen, until an
// acknowledgement puts it right. (A Worker needs no warning: it reconciles
// its working list at every heartbeat, and gives back what it does not
// hold.)
func warnRetries(client redis.UniversalClient, log *slog.Logger) {
	retries := 0
	switch c := client.(type) {
	case *redis.Client:
		retries = c.Options().MaxRetries
	case *redis.ClusterClient:
		retries = c.Options().MaxRedirects // see NewClient
	default:
		return
	}
	if retries > 0 {
		log.Warn("the Redis client sends a command again after an error (MaxRetries, or a cluster's MaxRedirects, is not -1): a move of messages whose reply is lost may run twice; use queue.NewClient, or set it to -1")
	}
}

// parseURL reads a server's URL without repeating it in errors, since it
// may hold a password. Without a host (hostless), the URL only carries
// options.
func parseURL(raw string, hostless bool) (*redis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("redis: url: %v", err)
	}
	if hostless {
		if u.Host != "" {
			return nil, fmt.Errorf("redis: url: must have no host with sentinel_master or cluster_addrs, got %q", u.Host)
		}
		// redis.ParseURL needs a host; this one is not used.
		u.Host = "localhost"
		raw = u.String()
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("redis: url: %v", strings.TrimPrefix(err.Error(), "redis: "))
	}
	return opt, nil
}

// checkAddrs says which of addrs is not host:port.
func checkAddrs(field string, addrs []string) error {
	for i, a := range addrs {
		if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
			return fmt.Errorf("redis: %s[%d]: must be host:port, got %q", field, i, a)
		}
	}
	return nil
}

// universal carries the options of a server's URL over to a Sentinel or
// Cluster client.
func universal(o *redis.Options) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		ClientName:            o.ClientName,
		DB:                    o.DB,
		Protocol:              o.Protocol,
		Username:              o.Username,
		Password:              o.Password,
		MaxRetries:            o.MaxRetries,
		MinRetryBackoff:       o.MinRetryBackoff,
		MaxRetryBackoff:       o.MaxRetryBackoff,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		PoolFIFO:              o.PoolFIFO,
		PoolSize:              o.PoolSize,
		PoolTimeout:           o.PoolTimeout,
		MinIdleConns:          o.MinIdleConns,
		MaxIdleConns:          o.MaxIdleConns,
		MaxActiveConns:        o.MaxActiveConns,
		ConnMaxIdleTime:       o.ConnMaxIdleTime,
		ConnMaxLifetime:       o.ConnMaxLifetime,
		TLSConfig:             o.TLSConfig,
	}
}

// SetRedisLogger routes go-redis' own log lines (reconnections, Sentinel
// announcements, pool errors), which it otherwise prints as plain text on
// standard error, to log at level Warn, with the attribute
// component=go-redis. It sets a process-wide logger.
func SetRedisLogger(log *slog.Logger) {
	redis.SetLogger(redisLogger{log: log.With("component", "go-redis")})
}

// redisLogger is go-redis' logging interface over slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
	l.log.WarnContext(ctx, msg)
}
