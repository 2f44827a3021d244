package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClaimCursorStart(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := func(s int) *claimKey { return &claimKey{due: t0.Add(time.Duration(s) * time.Second), id: "k"} }
	// past counts seconds from t0 (the floor is 0): the row n past the key
	// at s is at s+n, up to last.
	var asked []string
	last := 7
	past := func(from *claimKey, n int) (*claimKey, bool, error) {
		s := 0
		if from != nil {
			s = int(from.due.Sub(t0) / time.Second)
		}
		asked = append(asked, fmt.Sprintf("%d+%d", s, n))
		if s+n > last {
			return nil, false, nil
		}
		return key(s + n), true, nil
	}
	var c claimCursor
	start := func(limit int) (*claimKey, bool, func()) {
		from, ok, end, err := c.start(limit, past)
		require.NoError(t, err)
		return from, ok, end
	}

	from, ok, endA := start(2)
	require.True(t, ok)
	require.Nil(t, from, "nothing held or under way: from the floor")
	from, _, endB := start(3)
	require.Equal(t, key(2), from, "past the 2 rows of the claim under way")
	from, _, endC := start(1)
	require.Equal(t, key(5), from, "past the 3 rows of the one under way that starts furthest")
	endB()
	from, _, endD := start(2)
	require.Equal(t, key(6), from)
	_, ok, endE := start(1)
	require.False(t, ok, "the claims under way take every row")
	require.Nil(t, endE)
	require.Equal(t, []string{"0+2", "2+3", "5+1", "6+2"}, asked)
	endA()
	endC()
	endD()
	require.Empty(t, c.starts)

	asked, last = nil, 30
	release := c.hold(key(9))
	from, _, endA = start(2)
	require.Equal(t, key(9), from, "past the batch held")
	release = func(r func()) func() { r(); return c.hold(key(20)) }(release)
	from, _, endB = start(2)
	require.Equal(t, key(20), from, "past the batch held, further than the claim under way")
	require.Equal(t, []string{"9+2"}, asked)
	endA()
	endB()
	release()

	// A claim under way that ends while past reads (and holds its batch,
	// and may commit, so that its rows leave the count): start looks again.
	from, _, endA = start(2)
	require.Nil(t, from)
	var released func()
	calls := 0
	from, _, endB, err := c.start(2, func(*claimKey, int) (*claimKey, bool, error) {
		calls++
		released = c.hold(key(4))
		endA()
		return key(2), true, nil
	})
	require.NoError(t, err)
	require.Equal(t, key(4), from, "past the batch it holds, not the rows read before")
	require.Equal(t, 1, calls)
	endB()
	released()
}
