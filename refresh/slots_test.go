package refresh_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// CheckLimit names the field and the rule of each broken one.
func TestCheckLimit(t *testing.T) {
	t.Parallel()
	minute := refresh.Duration(time.Minute)
	for _, tc := range []struct {
		l    refresh.Limit
		want string
	}{
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1}, ""},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 500}, ""},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "a:b", MaxRunning: 2}, ""},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 0},
			"max_running: must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got 0"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: -3},
			"max_running: must be >= 1 (to start none of the models, pause them), or left out with max_starts set, got -3"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "a:b", MaxRunning: 1}, "key: "},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "", MaxRunning: 1}, "key: "},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "", MaxRunning: 1}, "key: must be the start of a model id"},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: strings.Repeat("a", refresh.MaxLimitKeyBytes+1), MaxRunning: 1}, "key: must be the start of a model id"},
		{refresh.Limit{Kind: "host", Key: "x", MaxRunning: 1}, `kind: must be "queue", "prefix" or "rate_key", got "host"`},
		{refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: minute}, ""},
		{refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxRunning: 2, MaxStarts: 10, Per: minute, Burst: 2}, ""},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 1, Per: refresh.Duration(24 * time.Hour), Burst: 10000}, ""},
		{refresh.Limit{Kind: refresh.LimitRateKey, Key: "", MaxStarts: 10, Per: minute}, "key: must be 1 to 128 bytes"},
		{refresh.Limit{Kind: refresh.LimitRateKey, Key: strings.Repeat("h", refresh.MaxRateKeyBytes+1), MaxStarts: 10, Per: minute}, "key: must be 1 to 128 bytes"},
		{refresh.Limit{Kind: refresh.LimitRateKey, Key: "a\nb", MaxStarts: 10, Per: minute}, "key: must be 1 to 128 bytes"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 0, Per: minute}, "max_starts: must be >= 1"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: -1, Per: minute}, "max_starts: must be >= 1"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 10, Per: refresh.Duration(999 * time.Millisecond)}, "per: must be from 1s to 24h, got 999ms"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 10}, "per: must be from 1s to 24h, got 0s"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 10, Per: refresh.Duration(24*time.Hour + time.Second)}, "per: must be from 1s to 24h"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 10, Per: minute, Burst: 10001}, "burst: must be from 1 to 10000, got 10001"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxStarts: 10, Per: minute, Burst: -1}, "burst: must be from 1 to 10000, got -1"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1, Burst: 2}, "max_starts: must be >= 1"},
	} {
		err := refresh.CheckLimit(tc.l)
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc.l)
			continue
		}
		require.ErrorContains(t, err, tc.want, "%+v", tc.l)
		require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	}
}
