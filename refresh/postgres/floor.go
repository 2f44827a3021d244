package postgres

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The claim reads due models through the index models_due_at, earliest
// first. Every start and every outcome moves a model's due_at, which
// leaves its old entry at the head of the index until vacuum removes it:
// under a steady load, a claim that scans from the start walks past every
// model started since the last vacuum (a million models at 2,000 starts a
// second: some 1,300 index pages, 35 to 90 ms on a busy machine, before
// the first live row).
//
// claimFloor lets the claims of one store skip that head: a claim without
// limits scans from the floor up. It holds as long as no model that a
// claim may take is due below it:
//
//   - A pass raises it. After its writes, in its transaction (a pass that
//     claimed nothing: after its claim), the pass looks for the earliest
//     model due from the floor up to its start less floorMargin that no
//     claim took: one another transaction holds (SKIP LOCKED passed over
//     it), one past the pass's batch or its payload budget. The floor
//     rises to that model's due time, or to the pass's start less
//     floorMargin if there is none. The margin covers the writes of
//     others that are due at their own start and commit a moment later
//     (a trigger, a model inserted with SQL).
//   - A write that makes a model due earlier than before, below the floor,
//     lowers it to that due time once it commits: a write of this store at
//     once, one of another store through its notification (Listen), which
//     carries the due time. A pass under way when such a write commits,
//     or one due below where that pass may raise the floor, does not raise
//     it (gen).
//   - Every floorFullEvery one pass scans from the start anyway, for the
//     models made due in the past by something that does not say so (SQL
//     of one's own, a version of Freshen before the floor). If it claims
//     one below the floor, the floor goes down to it and the pass checks
//     from the start: the next passes find the rest.
type claimFloor struct {
	mu sync.Mutex
	// at is the floor; zero when the passes scan from the start.
	at time.Time
	// gen counts the lowerings: a pass raises the floor only if none came
	// since it began.
	gen uint64
	// lastNow is the latest start of a pass; fullAt that of the last
	// pass that scanned from the start.
	lastNow, fullAt time.Time
}

const (
	// floorMargin is how far below a pass's start it may raise the floor.
	// Each second of it is a second of claimed entries to walk past.
	floorMargin = time.Second
	// floorFullEvery is how often a pass scans from the start anyway.
	floorFullEvery = 10 * time.Second
)

// floorPass is what a claim pass reads of the floor: where its scan
// starts (zero: from the start), where its check starts (zero: from the
// start, while there is no floor) and the generation to give raise.
type floorPass struct {
	scan, check time.Time
	gen         uint64
}

// pass returns the floorPass of a pass starting at now.
func (f *claimFloor) pass(now time.Time) floorPass {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.After(f.lastNow) {
		f.lastNow = now
	}
	p := floorPass{scan: f.at, check: f.at, gen: f.gen}
	if !f.at.IsZero() && (now.Sub(f.fullAt) >= floorFullEvery || now.Before(f.fullAt)) {
		f.fullAt = now
		p.scan = time.Time{}
	}
	return p
}

// next returns the floor for NextDue: zero for none.
func (f *claimFloor) next() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// raise moves the floor up to at, found by the check of a pass that read
// p, unless the floor was lowered since.
func (f *claimFloor) raise(at time.Time, p floorPass) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen != p.gen {
		return
	}
	if f.at.IsZero() {
		// A full scan set the floor: the next periodic one is due
		// floorFullEvery from now.
		f.fullAt = at
	}
	if at.After(f.at) {
		f.at = at
	}
}

// lower moves the floor down to due, the due time of a model made due by
// a write that committed; the zero time is none. A due time above the
// floor but below what a pass under way may raise it to (the latest
// start less floorMargin) leaves the floor where it is, but that pass
// does not raise it.
func (f *claimFloor) lower(due time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if due.IsZero() || !due.Before(f.lastNow.Add(-floorMargin)) {
		return
	}
	if !f.at.IsZero() && due.Before(f.at) {
		f.at = due
	}
	f.gen++
}

// below is called by a pass that scanned from the start and claimed a
// model due at due, below the floor it read: something made models due
// there without saying so, and there may be more. The floor goes down to
// due, no pass under way raises it, and the returned floorPass has the
// caller's pass check from the start and raise the floor from there.
func (f *claimFloor) below(due time.Time) floorPass {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.at.IsZero() && due.Before(f.at) {
		f.at = due
	}
	f.gen++
	return floorPass{gen: f.gen}
}

// drop drops the floor: the next pass scans from the start.
func (f *claimFloor) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = time.Time{}
	f.gen++
}

// floorWrite is what write does for the floor. In: with check, the
// range [from, to) of a claim pass's check (from zero: from the start).
// Out: found, the earliest model due in that range that no claim holds
// (nil if none) and checked once it is read; lowest, the earliest due time
// of a model the write made due earlier than before (zero if none).
type floorWrite struct {
	check    bool
	from, to time.Time
	found    *time.Time
	checked  bool
	lowest   time.Time
}

// floorCheckSQL is the check of a claim pass: the earliest model due in
// [$1, $2) that does not wait for a slot, after the pass's own writes.
//
// It and NextDue read the first entry of models_due_at with ORDER BY and
// LIMIT rather than min(): the planner turns min() into that only when its
// statistics say so, and statistics taken while every model was due in the
// past (a crowd loaded at once) had it count every entry from the floor
// up, claimed ones included: 0.4 to 0.7 s a call at 200,000 models.
const floorCheckSQL = `SELECT (SELECT due_at FROM models WHERE due_at >= $1 AND due_at < $2 AND NOT waiting_for_slot
	ORDER BY due_at LIMIT 1)`

// ceiling is where the check lets the floor rise: every model due in
// [fw.from, fw.found or fw.to) is claimed.
func (fw *floorWrite) ceiling() time.Time {
	if fw.found != nil && fw.found.Before(fw.to) {
		return fw.found.UTC()
	}
	return fw.to
}

// floorArg is a floor as a query argument: the zero time, no floor, is
// -infinity, so that one statement serves a scan from the floor and one
// from the start.
func floorArg(at time.Time) pgtype.Timestamptz {
	if at.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: at, Valid: true}
}

// parseDuePayload returns the due time that a notification on
// NotifyChannel carries for schema: its payload is the schema, a space,
// and the time in microseconds since 1970 (write).
func parseDuePayload(payload, schema string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(payload, schema+" ")
	if !ok {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}
