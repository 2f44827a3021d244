package main

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// demoZone is the zone the demo's times are shown in.
var demoZone = mustLoadLocation("Europe/Paris")

func mustLoadLocation(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// demoStory is what the demo makes happen besides random failures: the
// upstream of the tables is down on the second morning, from 05:30 to
// 09:00 in Paris, and every day at 10:00 the person on call enables the
// models that are disabled.
type demoStory struct {
	outageFrom, outageTo time.Time
	enableAt             time.Time // the first time the person on call looks
}

func newDemoStory(start time.Time) demoStory {
	s := start.In(demoZone)
	day := time.Date(s.Year(), s.Month(), s.Day()+1, 0, 0, 0, 0, demoZone)
	return demoStory{
		outageFrom: day.Add(5*time.Hour + 30*time.Minute),
		outageTo:   day.Add(9 * time.Hour),
		enableAt:   day.Add(10*time.Hour - 24*time.Hour),
	}
}

// demoWorker is the handler of the demo's workers. Each attempt works for a
// while, then succeeds or fails; a share FailRate of attempts fail, mostly
// with retryable kinds, sometimes by running past the deadline, rarely with
// a non-retryable validation error that carries a message for the
// customer (not for the tables, whose input is machine-made: their story
// is the outage). During the story's outage every tables job fails.
type demoWorker struct {
	clock    refresh.Clock
	seed     uint64
	failRate float64
	story    demoStory
	done     <-chan struct{} // closed when the demo ends

	mu   sync.Mutex
	jobs map[string]uint64 // jobs taken so far, by model
}

// work is how long a job of each queue takes, at least and at most.
var work = map[string][2]time.Duration{
	"tables":     {3 * time.Minute, 15 * time.Minute},
	"thumbnails": {5 * time.Second, 50 * time.Second},
	"caches":     {20 * time.Second, 3 * time.Minute},
}

// customerMessages are the user messages of validation failures.
var customerMessages = map[string]string{
	"thumbnails": "The image file is corrupt; upload it again.",
	"caches":     "The price list URL returns HTML, not JSON.",
}

// handle runs one job. Its choices depend only on the seed, the model and
// how many jobs of the model came before, so a seed replays the same story,
// up to the timing of the host (which shows in the seconds).
func (w *demoWorker) handle(ctx context.Context, job queue.Job) error {
	w.mu.Lock()
	if w.jobs == nil {
		w.jobs = map[string]uint64{}
	}
	n := w.jobs[job.ModelID]
	w.jobs[job.ModelID]++
	w.mu.Unlock()
	r := rand.New(rand.NewPCG(w.seed, hashOf(job.ModelID, n)))
	span := work[job.Queue]
	took := span[0] + time.Duration(r.Int64N(int64(span[1]-span[0])+1))
	took = took.Round(time.Second)

	var fail error
	slow := false
	switch outage := job.Queue == "tables" && !job.StartedAt.Before(w.story.outageFrom) && job.StartedAt.Before(w.story.outageTo); {
	case outage:
		took = time.Minute + time.Duration(r.Int64N(int64(time.Minute))).Round(time.Second)
		fail = queue.Fail("http_503", "upstream 503")
	case r.Float64() < w.failRate:
		switch p := r.Float64(); {
		case p < 0.55:
			fail = queue.Fail("http_503", "upstream 503")
		case p < 0.75:
			fail = queue.Fail("http_429", "rate limited by upstream")
		case p < 0.85:
			fail = queue.Fail("connection_reset", "connection reset by peer")
		case p < 0.95 || customerMessages[job.Queue] == "":
			slow = true
		default:
			fail = queue.Permanent(queue.UserMessage(queue.Fail("validation", "input rejected"), customerMessages[job.Queue]))
		}
		if fail != nil {
			took /= 3
		}
	}
	if slow {
		select {
		case <-ctx.Done(): // the deadline: the outcome comes too late
			return errors.New("finished after the deadline")
		case <-w.done:
			return errors.New("demo over")
		}
	}
	select {
	case <-ctx.Done():
		return errors.New("deadline reached")
	case <-w.done:
		return errors.New("demo over")
	case <-w.clock.After(took):
	}
	return fail
}

// hashOf hashes its arguments into one number.
func hashOf(s string, nums ...uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	for _, n := range nums {
		var b [8]byte
		for i := range b {
			b[i] = byte(n >> (8 * i))
		}
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}

// unitFloat returns a number in [0, 1) that depends only on its arguments.
func unitFloat(seed uint64, what string, i uint64) float64 {
	return rand.New(rand.NewPCG(seed, hashOf(what, i))).Float64()
}
