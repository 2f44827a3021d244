package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The offers of a pass add up to maxOffer at most, shared in proportion,
// each limit keeping at least one.
func TestShareOffers(t *testing.T) {
	for _, c := range []struct{ free, want []int32 }{
		{[]int32{4, 20}, []int32{4, 20}},
		{[]int32{maxOffer}, []int32{maxOffer}},
		{[]int32{maxOffer, maxOffer}, []int32{maxOffer / 2, maxOffer / 2}},
		{[]int32{3 * maxOffer, maxOffer}, []int32{3 * maxOffer / 4, maxOffer / 4}},
		{[]int32{4 * maxOffer, 1}, []int32{maxOffer - 1, 1}},
	} {
		free := append([]int32(nil), c.free...)
		shareOffers(free)
		require.Equal(t, c.want, free, "%v", c.free)
	}
}

// A read of whether limits exist that began before the cache was forgotten
// (a limit written meanwhile, which the read may have missed) is not
// kept; one that began after is, for slotCacheFor.
func TestSlotCacheForgetDuringRead(t *testing.T) {
	var c slotCache
	now := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	_, fresh, forgets := c.get(now)
	require.False(t, fresh, "nothing read yet")
	c.forget() // a limit is written while the read runs
	c.set(forgets, now, false)
	_, fresh, forgets = c.get(now)
	require.False(t, fresh, "the read begun before the forget is kept")

	c.set(forgets, now, true)
	limited, fresh, _ := c.get(now.Add(slotCacheFor - time.Nanosecond))
	require.True(t, fresh)
	require.True(t, limited)
	_, fresh, _ = c.get(now.Add(slotCacheFor))
	require.False(t, fresh, "kept past slotCacheFor")
	c.forget()
	_, fresh, _ = c.get(now)
	require.False(t, fresh, "kept past a forget")
}
