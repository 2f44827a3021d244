package refresh

import "time"

// This file holds the concurrency limits of DESIGN.md section 6, as far as
// one model sees them. Limits (max_running per queue and per id prefix)
// live in the store; the scheduler counts the current attempts (models
// with attempt_uid set) that each limit matching a due model covers, and
// tells Tick which one is full (TickInput.FullLimit). A due model over a
// limit stays due with waiting_for_slot set: it is not started and is not
// an attempt. Slots go by refresh_at, then id.

// WaitForSlot records that the start due at now waits for a slot of the
// full concurrency limit named limit (e.g. `queue "exports" (max_running
// 5)`): waiting_for_slot = true, nothing else changes, and the model stays
// due. The decision, a wait event whose Reason is limit, is made once per
// wait: it changes nothing (Decision.Event "") when the model already
// waits or no start is due. Start, Skip, Pause, Cancel and Edit (when the
// plan is no longer due) end the wait.
func WaitForSlot(m Model, limit string, now time.Time) (Model, Decision) {
	if m.WaitingForSlot || !m.CanStart(now) {
		return m, Decision{}
	}
	m.WaitingForSlot = true
	return m, Decision{
		Event: EventWait, Rule: "slot.wait", AttemptNo: m.AttemptNo, Reason: limit,
		Why: "due since " + ts(m.RefreshAt) + ", but " + limit + " has no free slot: the start waits",
	}
}
