package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// TestArrayTextRoundTrip sends arrays of every kind of element through
// PostgreSQL, in every exec mode, and reads the elements back.
func TestArrayTextRoundTrip(t *testing.T) {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	texts := []string{"", "NULL", "null", `a"b`, `c\d`, `\"`, "x,y", "{}", "{a,b}", " lead", "trail ", "tab\tnew\nline",
		"é 漢字 🙂", `"`, `\`, "(1,2)"}
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	times := []time.Time{
		time.Date(2026, 11, 28, 10, 27, 40, 123456789, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 999999999, paris),
		time.Date(0, 2, 29, 23, 59, 59, 1000, time.UTC), // 1 BC, a leap year
		time.Date(-44, 3, 15, 12, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Unix(0, 0),
	}
	ints := []int64{0, -1, 2147483647, -2147483648, 1 << 40}
	tids := []pgtype.TID{{BlockNumber: 0, OffsetNumber: 1, Valid: true}, {BlockNumber: 4294967295, OffsetNumber: 65535, Valid: true}}

	for name, mode := range map[string]pgx.QueryExecMode{"exec": pgx.QueryExecModeExec, "simple_protocol": pgx.QueryExecModeSimpleProtocol,
		"cache_describe": pgx.QueryExecModeCacheDescribe, "describe_exec": pgx.QueryExecModeDescribeExec, "cache_statement": pgx.QueryExecModeCacheStatement} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := ParseConfig(WithExecMode(url, name), Session{})
			require.NoError(t, err)
			require.Equal(t, mode, cfg.ConnConfig.DefaultQueryExecMode)
			conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
			require.NoError(t, err)
			defer conn.Close(ctx)
			require.NoError(t, registerTypes(ctx, conn))

			a := newArrayText(0, 0)
			for _, s := range texts {
				a.text(s)
			}
			a.null()
			a.textOrNull("")
			a.textOrNull("x")
			want := append(append([]*string{}, ptrs(texts)...), nil, nil, ptr("x"))
			require.Equal(t, len(want), a.count())
			var got []*string
			require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(x ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY AS u(x, n)`,
				a.value()).Scan(&got))
			require.Equal(t, want, got)

			ts := newArrayText(len(times), timeSize)
			for _, tm := range times {
				ts.time(tm)
			}
			ts.time(time.Time{})
			ts.timeNotNull(time.Time{})
			var gotTimes []pgtype.Timestamptz
			require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(x ORDER BY n) FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(x, n)`,
				ts.value()).Scan(&gotTimes))
			require.Len(t, gotTimes, len(times)+2)
			for i, tm := range times {
				require.True(t, gotTimes[i].Valid, "time %d", i)
				require.True(t, tm.Truncate(time.Microsecond).Equal(gotTimes[i].Time), "time %d: sent %s, read %s", i, tm, gotTimes[i].Time)
			}
			require.False(t, gotTimes[len(times)].Valid, "the zero time is NULL")
			require.True(t, gotTimes[len(times)+1].Valid && gotTimes[len(times)+1].Time.Equal(time.Time{}), "unless written as it is")

			is, bs := newArrayText(0, 0), newArrayText(0, 0)
			for _, i := range ints {
				is.int(i)
			}
			bs.bool(true)
			bs.bool(false)
			var gotInts []int64
			var gotBools []bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT $1::bigint[], $2::bool[]`, is.value(), bs.value()).Scan(&gotInts, &gotBools))
			require.Equal(t, ints, gotInts)
			require.Equal(t, []bool{true, false}, gotBools)

			tidArr := newArrayText(0, 0)
			for _, tid := range tids {
				tidArr.tid(tid)
			}
			var gotTIDs []pgtype.TID
			require.NoError(t, conn.QueryRow(ctx, `SELECT $1::tid[]`, tidArr.value()).Scan(&gotTIDs))
			require.Equal(t, tids, gotTIDs)

			var empty []string
			require.NoError(t, conn.QueryRow(ctx, `SELECT $1::text[]`, newArrayText(0, 0).value()).Scan(&empty))
			require.Empty(t, empty)
		})
	}
}

func ptr(s string) *string { return &s }

func ptrs(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}
