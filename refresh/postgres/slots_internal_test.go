package postgres

import (
	"testing"

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
