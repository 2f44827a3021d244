package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// statementsView returns the pg_stat_statements view to count statements
// with, creating the extension in schema if the server preloads it and no
// schema of the database has it yet (it then goes with the schema), or ""
// and why statements cannot be counted.
func statementsView(ctx context.Context, conn *pgx.Conn, schema string) (view, why string) {
	var nsp string
	err := conn.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_stat_statements'`).Scan(&nsp)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var preload string
		if err := conn.QueryRow(ctx, `SELECT current_setting('shared_preload_libraries')`).Scan(&preload); err != nil {
			return "", err.Error()
		}
		if !strings.Contains(preload, "pg_stat_statements") {
			return "", "pg_stat_statements is not in shared_preload_libraries"
		}
		if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return "", fmt.Sprintf("create extension pg_stat_statements: %v", err)
		}
		nsp = schema
	case err != nil:
		return "", err.Error()
	}
	view = pgx.Identifier{nsp, "pg_stat_statements"}.Sanitize()
	if _, err := statements(ctx, conn, view); err != nil {
		return "", err.Error()
	}
	return view, ""
}

// statements returns how many statements the database of conn has run, as
// pg_stat_statements counts them.
func statements(ctx context.Context, conn *pgx.Conn, view string) (int64, error) {
	var n int64
	err := conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM `+view+`
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	return n, err
}

// transactions returns how many transactions the database of conn has
// committed or rolled back (pg_stat_database). Backends report theirs when
// they go idle, at most once a second, and when they exit.
func transactions(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n int64
	err := conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database
		WHERE datname = current_database()`).Scan(&n)
	return n, err
}

// commandCalls returns how many times Redis has run each command (INFO
// commandstats), by lower-case command name ("evalsha", "client|setname").
func commandCalls(ctx context.Context, rdb *redis.Client) (map[string]int64, error) {
	info, err := rdb.InfoMap(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	return parseCommandStats(info["Commandstats"])
}

// parseCommandStats reads the lines of INFO commandstats, already split at
// their first colon: "cmdstat_get" -> "calls=2,usec=10,...".
func parseCommandStats(section map[string]string) (map[string]int64, error) {
	out := make(map[string]int64, len(section))
	for key, value := range section {
		name, ok := strings.CutPrefix(key, "cmdstat_")
		if !ok {
			continue
		}
		found := false
		for field := range strings.SplitSeq(value, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("INFO commandstats: %s: calls: %w", name, err)
				}
				out[name] = n
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("INFO commandstats: %s: no calls in %q", name, value)
		}
	}
	return out, nil
}

// commandsBetween returns the commands run between the counts before and
// after, less those the harness ran itself (own), leaving out commands not
// run.
func commandsBetween(before, after, own map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for name, n := range after {
		if d := n - before[name] - own[name]; d > 0 {
			out[name] = d
		}
	}
	return out
}
