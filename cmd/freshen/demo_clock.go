package main

import (
	"sync"
	"time"
)

// demoClock is the demo's clock: it runs speed times faster than the wall
// clock from origin, and can be slowed down while it runs (at the end of
// the story it goes on at real speed). Unlike refresh.ScaledClock, its
// timers never fire early when the speed drops: each wakes, reads the
// clock and waits again until its time has come.
type demoClock struct {
	mu     sync.Mutex
	origin time.Time // virtual time at start
	start  time.Time // wall time at start
	speed  float64
}

func newDemoClock(origin time.Time, speed float64) *demoClock {
	return &demoClock{origin: origin, start: time.Now(), speed: speed}
}

// Now returns the virtual time.
func (c *demoClock) Now() time.Time {
	now, _ := c.read()
	return now
}

func (c *demoClock) read() (time.Time, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origin.Add(time.Duration(float64(time.Since(c.start)) * c.speed)), c.speed
}

// SetSpeed makes the clock run speed times faster than the wall clock from
// now on; the virtual time does not jump. speed must be > 0.
func (c *demoClock) SetSpeed(speed float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall := time.Now()
	c.origin = c.origin.Add(time.Duration(float64(wall.Sub(c.start)) * c.speed))
	c.start, c.speed = wall, speed
}

// After fires once d of virtual time has passed.
func (c *demoClock) After(d time.Duration) <-chan time.Time {
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
