package webhook

import (
	"math"
	"time"
)

// Backoff is the delay before the next send of a delivery whose send
// failed: after the n-th failed send it is min(Base·2^(n-1), Max), then
// scaled by 1 + Jitter·(2u−1) for u uniform in [0, 1), so that the retries
// of many deliveries failed together spread out.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// Delay returns the delay after the n-th failed send (n >= 1) for the
// random number u in [0, 1). It is never more than Max·(1+Jitter).
func (b Backoff) Delay(n int, u float64) time.Duration {
	d := float64(b.Max)
	if n < 1 {
		n = 1
	}
	if n-1 < 62 {
		d = math.Min(float64(b.Base)*math.Pow(2, float64(n-1)), float64(b.Max))
	}
	d *= 1 + b.Jitter*(2*u-1)
	return time.Duration(d).Round(time.Millisecond)
}
