package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/freshen-dev/freshen/refresh"
)

// errCreated is returned by write when a model it was to create exists:
// another transaction created it after ours looked for it.
var errCreated = errors.New("a model was created concurrently")

// upstreamsSQL turns the upstreams of a row of an unnest, sent as their ids
// separated by spaces (an id holds none), into a text[].
const upstreamsSQL = `string_to_array(u.upstreams, ' ')`

// attemptRows turns the arrays of attemptArrays.args into rows of the
// columns of attempts, in attemptColumns' order: the outcome and decision
// by name into their enums, and the fields of a failure into one
// attempt_failure, NULL when none of them is set (a delay of 0 is NULL).
const attemptRows = `SELECT u.started_at, u.deadline_at, u.finished_at, u.attempt_no,
		u.outcome::attempt_outcome AS outcome, u.uid, u.model_id,
		CASE WHEN num_nonnulls(nullif(u.delay_ns, 0), u.decision, u.error_kind, u.error_message) > 0
			THEN ROW(nullif(u.delay_ns, 0), u.decision::attempt_decision, u.error_kind, u.error_message)::attempt_failure
		END AS failure
	FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[],
		$5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[], $9::text[],
		$10::text[], $11::bigint[])
	AS u(uid, model_id, attempt_no, started_at, deadline_at, finished_at, outcome,
		error_kind, error_message, decision, delay_ns)`

// attemptColumns are the columns of attempts that attemptRows gives.
const attemptColumns = `started_at, deadline_at, finished_at, attempt_no, outcome, uid, model_id, failure`

// sameAttempt matches a row a of attempts to a row v of attemptRows: the
// same model, start and uid, which the index attempts_model_started finds.
// attempts has no unique index: a uid has one row because only the
// transaction that holds its model writes it (see write).
const sameAttempt = `a.model_id = v.model_id AND a.started_at = v.started_at AND a.uid = v.uid`

// insertAttempts adds the history rows of attempts that are still running,
// when the model written does not hold them (see write). A row that exists
// is left as it is: a start never overwrites an attempt already recorded.
const insertAttempts = `INSERT INTO attempts (` + attemptColumns + `)
	SELECT ` + attemptColumns + ` FROM (` + attemptRows + `) v
	WHERE NOT EXISTS (SELECT FROM attempts a WHERE ` + sameAttempt + `)`

// endAttempts writes the history rows of attempts that ended: it completes
// the rows of the same model, start and uid written when they started (by
// a start not held by its model, or by an earlier version, which wrote a
// row at every start), and inserts the others.
//
// Each ended attempt looks for its row on its own (a LATERAL subquery that
// LIMIT keeps from being merged into a join), so that the lookup is one
// probe of attempts_model_started per attempt whatever the statistics of
// attempts say. As a plain join, while the table grows faster than its
// statistics (a new deployment, a burst after a prune), the planner took a
// merge join that read and sorted the whole table at every batch.
const endAttempts = `WITH v AS (` + attemptRows + `),
	ended AS (
		UPDATE attempts a SET attempt_no = v.attempt_no, deadline_at = v.deadline_at,
			finished_at = v.finished_at, outcome = v.outcome, failure = v.failure
		FROM v CROSS JOIN LATERAL (
			SELECT a.ctid AS tid FROM attempts a WHERE ` + sameAttempt + ` LIMIT 1
		) found
		WHERE a.ctid = found.tid
		RETURNING a.uid
	)
	INSERT INTO attempts (` + attemptColumns + `)
	SELECT ` + attemptColumns + ` FROM v WHERE v.uid NOT IN (SELECT uid FROM ended)`

// overdueAt returns the value of the column overdue_at of m: the instant
// it becomes overdue while no freshness episode is open, else zero (NULL).
func overdueAt(m *refresh.Model) time.Time {
	if !m.OverdueSince.IsZero() {
		return time.Time{}
	}
	at, _ := m.OverdueAt()
	return at
}

// wait is what the columns of colWaitingForSlot hold of a model: the
// limit it waits for, until when, its tenant and whether it has waited
// too long, all empty when it does not wait.
type wait struct {
	waiting, tooLong bool
	limit, tenant    string
	until            time.Time
}

// waitOf returns the wait of m as stored, with until at the microsecond
// (as read back).
func waitOf(m *refresh.Model) wait {
	if !m.WaitingForSlot {
		return wait{}
	}
	return wait{true, m.WaitTooLong, m.WaitingLimit, m.WaitingTenant, m.WaitingUntil.Truncate(time.Microsecond)}
}

func (w wait) equal(o wait) bool {
	return w.waiting == o.waiting && w.tooLong == o.tooLong && w.limit == o.limit && w.tenant == o.tenant && w.until.Equal(o.until)
}

// attemptArrays holds a batch of history rows column by column, each
// column's array in its text form.
type attemptArrays struct {
	size                                                       int // the rows expected, about
	uid, modelID, attemptNo, startedAt, deadlineAt, finishedAt *arrayText
	outcome, errorKind, errorMessage, decision, delay          *arrayText
}

func (a *attemptArrays) add(at refresh.Attempt) {
	if a.uid == nil {
		n := a.size
		a.uid, a.modelID, a.attemptNo = newArrayText(n, idSize), newArrayText(n, idSize), newArrayText(n, intSize)
		a.startedAt, a.deadlineAt, a.finishedAt = newArrayText(n, timeSize), newArrayText(n, timeSize), newArrayText(n, timeSize)
		a.outcome, a.errorKind, a.errorMessage = newArrayText(n, 0), newArrayText(n, 0), newArrayText(n, 0)
		a.decision, a.delay = newArrayText(n, 0), newArrayText(n, intSize)
	}
	a.uid.text(at.UID)
	a.modelID.text(at.ModelID)
	a.attemptNo.int(int64(int32(at.AttemptNo)))
	a.startedAt.timeNotNull(at.StartedAt)
	a.deadlineAt.time(at.DeadlineAt)
	a.finishedAt.time(at.FinishedAt)
	a.outcome.textOrNull(at.Outcome)
	a.errorKind.textOrNull(at.ErrorKind)
	a.errorMessage.textOrNull(at.ErrorMessage)
	a.decision.textOrNull(at.Decision)
	a.delay.int(int64(at.Delay))
}

// count returns the number of rows added.
func (a *attemptArrays) count() int {
	if a.uid == nil {
		return 0
	}
	return a.uid.count()
}

// args ends the arrays and returns them in the order of attemptRows'
// parameters.
func (a *attemptArrays) args() []any {
	return []any{a.uid.value(), a.modelID.value(), a.attemptNo.value(), a.startedAt.value(), a.deadlineAt.value(),
		a.finishedAt.value(), a.outcome.value(), a.errorKind.value(), a.errorMessage.value(), a.decision.value(),
		a.delay.value()}
}

// dueAt returns when m can next be claimed (zero: never); a model that
// waits for a slot is claimed when slots are counted, not when due.
func dueAt(m refresh.Model) time.Time {
	if m.WaitingForSlot {
		return time.Time{}
	}
	return m.DueAt()
}

// write stores batch b in t with its statements sent in one
// round trip, followed, when the batch has no BeforeCommitFunc, by the
// COMMIT. locked are the models the transaction holds: a change to one
// of them updates it (or deletes it, with its history), any other change
// creates its model (errCreated if it exists by then). When several
// changes name the same model, or several attempts the same uid, the last
// one wins. The batch's events go to the outbox (queueEvents: those that
// names and the Publisher need, in one row), its starts to the logs of
// their rate limits (queueStarts). If a written
// model can become due earlier than before, write notifies NotifyChannel
// (with the earliest such due time, which it also leaves in fw.lowest for
// the claim floor once the transaction ends). With fw.check, it reads the
// earliest model due in the range of the check that no claim holds
// (fw.found), the last statement before the commit.
//
// History rows: the end of an attempt inserts its row (or completes the row
// written at its start). A start writes no row when the model written holds
// that very attempt (uid, number, start and deadline): the running attempt
// is the model's own, and History shows it from there until its end writes
// the row, in the same transaction as the model change that ends it. Any
// other start inserts its row. The transitions give an attempt's row only
// with a change of its own model, which the transaction holds (or
// creates), and its end only to the transaction that takes the attempt
// from its model: no two transactions write the same attempt at once, so
// attempts needs no unique index on it (see sameAttempt).
func write(ctx context.Context, t *tx, held lockedModels, batch refresh.Batch, names refresh.EventNames, fw *floorWrite) error {
	locked := held.models
	changes := batch.Changes
	// Without a hook to call before the commit, the commit goes with the
	// writes.
	commit := batch.BeforeCommitFunc == nil
	if len(changes) == 0 && len(batch.Events) == 0 && len(batch.Audit) == 0 && len(batch.Starts) == 0 {
		if commit {
			return t.commit(ctx)
		}
		return nil
	}
	before := make(map[string]int, len(locked)) // id -> index in locked
	for i := range locked {
		before[locked[i].ID] = i
	}
	lastModel := make(map[string]int, len(changes))
	lastAttempt := make(map[string]int, len(changes))
	for i, c := range changes {
		lastModel[c.Model.ID] = i
		if c.Attempt != nil {
			lastAttempt[c.Attempt.UID] = i
		}
	}

	var inserts *updateArrays
	starts, ends := attemptArrays{size: len(changes)}, attemptArrays{size: len(changes)}
	var deletes []string
	var updated []*refresh.Model
	var updatedTIDs []pgtype.TID
	var mask uint32 // the columns the updates change
	notify := false
	var cycles []*refresh.Model // models whose upstreams change
	for i := range changes {
		c := &changes[i]
		last := lastModel[c.Model.ID] == i
		if last && c.Delete {
			if _, exists := before[c.Model.ID]; exists {
				deletes = append(deletes, c.Model.ID)
			}
			continue
		}
		if c.Attempt != nil && lastAttempt[c.Attempt.UID] == i {
			a := *c.Attempt
			if a.ModelID == "" {
				a.ModelID = c.Model.ID
			}
			switch {
			case !a.FinishedAt.IsZero() || a.Outcome != "":
				ends.add(a)
			case a.ModelID != c.Model.ID || !holds(changes[lastModel[c.Model.ID]], a):
				starts.add(a)
			}
		}
		if !last {
			continue
		}
		var old refresh.Model
		j, exists := before[c.Model.ID]
		if len(c.Model.Upstreams) > 0 && (!exists || !slices.Equal(locked[j].Upstreams, c.Model.Upstreams)) {
			cycles = append(cycles, &c.Model)
		}
		if exists {
			old = locked[j]
			mask |= changedColumns(&locked[j], &c.Model)
			updated = append(updated, &c.Model)
			updatedTIDs = append(updatedTIDs, held.tids[j])
		} else {
			if inserts == nil {
				inserts = newUpdateArrays(allColumns, len(changes), false)
			}
			if err := inserts.add(&c.Model, pgtype.TID{}); err != nil {
				return err
			}
		}
		if next, prev := dueAt(c.Model), dueAt(old); !next.IsZero() && (prev.IsZero() || next.Before(prev)) {
			notify = true
			if fw.lowest.IsZero() || next.Before(fw.lowest) {
				fw.lowest = next
			}
		}
	}
	if len(cycles) > 0 {
		if err := checkCycles(ctx, t, cycles); err != nil {
			return err
		}
	}
	if held.noPayload {
		mask &^= 1 << colPayload
	}
	var updates *updateArrays
	if len(updated) > 0 {
		updates = newUpdateArrays(mask, len(updated), true)
		for i, m := range updated {
			if err := updates.add(m, updatedTIDs[i]); err != nil {
				return err
			}
		}
	}
	b := &pgx.Batch{}
	if len(deletes) > 0 {
		b.Queue(`DELETE FROM models WHERE id = ANY($1)`, deletes)
		b.Queue(`DELETE FROM attempts WHERE model_id = ANY($1)`, deletes)
	}
	if inserts != nil {
		b.Queue(insertModels, inserts.args()...)
	}
	if updates != nil {
		b.Queue(updateStatement(mask), updates.args()...)
	}
	if starts.count() > 0 {
		b.Queue(insertAttempts, starts.args()...)
	}
	if ends.count() > 0 {
		b.Queue(endAttempts, ends.args()...)
	}
	outbox, err := queueEvents(b, batch.Events, names)
	if err != nil {
		return err
	}
	audited, err := queueAudit(b, batch.Audit)
	if err != nil {
		return err
	}
	started := queueStarts(b, batch.Starts)
	if notify {
		// The bare schema wakes the instances of versions before the
		// floor; the other one carries the due time.
		b.Queue(`SELECT pg_notify($1, current_schema()), pg_notify($1, current_schema() || ' ' || $2::text)`,
			NotifyChannel, strconv.FormatInt(fw.lowest.UnixMicro(), 10))
	}
	if fw.check {
		b.Queue(floorCheckSQL, floorArg(fw.from), fw.to)
	}
	if commit {
		b.Queue("COMMIT")
	}
	res := t.SendBatch(ctx, b)
	err = func() error {
		if len(deletes) > 0 {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("delete %d models: %w", len(deletes), err)
			}
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("delete the history of %d models: %w", len(deletes), err)
			}
		}
		if inserts != nil {
			tag, err := res.Exec()
			if err != nil {
				return fmt.Errorf("insert %d models: %w", inserts.count(), err)
			}
			if n := tag.RowsAffected(); n != int64(inserts.count()) {
				return fmt.Errorf("insert %d models: %d existed: %w", inserts.count(), int64(inserts.count())-n, errCreated)
			}
		}
		if updates != nil {
			tag, err := res.Exec()
			if err != nil {
				return fmt.Errorf("update %d models: %w", updates.count(), err)
			}
			if n := tag.RowsAffected(); n != int64(updates.count()) {
				// A row not found where it was locked: the caller changed
				// the order of the models it was given.
				return fmt.Errorf("update %d models: %d rows matched", updates.count(), n)
			}
		}
		if starts.count() > 0 {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("insert %d attempts: %w", starts.count(), err)
			}
		}
		if ends.count() > 0 {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("end %d attempts: %w", ends.count(), err)
			}
		}
		for range outbox {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("write %d events: %w", len(batch.Events), err)
			}
		}
		if audited {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("write %d audit entries: %w", len(batch.Audit), err)
			}
		}
		if started {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("log the starts of %d rate limits: %w", len(batch.Starts), err)
			}
		}
		if notify {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("notify: %w", err)
			}
		}
		if fw.check {
			if err := res.QueryRow().Scan(&fw.found); err != nil {
				return fmt.Errorf("check the claim floor: %w", err)
			}
			fw.checked = true
		}
		if commit {
			// Ended either way: a COMMIT that fails rolls back.
			_, err := res.Exec()
			t.ended = true
			if err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		return nil
	}()
	if cerr := res.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// holds reports whether the model that c writes holds attempt a as its
// running attempt.
func holds(c refresh.Change, a refresh.Attempt) bool {
	m := c.Model
	return !c.Delete && m.AttemptUID == a.UID && m.AttemptNo == a.AttemptNo &&
		m.StartedAt.Equal(a.StartedAt) && m.DeadlineAt.Equal(a.DeadlineAt)
}
