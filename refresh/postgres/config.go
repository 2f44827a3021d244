package postgres

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Session holds the PostgreSQL settings that Open gives every connection of
// its pool (sent as run-time parameters when the connection starts, so
// they cost no round trip). They bound how long one stalled or lost client
// can hold up the others. A zero field leaves the setting to the
// connection string, then the server.
type Session struct {
	// ApplicationName names the connections in pg_stat_activity, unless
	// the connection string sets application_name.
	ApplicationName string
	// LockTimeout is lock_timeout: the longest a statement waits for a lock
	// (a row another transaction holds) before it fails with an
	// *refresh.Error of code EUNAVAILABLE.
	LockTimeout time.Duration
	// StatementTimeout is statement_timeout: the longest one statement may
	// run, its lock waits included.
	StatementTimeout time.Duration
	// IdleInTransactionTimeout is idle_in_transaction_session_timeout: the
	// server ends the session of a client that stays this long inside a
	// transaction without sending anything (a process stopped in the middle
	// of a pass), which releases the locks it held.
	IdleInTransactionTimeout time.Duration
	// KeepAlive turns on TCP keepalives on both ends of every connection:
	// the first probe goes after KeepAlive of silence, then one every
	// KeepAlive/3 (at least a second), and the peer is given up after three
	// unanswered probes. A half-open connection (the peer's host vanished
	// without closing it) is thus noticed within about 2×KeepAlive, by the
	// client (on its socket) and by the server (tcp_keepalives_idle,
	// tcp_keepalives_interval, tcp_keepalives_count).
	KeepAlive time.Duration
	// MaxConns, if above pgx's default (the larger of 4 and the number of
	// CPUs), is the most connections the pool opens, unless the connection
	// string sets pool_max_conns.
	MaxConns int32
}

// DefaultSession returns the settings freshen serve starts with: locks
// waited for at most 10s, statements run at most 30s, a session idle in a
// transaction for 5s ended, keepalives after 15s of silence (a dead peer
// found within about 30s).
//
// The idle-in-transaction timeout is below the lock timeout on purpose: a
// write waiting on a row that a stopped instance holds gets it once the
// server has ended that instance's session, instead of failing.
func DefaultSession() Session {
	return Session{
		LockTimeout:              10 * time.Second,
		StatementTimeout:         30 * time.Second,
		IdleInTransactionTimeout: 5 * time.Second,
		KeepAlive:                15 * time.Second,
	}
}

// keepAliveProbes is the number of unanswered keepalive probes after which
// a peer is given up.
const keepAliveProbes = 3

// ParseConfig parses url (a postgres:// URL or key=value string) into a pool
// configuration with the settings of s. Its errors never show a password.
func ParseConfig(url string, s Session) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx masks the password of the string it cannot parse.
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if s.MaxConns > cfg.MaxConns && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = s.MaxConns
	}
	params := cfg.ConnConfig.RuntimeParams
	if s.ApplicationName != "" && params["application_name"] == "" {
		params["application_name"] = s.ApplicationName
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	if s.LockTimeout > 0 {
		params["lock_timeout"] = ms(s.LockTimeout)
	}
	if s.StatementTimeout > 0 {
		params["statement_timeout"] = ms(s.StatementTimeout)
	}
	if s.IdleInTransactionTimeout > 0 {
		params["idle_in_transaction_session_timeout"] = ms(s.IdleInTransactionTimeout)
	}
	if s.KeepAlive > 0 {
		idle, interval := keepAliveTimes(s.KeepAlive)
		secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
		params["tcp_keepalives_idle"] = secs(idle)
		params["tcp_keepalives_interval"] = secs(interval)
		params["tcp_keepalives_count"] = strconv.Itoa(keepAliveProbes)
		d := &net.Dialer{
			Timeout: cfg.ConnConfig.ConnectTimeout,
			KeepAliveConfig: net.KeepAliveConfig{
				Enable: true, Idle: idle, Interval: interval, Count: keepAliveProbes,
			},
		}
		cfg.ConnConfig.DialFunc = d.DialContext
	}
	return cfg, nil
}

// keepAliveTimes returns the idle time and probe interval of keepalive k, in
// whole seconds (the server counts in seconds), at least one each.
func keepAliveTimes(k time.Duration) (idle, interval time.Duration) {
	idle = max(k.Truncate(time.Second), time.Second)
	interval = max((k / 3).Truncate(time.Second), time.Second)
	return idle, interval
}
