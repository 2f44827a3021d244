package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// deadlines cancels the contexts of running handlers at their jobs'
// deadlines, on the worker's clock, from one goroutine and one timer for
// them all (rather than a goroutine and a timer a job).
type deadlines struct {
	clock refresh.Clock
	mu    sync.Mutex
	h     deadlineHeap
	// changed wakes watch when the earliest deadline changes.
	changed chan struct{}
}

// deadline is a running handler's deadline.
type deadline struct {
	at     time.Time
	cancel context.CancelCauseFunc
	index  int // in the heap; -1 once out of it
}

func newDeadlines(clock refresh.Clock) *deadlines {
	return &deadlines{clock: clock, changed: make(chan struct{}, 1)}
}

// add has cancel called with context.DeadlineExceeded at at, unless remove
// comes first.
func (ds *deadlines) add(at time.Time, cancel context.CancelCauseFunc) *deadline {
	d := &deadline{at: at, cancel: cancel}
	ds.mu.Lock()
	heap.Push(&ds.h, d)
	first := d.index == 0
	ds.mu.Unlock()
	if first {
		ds.wake()
	}
	return d
}

// remove forgets d.
func (ds *deadlines) remove(d *deadline) {
	ds.mu.Lock()
	if d.index >= 0 {
		heap.Remove(&ds.h, d.index)
	}
	ds.mu.Unlock()
}

func (ds *deadlines) wake() {
	select {
	case ds.changed <- struct{}{}:
	default:
	}
}

// watch cancels the contexts whose deadline has come, until ctx ends.
func (ds *deadlines) watch(ctx context.Context) {
	for {
		ds.mu.Lock()
		var wait <-chan time.Time
		if len(ds.h) > 0 {
			first := ds.h[0]
			if now := ds.clock.Now(); !now.Before(first.at) {
				heap.Pop(&ds.h)
				ds.mu.Unlock()
				first.cancel(context.DeadlineExceeded)
				continue
			} else {
				wait = ds.clock.After(first.at.Sub(now))
			}
		}
		ds.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ds.changed:
		case <-wait:
		}
	}
}

// deadlineHeap orders deadlines earliest first (container/heap).
type deadlineHeap []*deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *deadlineHeap) Push(x any) {
	d := x.(*deadline)
	d.index = len(*h)
	*h = append(*h, d)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	d.index = -1
	return d
}
