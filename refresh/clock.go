package refresh

import (
	"sort"
	"sync"
	"time"
)

// Clock is the one source of time in Freshen. Production uses SystemClock;
// the simulator and tests use a VirtualClock, and the demo a ScaledClock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the clock's time once d has
	// passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real wall clock, read in UTC, so that every time
// Freshen stamps (events, history, dead letters, logs) reads with Z.
type SystemClock struct{}

// Now returns time.Now() in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// AfterFunc calls f in its own goroutine once d has passed, unless stop is
// called first; stop reports whether it stopped the call.
func (SystemClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// funcClock is a Clock that can also call a function after a while and
// cancel the call, as SystemClock and VirtualClock can. The scheduler
// needs it to notice a slow pass (SchedulerConfig.StallAfter); with a
// clock without it, it does not look.
type funcClock interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// ScaledClock runs speed times faster than the wall clock from its origin,
// and can be slowed down or sped up while it runs. The demo uses it to show
// a day in minutes, then goes on at real speed. Its timers never fire early
// when the speed drops: each wakes, reads the clock and waits again until
// its time has come.
type ScaledClock struct {
	mu     sync.Mutex
	origin time.Time // virtual time at start
	start  time.Time // wall time at start
	speed  float64
}

// NewScaledClock returns a clock that reads origin now and advances speed
// times faster than the wall clock. speed must be > 0.
func NewScaledClock(origin time.Time, speed float64) *ScaledClock {
	return &ScaledClock{origin: origin, start: time.Now(), speed: speed}
}

// Now returns the scaled time.
func (c *ScaledClock) Now() time.Time {
	now, _ := c.read()
	return now
}

func (c *ScaledClock) read() (time.Time, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origin.Add(time.Duration(float64(time.Since(c.start)) * c.speed)), c.speed
}

// SetSpeed makes the clock run speed times faster than the wall clock from
// now on; the scaled time does not jump. speed must be > 0.
func (c *ScaledClock) SetSpeed(speed float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall := time.Now()
	c.origin = c.origin.Add(time.Duration(float64(wall.Sub(c.start)) * c.speed))
	c.start, c.speed = wall, speed
}

// After fires once d of scaled time has passed.
func (c *ScaledClock) After(d time.Duration) <-chan time.Time {
	out := make(chan time.Time, 1)
	at := c.Now().Add(d)
	go func() {
		for {
			now, speed := c.read()
			if !now.Before(at) {
				out <- now
				return
			}
			<-time.After(time.Duration(float64(at.Sub(now))/speed) + time.Microsecond)
		}
	}()
	return out
}

// VirtualClock is a clock that moves only when told to. Waiters registered
// with After fire when Set or Advance reach their time.
type VirtualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	lastID  uint64
}

type waiter struct {
	at time.Time
	ch chan time.Time
	fn func() // set for AfterFunc, instead of ch
	id uint64
}

// NewVirtualClock returns a virtual clock that reads now.
func NewVirtualClock(now time.Time) *VirtualClock { return &VirtualClock{now: now} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives once the clock reaches Now()+d.
func (c *VirtualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(d)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: at, ch: ch})
	return ch
}

// AfterFunc calls f in its own goroutine once the clock reaches Now()+d,
// unless stop is called first; stop reports whether it stopped the call.
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	c.lastID++
	id := c.lastID
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), fn: f, id: id})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.fn != nil && w.id == id {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Advance moves the clock forward by d and fires the waiters that are due.
func (c *VirtualClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires the waiters that are
// due, earliest first.
func (c *VirtualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	sort.SliceStable(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			if w.fn != nil {
				go w.fn()
			} else {
				w.ch <- c.now
			}
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// Waiters returns how many After channels are waiting (calls of AfterFunc
// do not count); tests use it to know that a loop has gone to sleep.
func (c *VirtualClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.waiters {
		if w.fn == nil {
			n++
		}
	}
	return n
}
