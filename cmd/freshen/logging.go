package main

import (
	"io"
	"log/slog"
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
