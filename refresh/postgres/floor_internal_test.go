package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClaimFloor(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var f claimFloor
	p := f.pass(t0)
	require.True(t, p.scan.IsZero() && p.check.IsZero(), "without a floor, the first pass scans and checks from the start")
	f.raise(t0.Add(-floorMargin), p)
	p = f.pass(t0.Add(time.Second))
	require.Equal(t, t0.Add(-floorMargin), p.scan)
	require.Equal(t, t0.Add(-floorMargin), p.check)

	// A pass's check never lowers the floor: raise only moves it up.
	f.raise(t0.Add(-time.Hour), p)
	require.Equal(t, t0.Add(-floorMargin), f.next())

	// A write due at or above the latest start less the margin leaves the
	// floor; one above the floor but below that leaves it too, but a pass
	// under way, which may raise the floor above it, does not.
	f.lower(t0)
	require.Equal(t, t0.Add(-floorMargin), f.next())
	f.raise(t0, p)
	require.Equal(t, t0, f.next())
	p = f.pass(t0.Add(3 * time.Second))
	f.lower(t0.Add(time.Second))
	require.Equal(t, t0, f.next())
	f.raise(t0.Add(2*time.Second), p)
	require.Equal(t, t0, f.next(), "raised by a pass under way when a write due below its start came")

	// One below the floor lowers it to its due time, and a pass under way
	// then does not raise it again.
	p = f.pass(t0.Add(3 * time.Second))
	f.lower(t0.Add(-time.Minute))
	require.Equal(t, t0.Add(-time.Minute), f.next())
	f.raise(t0, p)
	require.Equal(t, t0.Add(-time.Minute), f.next(), "raised by a pass that began before the lowering")
	p = f.pass(t0.Add(4 * time.Second))
	require.Equal(t, t0.Add(-time.Minute), p.scan)
	f.raise(t0.Add(time.Second), p)
	require.Equal(t, t0.Add(time.Second), f.next())

	// Every floorFullEvery after the floor was first set, one pass scans
	// from the start and checks from the floor.
	p = f.pass(t0.Add(-floorMargin + floorFullEvery - time.Nanosecond))
	require.False(t, p.scan.IsZero())
	p = f.pass(t0.Add(-floorMargin + floorFullEvery))
	require.True(t, p.scan.IsZero())
	require.Equal(t, t0.Add(time.Second), p.check)
	p = f.pass(t0.Add(-floorMargin + floorFullEvery + time.Second))
	require.False(t, p.scan.IsZero(), "the next full scan is floorFullEvery later")

	f.lower(time.Time{})
	require.Equal(t, t0.Add(time.Second), f.next(), "the zero time is no write")
	f.drop()
	require.True(t, f.next().IsZero())
	f.lower(t0)
	require.True(t, f.next().IsZero(), "no floor to lower")
}

func TestParseDuePayload(t *testing.T) {
	due, ok := parseDuePayload("s1 1795852800000001", "s1")
	require.True(t, ok)
	require.Equal(t, time.Date(2026, 11, 28, 8, 0, 0, 1000, time.UTC), due)
	for _, bad := range []string{"s1", "s10 1795852800000001", "s1 x", "s1 ", "s2 1"} {
		_, ok := parseDuePayload(bad, "s1")
		require.False(t, ok, bad)
	}
}

func TestClaimFloorBelow(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var f claimFloor
	f.raise(t0, f.pass(t0.Add(floorMargin)))
	under := f.pass(t0.Add(2 * time.Second))
	p := f.below(t0.Add(-time.Hour))
	require.Equal(t, t0.Add(-time.Hour), f.next())
	require.True(t, p.scan.IsZero() && p.check.IsZero(), "the pass checks from the start")
	f.raise(t0.Add(time.Second), under)
	require.Equal(t, t0.Add(-time.Hour), f.next(), "a pass under way does not raise it")
	f.raise(t0.Add(-time.Minute), p)
	require.Equal(t, t0.Add(-time.Minute), f.next())
}
