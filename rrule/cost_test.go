package rrule

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireWithinBound checks that Next from each of the times takes no more
// steps than the bound Parse computed.
func requireWithinBound(t *testing.T, s *Schedule, label string, times []int64) {
	t.Helper()
	for _, at := range times {
		_, _, steps := s.nextSteps(at)
		require.LessOrEqual(t, steps, s.bound, "%s\nNext(%d)", label, at)
	}
}

// walkTimes returns times to ask a schedule about: each occurrence in
// [from, to] and the second before it, and random times.
func walkTimes(rng *rand.Rand, s *Schedule, from, to int64) []int64 {
	var out []int64
	at := from
	for i := 0; at < to && i < 3000; i++ {
		x, ok := s.next(at)
		if !ok {
			break
		}
		out = append(out, x, x-1)
		at = x
	}
	for range 100 {
		out = append(out, from+rng.Int64N(to-from+1))
	}
	return out
}

// TestStepsWithinBound checks, on generated schedules, that no search
// takes more steps than the bound Parse computed for it.
func TestStepsWithinBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 23))
	const n = 1500
	for i := range n {
		c := genSchedule(rng)
		s, err := Parse(c.Text(), c.Options())
		if err != nil {
			require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
			continue
		}
		label := fmt.Sprintf("case %d, zone %s:\n%s", i, c.Zone, c.Text())
		from := c.From - int64(rng.IntN(1000))*secondsPerDay
		requireWithinBound(t, s, label, walkTimes(rng, s, from, c.To))
	}
}
