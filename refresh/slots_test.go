package refresh_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// CheckLimit names the field and the rule of each broken one.
func TestCheckLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		l    refresh.Limit
		want string
	}{
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 1}, ""},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 500}, ""},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "a:b", MaxRunning: 2}, ""},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 0},
			"max_running: must be >= 1 (to start none of the models, pause them), got 0"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: -3},
			"max_running: must be >= 1 (to start none of the models, pause them), got -3"},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "a:b", MaxRunning: 1}, "key: "},
		{refresh.Limit{Kind: refresh.LimitQueue, Key: "", MaxRunning: 1}, "key: "},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: "", MaxRunning: 1}, "key: must be the start of a model id"},
		{refresh.Limit{Kind: refresh.LimitPrefix, Key: strings.Repeat("a", refresh.MaxLimitKeyBytes+1), MaxRunning: 1}, "key: must be the start of a model id"},
		{refresh.Limit{Kind: "host", Key: "x", MaxRunning: 1}, `kind: must be "queue" or "prefix", got "host"`},
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
