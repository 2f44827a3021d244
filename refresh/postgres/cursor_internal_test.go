package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClaimCursorStart(t *testing.T) {
	var c claimCursor
	st, held, end0 := c.start(2)
	require.Equal(t, &claimStart{limit: 2}, st, "nothing held or under way: from the floor")
	require.Nil(t, held)
	_, _, end1 := c.start(2)
	end0()
	end1()

	k := &claimKey{due: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), id: "k"}
	release := c.hold(k)
	st, held, end0 = c.start(2)
	require.Equal(t, &claimStart{base: k, limit: 2}, st, "past the key held")
	require.Equal(t, k, held)
	st, _, end1 = c.start(2)
	require.Equal(t, &claimStart{base: k, skip: 2, limit: 2}, st, "a batch past the claim under way")
	st, _, end2 := c.start(2)
	require.Equal(t, &claimStart{base: k, skip: 4, limit: 2}, st)
	end0()
	st, _, end3 := c.start(2)
	require.Equal(t, &claimStart{base: k, skip: 6, limit: 2}, st, "past the furthest claim under way")

	release()
	end1()
	end2()
	end3()
	st, held, _ = c.start(2)
	require.Equal(t, &claimStart{limit: 2}, st)
	require.Nil(t, held)
	require.Len(t, c.starts, 1)
}
