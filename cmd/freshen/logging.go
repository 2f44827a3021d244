package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// newLogger returns a JSON logger on w at level whose records read the same
// everywhere: times in UTC (with Z), durations as strings ("1.5s", never
// nanoseconds), and the passwords of r replaced in every message, string
// and error.
func newLogger(w io.Writer, level slog.Leveler, r redactor) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Value.Kind() {
			case slog.KindTime:
				a.Value = slog.TimeValue(a.Value.Time().UTC())
			case slog.KindDuration:
				a.Value = slog.StringValue(a.Value.Duration().String())
			case slog.KindString:
				a.Value = slog.StringValue(r.String(a.Value.String()))
			case slog.KindAny:
				if err, ok := a.Value.Any().(error); ok {
					a.Value = slog.StringValue(r.String(err.Error()))
				}
			}
			return a
		},
	}))
}

// redisLogger passes go-redis's own messages (pool and reconnection
// trouble) to a slog logger, as warnings. The queue package offers the
// same; this one serves only the commands of this binary.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// setRedisLogger sends go-redis's messages, process-wide, to log.
func setRedisLogger(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }

// utcClock is the wall clock, read in UTC, so that every time Freshen
// stamps (events, dead letters, logs) reads with Z.
type utcClock struct{}

func (utcClock) Now() time.Time                         { return time.Now().UTC() }
func (utcClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
