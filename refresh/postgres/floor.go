package postgres

import (
	"sync"
	"time"
)

// The claim reads due models through the index models_due_at, earliest
// first. Every start and every outcome moves a model's due_at, which
// leaves its old entry at the head of the index until vacuum removes it:
// under a steady load, a claim that scans from the start walks past every
// model started since the last vacuum (a million models at 2,000 starts a
// second: some 1,100 pages, 50 to 150 ms on a busy machine, before the
// first live row).
//
// claimFloor lets the claims of one store skip that head. After a pass
// that claimed every due model it found unlocked, every live entry below
// its start, less floorMargin, is claimed; the next passes scan from
// there. The bound is dropped again:
//   - by a write of this store whose model is due more than floorMargin
//     before the latest pass started (a model resumed, put or released
//     with a past refresh_at): the next pass scans from the start;
//   - every floorFullEvery, by one pass that scans from the start, for
//     the models due in the past that something other than this store
//     wrote, or that a pass skipped because another transaction held them
//     for longer than floorMargin.
type claimFloor struct {
	mu sync.Mutex
	// at is the bound; zero when the next pass scans from the start.
	at time.Time
	// gen counts the drops: a pass raises the bound only if none came
	// since it began.
	gen uint64
	// lastNow is the latest start of a pass; fullAt that of the last pass
	// that scanned from the start.
	lastNow, fullAt time.Time
}

const (
	// floorMargin is how far below the start of a pass that claimed all
	// it found the bound is set: the passes of that second look again at
	// a due model another transaction held. Each second of it is a
	// second of claimed entries to walk past.
	floorMargin = time.Second
	// floorFullEvery is how often a pass scans from the start anyway.
	floorFullEvery = 10 * time.Second
)

// bound returns where a pass starting at now scans from (zero: from the
// start), and the generation to give raise.
func (f *claimFloor) bound(now time.Time) (time.Time, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.After(f.lastNow) {
		f.lastNow = now
	}
	if f.at.IsZero() || now.Sub(f.fullAt) >= floorFullEvery || now.Before(f.fullAt) {
		f.fullAt = now
		return time.Time{}, f.gen
	}
	return f.at, f.gen
}

// next returns the bound for NextDue: zero for none.
func (f *claimFloor) next() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// raise moves the bound up to at, after a pass that began with generation
// gen claimed every unlocked due model from its bound up to at +
// floorMargin, unless the bound was dropped since.
func (f *claimFloor) raise(at time.Time, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen == gen && at.After(f.at) {
		f.at = at
	}
}

// lower drops the bound if a model was written due at due, which a pass
// under the bound, or one under way that raises it, would not see.
func (f *claimFloor) lower(due time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if due.IsZero() || !due.Before(f.lastNow.Add(-floorMargin)) {
		return
	}
	f.at = time.Time{}
	f.gen++
}
