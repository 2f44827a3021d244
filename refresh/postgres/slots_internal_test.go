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

// A value read before the cache was forgotten (a limit written meanwhile,
// which the read may have missed) is not kept; one read after is.
func TestForgetfulForgetDuringRead(t *testing.T) {
	var c forgetful[held]
	_, forgets := c.get()
	c.forget() // a limit is written while the read runs
	c.set(forgets, held{kinds: []string{"rate_key"}})
	h, forgets := c.get()
	require.True(t, h.empty(), "the read begun before the forget is kept")

	c.set(forgets, held{kinds: []string{"rate_key"}})
	h, _ = c.get()
	require.False(t, h.empty())
	c.forget()
	h, _ = c.get()
	require.True(t, h.empty(), "kept past a forget")
}

// What ClaimDue read of whether limits exist is fresh for slotCacheFor.
func TestSlotReadFresh(t *testing.T) {
	now := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	require.False(t, slotRead{}.fresh(now), "nothing read yet")
	r := slotRead{at: now, limited: true}
	require.True(t, r.fresh(now))
	require.True(t, r.fresh(now.Add(slotCacheFor-time.Nanosecond)))
	require.False(t, r.fresh(now.Add(slotCacheFor)), "kept past slotCacheFor")
	require.False(t, r.fresh(now.Add(-time.Nanosecond)), "read after now (a clock set back)")
}
