package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Session holds the settings of a Store's database connections. The
// PostgreSQL settings (the timeouts) are set by each transaction for itself
// (set_config(..., true), as SET LOCAL), never for a server session and
// never at connection: a pooler in transaction mode gives consecutive
// transactions of one client different server sessions, and refuses
// settings sent at connection. They bound how long one stalled or lost
// client can hold up the others. A zero field sets nothing, which leaves
// the setting to the server (or the role's or database's own).
type Session struct {
	// ApplicationName names the connections in pg_stat_activity, unless
	// the connection string sets application_name (which poolers pass on
	// to the server session of each transaction).
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
	// KeepAlive turns on TCP keepalives on the client's socket of every
	// connection: the first probe goes after KeepAlive of silence, then one
	// every KeepAlive/3 (at least a second), and the peer is given up after
	// three unanswered probes, so that a half-open connection (the server's
	// host, or a pooler's, vanished without closing it) is noticed within
	// about 2×KeepAlive. The server does not need its own: a client lost
	// inside a transaction is ended by IdleInTransactionTimeout, or by
	// StatementTimeout while a statement runs, and one lost outside a
	// transaction holds no lock.
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

// settingsSQL returns the statement that sets the timeouts of s for the
// transaction it runs in, or "" if s sets none. It is one statement
// without arguments, the same for every transaction, so that it can be
// sent in any exec mode and ahead of any other statement.
func (s Session) settingsSQL() string {
	var sets []string
	set := func(name string, d time.Duration) {
		if d > 0 {
			sets = append(sets, fmt.Sprintf("set_config('%s', '%d', true)", name, d.Milliseconds()))
		}
	}
	set("lock_timeout", s.LockTimeout)
	set("statement_timeout", s.StatementTimeout)
	set("idle_in_transaction_session_timeout", s.IdleInTransactionTimeout)
	if len(sets) == 0 {
		return ""
	}
	return "SELECT " + strings.Join(sets, ", ")
}

// keepAliveProbes is the number of unanswered keepalive probes after which
// a peer is given up.
const keepAliveProbes = 3

// DefaultExecMode is how the pool's connections send statements, unless
// the connection string sets default_query_exec_mode: each statement is
// parsed as the unnamed statement, in the round trip that runs it, with its
// arguments in text form, and the client caches nothing of it. No named
// prepared statement outlives its transaction, which a pooler in
// transaction mode needs, at no extra round trip: see docs/deployment.md
// (Poolers) for what each mode cost.
const DefaultExecMode = pgx.QueryExecModeExec

// ParseConfig parses url (a postgres:// URL or key=value string) into a pool
// configuration with the settings of s. Its connections send no setting at
// connection but application_name and those of the connection string, and
// no named prepared statement (DefaultExecMode). Its errors never show a
// password.
func ParseConfig(url string, s Session) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx masks the password of the string it cannot parse.
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if s.MaxConns > cfg.MaxConns && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = s.MaxConns
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = DefaultExecMode
	}
	// pgx makes a cache of statements and one of descriptions on every
	// connection, 512 entries each, which these two modes never use.
	if m := cfg.ConnConfig.DefaultQueryExecMode; m == pgx.QueryExecModeExec || m == pgx.QueryExecModeSimpleProtocol {
		cfg.ConnConfig.StatementCacheCapacity, cfg.ConnConfig.DescriptionCacheCapacity = 0, 0
	}
	cfg.AfterConnect = registerTypes
	params := cfg.ConnConfig.RuntimeParams
	if s.ApplicationName != "" && params["application_name"] == "" {
		params["application_name"] = s.ApplicationName
	}
	if s.KeepAlive > 0 {
		idle, interval := keepAliveTimes(s.KeepAlive)
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

// registerTypes names the PostgreSQL type of a []byte argument on conn,
// for the exec modes that send arguments without asking the server for
// their types (exec, the default, and simple_protocol): text (JSON the
// store wrote), not bytea; no column of the schema is bytea. The store's
// arrays are sent as text already (arrayText).
func registerTypes(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	m.RegisterDefaultPgType([]byte{}, "text")
	return nil
}

// RefusedSetting returns the name of the setting that err, an error of
// connecting, says the server refused at connection (a pooler's
// "unsupported startup parameter"), and false if err is not that.
func RefusedSetting(err error) (string, bool) {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "08P01" {
		return "", false
	}
	name, ok := strings.CutPrefix(pg.Message, "unsupported startup parameter: ")
	return strings.TrimSpace(name), ok
}

// keepAliveTimes returns the idle time and probe interval of keepalive k, in
// whole seconds (the server counts in seconds), at least one each.
func keepAliveTimes(k time.Duration) (idle, interval time.Duration) {
	idle = max(k.Truncate(time.Second), time.Second)
	interval = max((k / 3).Truncate(time.Second), time.Second)
	return idle, interval
}
