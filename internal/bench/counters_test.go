package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCommandStats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		section map[string]string
		want    map[string]int64
		err     string
	}{
		{
			name: "calls by command",
			section: map[string]string{
				"cmdstat_xadd":           "calls=2000,usec=9000,usec_per_call=4.50,rejected_calls=0,failed_calls=0",
				"cmdstat_client|setname": "calls=3,usec=3,usec_per_call=1.00,rejected_calls=0,failed_calls=0",
				"cmdstat_get":            "usec=1,calls=7",
			},
			want: map[string]int64{"xadd": 2000, "client|setname": 3, "get": 7},
		},
		{
			name:    "other keys are left out",
			section: map[string]string{"errorstat_ERR": "count=1"},
			want:    map[string]int64{},
		},
		{
			name:    "no calls",
			section: map[string]string{"cmdstat_get": "usec=1"},
			err:     `INFO commandstats: get: no calls in "usec=1"`,
		},
		{
			name:    "calls not a number",
			section: map[string]string{"cmdstat_get": "calls=x"},
			err:     `INFO commandstats: get: calls: strconv.ParseInt: parsing "x": invalid syntax`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseCommandStats(tc.section)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCommandsBetween(t *testing.T) {
	t.Parallel()
	before := map[string]int64{"xadd": 10, "xread": 4, "info": 2, "get": 5}
	after := map[string]int64{"xadd": 30, "xread": 9, "info": 3, "get": 5, "lpush": 6}
	own := map[string]int64{"xread": 5, "info": 1}
	require.Equal(t, map[string]int64{"xadd": 20, "lpush": 6}, commandsBetween(before, after, own))
}
