package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClaimFloor(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var f claimFloor
	from, gen := f.bound(t0)
	require.True(t, from.IsZero(), "the first pass scans from the start")
	f.raise(t0.Add(-floorMargin), gen)
	from, gen = f.bound(t0.Add(time.Second))
	require.Equal(t, t0.Add(-floorMargin), from)

	// A write due before the latest start less the margin drops the
	// bound, and a pass under way when it came cannot raise it again.
	f.lower(t0.Add(time.Second - floorMargin))
	require.Equal(t, t0.Add(-floorMargin), f.next(), "the latest start less the margin: no pass sets a bound above it")
	f.lower(t0.Add(time.Second - floorMargin - time.Nanosecond))
	require.True(t, f.next().IsZero())
	f.raise(t0.Add(time.Second-floorMargin), gen)
	require.True(t, f.next().IsZero(), "raised by a pass that began before the drop")
	from, gen = f.bound(t0.Add(2 * time.Second))
	require.True(t, from.IsZero())
	f.raise(t0.Add(2*time.Second-floorMargin), gen)
	require.Equal(t, t0.Add(2*time.Second-floorMargin), f.next())

	// Every floorFullEvery, one pass scans from the start.
	from, _ = f.bound(t0.Add(2*time.Second + floorFullEvery - time.Nanosecond))
	require.False(t, from.IsZero())
	from, _ = f.bound(t0.Add(2*time.Second + floorFullEvery))
	require.True(t, from.IsZero())
}
