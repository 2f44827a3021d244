package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestParseLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want refresh.Limit
		err  string
	}{
		{in: "queue:exports=5", want: refresh.Limit{Kind: "queue", Key: "exports", MaxRunning: 5}},
		{in: "prefix:acme-=2", want: refresh.Limit{Kind: "prefix", Key: "acme-", MaxRunning: 2}},
		{in: "prefix:a:b=1", want: refresh.Limit{Kind: "prefix", Key: "a:b", MaxRunning: 1}},
		{in: "queue:exports=0", err: `"queue:exports=0": max_running: must be >= 1 (to start none of the models, pause them), got 0`},
		{in: "exports=5", err: `"exports=5": want queue:NAME=N or prefix:PREFIX=N`},
		{in: "host:x=5", err: `"host:x=5": want queue:NAME=N or prefix:PREFIX=N`},
		{in: "queue:exports", err: `"queue:exports": want queue:NAME=N or prefix:PREFIX=N`},
		{in: "queue:exports=many", err: `"queue:exports=many": max_running must be an integer, got "many"`},
		{in: "queue:exports=-1", err: `"queue:exports=-1": max_running: must be >= 1 (to start none of the models, pause them), got -1`},
		{in: "queue:a:b=1", err: `"queue:a:b=1": key: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "a:b"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseLimit(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	var limits []refresh.Limit
	f := limitsFlag{&limits}
	require.NoError(t, f.Set("queue:a=1, prefix:b-=2"))
	require.NoError(t, f.Set("queue:c=3"))
	require.Equal(t, "queue:a=1,prefix:b-=2,queue:c=3", f.String())
}
