package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Logs read the same everywhere: times in UTC with Z, durations as
// duration strings, and no password of the URLs in use.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, slog.LevelInfo, newRedactor("postgres://u:hunter22@db/x"))
	paris := time.FixedZone("CET", 3600)
	log.Info("connect to postgres://u:hunter22@db/x failed; retrying",
		"retry_in", 1500*time.Millisecond,
		"due", time.Date(2026, 3, 2, 6, 0, 0, 0, paris),
		"err", errors.New("dial postgres://u:hunter22@db/x: refused"),
		slog.Group("pass", "took", 250*time.Microsecond))
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	require.Equal(t, "1.5s", rec["retry_in"])
	require.Equal(t, "2026-03-02T05:00:00Z", rec["due"])
	require.Regexp(t, `Z$`, rec["time"])
	require.Equal(t, map[string]any{"took": "250µs"}, rec["pass"])
	require.Equal(t, "dial postgres://u:xxxxx@db/x: refused", rec["err"])
	require.Equal(t, "connect to postgres://u:xxxxx@db/x failed; retrying", rec["msg"])
	require.NotContains(t, buf.String(), "hunter22")
}
