// Package postgres implements refresh.Store on PostgreSQL with pgx/v5.
//
// The schema is in the migrations package. Models are claimed in batches
// with SELECT ... FOR UPDATE SKIP LOCKED, and a batch's changes are written
// with a few set-based statements (UPDATE ... FROM unnest(...), INSERT ...
// SELECT FROM unnest(...)), not one statement per row. Every time predicate
// takes its time as a parameter; the database clock only stamps the
// operators' column updated_at.
//
// Times are stored with microsecond precision and read back in UTC.
//
// Errors carry the refresh error codes a caller acts on: EUNAVAILABLE for a
// passing condition (a lock or statement timeout, a serialization failure,
// a lost connection), EINVALID for data the database refuses for its
// content (SQLSTATE classes 22 and 54), ENOTFOUND for a missing model. Open
// gives every connection the session settings (Session) that keep one
// stalled client from holding up the others.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/freshen-dev/freshen/refresh"
)

var _ refresh.Store = (*Store)(nil)

// Store is a refresh.Store on a pgx connection pool. The pool's connections
// find the tables through their search_path.
type Store struct {
	pool *db
	// owned is true when Open created the pool, which Close then closes.
	owned bool
	// listen is where Listen connects, if not to the pool's database
	// (SetListenURL).
	listen *pgx.ConnConfig
	// policies decodes the policies of the models read.
	policies policyCache
	// slots is what ClaimDue last read of whether limits exist.
	slots forgetful[slotRead]
	// held is what the last ClaimDue left to full rate limits.
	held forgetful[held]
	// events are the lifecycle names written to the outbox (SetEvents).
	events refresh.EventNames
	// floor is where a claim without limits starts its scan of the due
	// models (see claimFloor).
	floor claimFloor
	// cursor holds where the full batches of the claims under way end,
	// and where the claims under way start.
	cursor claimCursor
	// released is the count of policies_released that the last pass of
	// PrunePolicies read, once it committed (nil before its first).
	released atomic.Pointer[int64]
}

// Open connects to the database at url (a postgres:// URL or key=value
// string), with the session settings s on every connection, and returns a
// store that owns the pool. Its errors never show a password.
func Open(ctx context.Context, url string, s Session) (*Store, error) {
	cfg, err := ParseConfig(url, s)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, storeError("open database", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, storeError("open database", err)
	}
	return &Store{pool: &db{Pool: pool, settings: s.settingsSQL()}, owned: true}, nil
}

// New returns a store on pool. The caller keeps ownership: Close leaves
// the pool open.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: &db{Pool: pool}} }

// SetLimits binds the policies the store reads to lim (see
// refresh.Policy.WithLimits), so that what a write accepted under
// configured limits is used under the same limits; call it before use,
// with the limits the API writes with. Without it policies are read under
// refresh.DefaultLimits.
func (s *Store) SetLimits(lim refresh.Limits) { s.policies.setLimits(lim) }

// SetEvents sets the lifecycle names someone subscribes to (the events
// stream's and the webhooks'): the outbox gets an event only if one of its
// names is in names, if the Publisher revokes its attempt, or if it is a
// success that changed the data of a model with dependents (with the other
// such successes of its batch, see queueEvents). Call it before use;
// without it every event is written.
func (s *Store) SetEvents(names refresh.EventNames) { s.events = names }

// Ping checks that the database answers, with an *refresh.Error of code
// EUNAVAILABLE if it does not.
func (s *Store) Ping(ctx context.Context) error {
	return storeError("ping database", s.pool.Ping(ctx))
}

// Close closes the pool if Open created it.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// modelColumns are the columns of models that a Model is read from, in the
// order of scanModel.
const modelColumns = `id, queue, payload, policy_id, created_at, refresh_at, deadline_at,
	attempt_no, attempt_uid, started_at, consecutive_failures, failing_since,
	last_success_at, last_error_kind, last_error_message, last_error_at,
	disabled_at, disabled_reason, paused, status_message,
	upstreams, upstreams_mode, last_changed_at, debounce_at, debounce_since,
	debounce_cause, overdue_since, snoozed_since, waiting_for_slot, off_schedule, waiting_limit,
	rate_key, waiting_until, waiting_tenant, wait_too_long`

// modelColumnsNoPayload is modelColumns with a NULL payload, for
// TryModify and Filter.NoPayload.
var modelColumnsNoPayload = strings.Replace(modelColumns, "payload", "NULL::json AS payload", 1)

// dueCondition selects the models that are, or can become, due and do not
// wait for a slot. It matches the predicate of the partial index
// models_due_at; due_at is Model.DueAt, which the database computes from
// the columns (migration 008).
const dueCondition = `due_at IS NOT NULL AND NOT waiting_for_slot`

// modelRow is what one row of modelColumns is scanned into; one serves all
// the rows of a query, so that scanning a row allocates only what the model
// keeps.
type modelRow struct {
	id, queue                                                     string
	payload                                                       []byte
	policyID                                                      int64
	createdAt                                                     time.Time
	refreshAt, deadlineAt, startedAt, failingSince, lastSuccessAt pgtype.Timestamptz
	lastErrorAt, disabledAt                                       pgtype.Timestamptz
	attemptNo, consecutiveFailures                                int
	attemptUID, lastErrorKind, lastErrorMessage                   pgtype.Text
	disabledReason, statusMessage                                 pgtype.Text
	paused                                                        bool
	upstreams                                                     []string
	upstreamsMode, debounceCause                                  pgtype.Text
	lastChangedAt, debounceAt, debounceSince, overdueSince        pgtype.Timestamptz
	snoozedSince                                                  pgtype.Timestamptz
	waitingForSlot, offSchedule                                   bool
	waitingLimit, rateKey                                         pgtype.Text
	waitingUntil                                                  pgtype.Timestamptz
	waitingTenant                                                 string
	waitTooLong                                                   bool
	tid                                                           pgtype.TID
	dest                                                          []any
}

// newModelRow returns a destination for rows of modelColumns, preceded by
// the row's ctid if withTID.
func newModelRow(withTID bool) *modelRow {
	r := &modelRow{}
	if withTID {
		r.dest = append(r.dest, &r.tid)
	}
	r.dest = append(r.dest, &r.id, &r.queue, &r.payload, &r.policyID, &r.createdAt, &r.refreshAt, &r.deadlineAt,
		&r.attemptNo, &r.attemptUID, &r.startedAt, &r.consecutiveFailures, &r.failingSince,
		&r.lastSuccessAt, &r.lastErrorKind, &r.lastErrorMessage, &r.lastErrorAt,
		&r.disabledAt, &r.disabledReason, &r.paused, &r.statusMessage,
		&r.upstreams, &r.upstreamsMode, &r.lastChangedAt, &r.debounceAt, &r.debounceSince,
		&r.debounceCause, &r.overdueSince, &r.snoozedSince, &r.waitingForSlot, &r.offSchedule, &r.waitingLimit,
		&r.rateKey, &r.waitingUntil, &r.waitingTenant, &r.waitTooLong)
	return r
}

// scan reads the current row of rows, with its policy if policies has
// it: cached reports whether it had (if not, the model's policy is
// r.policyID's, for policyCache.fill).
func (r *modelRow) scan(rows pgx.Rows, policies *policyCache) (m refresh.Model, cached bool, err error) {
	r.payload, r.upstreams = nil, nil // a NULL leaves the destination as it is
	if err := rows.Scan(r.dest...); err != nil {
		return refresh.Model{}, false, err
	}
	m = refresh.Model{ID: r.id, Queue: r.queue, CreatedAt: r.createdAt.UTC()}
	if r.payload != nil {
		m.Payload = json.RawMessage(r.payload)
	}
	m.Policy, cached = policies.get(r.policyID)
	m.RefreshAt = fromTimestamptz(r.refreshAt)
	m.DeadlineAt = fromTimestamptz(r.deadlineAt)
	m.AttemptNo = r.attemptNo
	m.AttemptUID = r.attemptUID.String
	m.StartedAt = fromTimestamptz(r.startedAt)
	m.ConsecutiveFailures = r.consecutiveFailures
	m.FailingSince = fromTimestamptz(r.failingSince)
	m.LastSuccessAt = fromTimestamptz(r.lastSuccessAt)
	if r.lastErrorKind.Valid {
		m.LastError = &refresh.LastError{
			Kind:    r.lastErrorKind.String,
			Message: r.lastErrorMessage.String,
			At:      fromTimestamptz(r.lastErrorAt),
		}
	}
	m.DisabledAt = fromTimestamptz(r.disabledAt)
	m.DisabledReason = r.disabledReason.String
	m.Paused = r.paused
	m.StatusMessage = r.statusMessage.String
	if len(r.upstreams) > 0 {
		m.Upstreams = r.upstreams
	}
	m.UpstreamsMode = r.upstreamsMode.String
	m.LastChangedAt = fromTimestamptz(r.lastChangedAt)
	m.DebounceAt = fromTimestamptz(r.debounceAt)
	m.DebounceSince = fromTimestamptz(r.debounceSince)
	m.DebounceCause = r.debounceCause.String
	m.OverdueSince = fromTimestamptz(r.overdueSince)
	m.SnoozedSince = fromTimestamptz(r.snoozedSince)
	m.WaitingForSlot = r.waitingForSlot
	m.WaitingLimit = r.waitingLimit.String
	m.RateKey = r.rateKey.String
	m.WaitingUntil = fromTimestamptz(r.waitingUntil)
	m.WaitingTenant = r.waitingTenant
	m.WaitTooLong = r.waitTooLong
	m.OffSchedule = r.offSchedule
	return m, cached, nil
}

// fromTimestamptz returns t in UTC, or the zero time for NULL.
func fromTimestamptz(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// collectModels reads every row of rows of modelColumns, then the
// policies not cached from q (once rows are read); size is the number of
// rows expected at most.
func collectModels(ctx context.Context, q querier, rows pgx.Rows, size int, policies *policyCache) ([]refresh.Model, error) {
	defer rows.Close()
	out := make([]refresh.Model, 0, min(size, 1024))
	var pending []pendingPolicy
	row := newModelRow(false)
	for rows.Next() {
		m, cached, err := row.scan(rows, policies)
		if err != nil {
			return nil, err
		}
		if !cached {
			pending = append(pending, pendingPolicy{len(out), row.policyID})
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, policies.fill(ctx, q, out, pending)
}

// lockedModels are the models a transaction holds, with their rows' ctids,
// which stay theirs while it holds them: its update finds the rows by ctid
// rather than through the primary key's index.
type lockedModels struct {
	models []refresh.Model
	tids   []pgtype.TID
	// pending are the models whose policies were not cached when they
	// were read: until fillPolicies reads them, those models have none.
	pending []pendingPolicy
	// noPayload marks models read without their payload (TryModify):
	// their updates leave the column as it is.
	noPayload bool
}

// add appends the models of o to l.
func (l *lockedModels) add(o lockedModels) {
	for _, p := range o.pending {
		p.index += len(l.models)
		l.pending = append(l.pending, p)
	}
	l.models = append(l.models, o.models...)
	l.tids = append(l.tids, o.tids...)
}

// fillPolicies reads the policies of l.pending in t, which holds l.
func (s *Store) fillPolicies(ctx context.Context, t *tx, l *lockedModels) error {
	err := s.policies.fill(ctx, t, l.models, l.pending)
	l.pending = nil
	return err
}

// payloadColumn is the position of payload in a row of ctid and
// modelColumns.
const payloadColumn = 3

// collectLocked reads the rows of rows of ctid and modelColumns; size is
// the number of rows expected at most. The policies that were not cached
// are left pending (see fillPolicies): rows may be one result of a batch
// still being read. With a budget, it stops at the first row whose payload
// does not fit it: the rows after it are locked but left out, and never
// decoded.
func collectLocked(rows pgx.Rows, size int, policies *policyCache, budget *refresh.PayloadBudget) (lockedModels, error) {
	defer rows.Close()
	n := min(size, 1024)
	l := lockedModels{models: make([]refresh.Model, 0, n), tids: make([]pgtype.TID, 0, n)}
	row := newModelRow(true)
	for rows.Next() {
		if budget != nil && !budget.Take(len(rows.RawValues()[payloadColumn])) {
			break
		}
		m, cached, err := row.scan(rows, policies)
		if err != nil {
			return lockedModels{}, err
		}
		if !cached {
			l.pending = append(l.pending, pendingPolicy{len(l.models), row.policyID})
		}
		l.models = append(l.models, m)
		l.tids = append(l.tids, row.tid)
	}
	return l, rows.Err()
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func fromNullString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// NextDue returns the earliest DueAt of a model that can become due and
// does not wait for a slot, and false if there is none. While the last
// claim left out models held for their start by a full rate limit (see
// heldCond), their starts count from when that limit admits again.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	h, _ := s.held.get()
	var err error
	if h.empty() {
		err = s.pool.QueryRow(ctx, `SELECT (SELECT due_at FROM models WHERE `+dueCondition+` AND due_at >= $1
			ORDER BY due_at LIMIT 1)`,
			floorArg(s.floor.next())).Scan(&next)
	} else {
		err = s.pool.QueryRow(ctx, nextDueHeldSQL, h.kinds, h.keys, h.tenants, h.until).Scan(&next)
	}
	if err != nil {
		return time.Time{}, false, storeError("next due model", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
}

// claimSQL claims the due models that do not wait, by due_at then id,
// from the floor $3 on (see claimFloor; floorArg).
const claimSQL = `SELECT ctid, ` + modelColumns + ` FROM models
	WHERE due_at <= $1 AND due_at >= $3 AND NOT waiting_for_slot
	ORDER BY due_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// rowPastSQL returns the key of the row $5 + 1 rows past the key ($3,
// $4) of those claimSQL would scan.
const rowPastSQL = `SELECT due_at, id FROM models
	WHERE due_at <= $1 AND due_at >= $2 AND (due_at, id) > ($3, $4) AND NOT waiting_for_slot
	ORDER BY due_at, id
	OFFSET $5 LIMIT 1`

// rowPast returns the key of the row n rows past from (nil: the floor,
// scan) of those due at now that a claim would scan, without a lock; false
// if there are fewer.
func (s *Store) rowPast(ctx context.Context, now, scan time.Time, from *claimKey, n int) (*claimKey, bool, error) {
	after := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	var id string
	if from != nil {
		after, id = pgtype.Timestamptz{Time: from.due, Valid: true}, from.id
	}
	var k claimKey
	err := s.pool.QueryRow(ctx, rowPastSQL, now, floorArg(scan), after, id, n-1).Scan(&k.due, &k.id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &k, true, nil
}

// claimAfterSQL is claimSQL from past the key ($4, $5) on (see
// claimCursor).
const claimAfterSQL = `SELECT ctid, ` + modelColumns + ` FROM models
	WHERE due_at <= $1 AND due_at >= $3 AND (due_at, id) > ($4, $5) AND NOT waiting_for_slot
	ORDER BY due_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// ClaimDue locks up to limit due models that do not wait for a slot,
// skipping those another transaction holds, earliest due_at first (then
// by id). While limits exist or models wait for a slot (as last read, at
// most slotCacheFor ago), the pass first takes the slots lock
// (lockSlotsSQL), so that the passes of all instances take turns, and
// adds the models waiting for a slot that may take one (claimForSlots).
// It passes the models and the slots to fn and writes the changes it
// returns, all in one transaction. fn and the batch's BeforeCommitFunc run
// while the rows and the slots lock are held and before the commit (the
// hook before the writes, with HookBeforeWrite): what they do outside the
// database (pushing jobs) happens even if the writes or the commit then
// fail.
//
// Without limits, the claim scans the due models from the store's floor up
// (see claimFloor), or from past the full batches that the store's other
// claims under way hold or the rows they are claiming (see claimCursor),
// and its transaction checks how far the floor may rise.
//
// If fn returns an error nothing is written and ClaimDue returns the number
// of models passed to fn with that error.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, limit int, fn func(due []refresh.Model, slots refresh.Slots) (refresh.Batch, error)) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	limited, err := s.limited(ctx, s.pool, now)
	if err != nil {
		return 0, storeError("claim due models", err)
	}
	var locked lockedModels
	budget := refresh.NewPayloadBudget()
	collect := func(rows pgx.Rows) (err error) {
		locked, err = collectLocked(rows, limit, &s.policies, budget)
		return err
	}
	var tx *tx
	var fp floorPass
	var fw floorWrite
	if limited {
		tx, err = s.beginClaimLimited(ctx, now, limit, collect)
	} else {
		_, forgets := s.held.get()
		s.held.set(forgets, held{})
		fp = s.floor.pass(now)
		fw = floorWrite{check: true, from: fp.check, to: now.Add(-floorMargin)}
		// The pass that scans from the start for the floor's sake
		// (claimFloor) scans all of it.
		var from *claimKey
		end := func() {}
		if !(fp.scan.IsZero() && !fp.check.IsZero()) {
			var some bool
			from, some, end, err = s.cursor.start(limit, func(k *claimKey, n int) (*claimKey, bool, error) {
				return s.rowPast(ctx, now, fp.scan, k, n)
			})
			if err != nil {
				return 0, storeError("claim due models", err)
			}
			if !some {
				// The claims under way take every model due.
				return 0, nil
			}
		}
		if from != nil {
			tx, err = s.beginQuery(ctx, nil, collect, claimAfterSQL, now, limit, floorArg(fp.scan), from.due, from.id)
		} else {
			tx, err = s.beginQuery(ctx, nil, collect, claimSQL, now, limit, floorArg(fp.scan))
		}
		if err == nil && len(locked.models) == limit {
			// The passes that start while this one holds its batch scan
			// from past it (noted before the claim stops being under way).
			defer s.cursor.hold(keyOf(&locked.models[limit-1]))()
		}
		end()
	}
	if err != nil {
		return 0, storeError("claim due models", err)
	}
	defer tx.rollback() // a no-op after the commit
	var slots refresh.Slots
	if limited {
		if slots, err = s.claimForSlots(ctx, tx, now, limit, &locked, budget); err != nil {
			return 0, storeError("claim models waiting for a slot", err)
		}
	}
	if err := s.fillPolicies(ctx, tx, &locked); err != nil {
		return 0, storeError("claim due models", err)
	}
	due := locked.models
	if !limited && fp.scan.IsZero() && !fp.check.IsZero() {
		// A pass that scanned from the start: did it find models due
		// below the floor?
		var low time.Time
		for i := range due {
			if d := dueAt(due[i]); d.Before(fp.check) && (low.IsZero() || d.Before(low)) {
				low = d
			}
		}
		if !low.IsZero() {
			fp = s.floor.below(low)
			fw.from = time.Time{}
		}
	}
	if len(due) == 0 {
		if !limited {
			// A pass that claimed nothing checks too (its transaction
			// holds nothing): the floor rises past the models claimed
			// since the last check, so that the next passes and NextDue
			// skip their dead entries rather than walk them each time.
			if err := tx.QueryRow(ctx, floorCheckSQL, floorArg(fw.from), fw.to).Scan(&fw.found); err != nil {
				return 0, storeError("check the claim floor", err)
			}
			s.floor.raise(fw.ceiling(), fp)
		}
		return 0, nil
	}
	b, err := fn(due, slots)
	if err != nil {
		return len(due), err
	}
	// Once the transaction has ended, however: a commit that failed may
	// have happened.
	defer func() { s.floor.lower(fw.lowest) }()
	if b, err = hookFirst(ctx, b); err != nil {
		return len(due), err
	}
	// Without BeforeCommitFunc the commit goes with the writes.
	if err := write(ctx, tx, locked, b, s.events, &fw); err != nil {
		return len(due), storeError("claim due models", err)
	}
	if b.BeforeCommitFunc != nil {
		if err := b.BeforeCommitFunc(ctx); err != nil {
			return len(due), err
		}
	}
	if err := tx.commit(ctx); err != nil {
		return len(due), storeError("claim due models", err)
	}
	if fw.checked {
		s.floor.raise(fw.ceiling(), fp)
	}
	return len(due), nil
}

// hookFirst calls b's BeforeCommitFunc now if b asks for it before the
// writes (HookBeforeWrite), and returns b without it, so that the commit
// goes with the writes.
func hookFirst(ctx context.Context, b refresh.Batch) (refresh.Batch, error) {
	if b.BeforeCommitFunc == nil || !b.HookBeforeWrite {
		return b, nil
	}
	if err := b.BeforeCommitFunc(ctx); err != nil {
		return b, err
	}
	b.BeforeCommitFunc = nil
	return b, nil
}

// modifyTries bounds how often Modify runs fn when models it creates are
// created concurrently by another caller.
const modifyTries = 3

// Modify locks the existing models among ids (in id order, waiting for
// other transactions that hold them), passes them to fn and writes the
// batch it returns, all in one transaction. A Change for a model that was
// not found creates it.
//
// If another caller creates such a model first, Modify rolls back and runs
// fn again with that model found; fn must therefore compute its changes
// from its arguments only. After three such collisions it returns an
// *refresh.Error with code ECONFLICT. If fn returns an error nothing is
// written and Modify returns that error.
func (s *Store) Modify(ctx context.Context, ids []string, fn func(found []refresh.Model) (refresh.Batch, error)) error {
	return s.modifyRetry(ctx, ids, false, func(found []refresh.Model, _ []string) (refresh.Batch, error) { return fn(found) })
}

// TryModify is Modify, except that it does not wait for models another
// transaction holds: it passes their ids to fn as busy instead. It reads
// the models without their payload and writes no payload back.
func (s *Store) TryModify(ctx context.Context, ids []string, fn func(found []refresh.Model, busy []string) (refresh.Batch, error)) error {
	return s.modifyRetry(ctx, ids, true, fn)
}

func (s *Store) modifyRetry(ctx context.Context, ids []string, skipLocked bool, fn func(found []refresh.Model, busy []string) (refresh.Batch, error)) error {
	for try := 1; ; try++ {
		err := s.modify(ctx, ids, skipLocked, fn)
		if !errors.Is(err, errCreated) {
			return err
		}
		if try == modifyTries {
			return refresh.Errorf(refresh.ECONFLICT, "modify models: %v", err)
		}
	}
}

func (s *Store) modify(ctx context.Context, ids []string, skipLocked bool, fn func(found []refresh.Model, busy []string) (refresh.Batch, error)) error {
	// Locking in id order keeps two Modify calls from deadlocking.
	lock, columns := `FOR UPDATE`, modelColumns
	if skipLocked {
		lock, columns = `FOR UPDATE SKIP LOCKED`, modelColumnsNoPayload
	}
	var locked lockedModels
	tx, err := s.beginQuery(ctx, nil, func(rows pgx.Rows) (err error) {
		locked, err = collectLocked(rows, len(ids), &s.policies, nil)
		return err
	}, `SELECT ctid, `+columns+` FROM models WHERE id = ANY($1) ORDER BY id `+lock, ids)
	if err != nil {
		return storeError("modify models", err)
	}
	defer tx.rollback() // a no-op after the commit
	if err := s.fillPolicies(ctx, tx, &locked); err != nil {
		return storeError("modify models", err)
	}
	locked.noPayload = skipLocked

	var busy []string
	if skipLocked && len(locked.models) < len(ids) {
		if busy, err = s.existing(ctx, tx, ids, locked.models); err != nil {
			return storeError("modify models", err)
		}
	}
	b, err := fn(locked.models, busy)
	if err != nil {
		return err
	}
	var fw floorWrite
	defer func() { s.floor.lower(fw.lowest) }()
	if b, err = hookFirst(ctx, b); err != nil {
		return err
	}
	if err := write(ctx, tx, locked, b, s.events, &fw); err != nil {
		if errors.Is(err, errCreated) {
			return err
		}
		return storeError("modify models", err)
	}
	if b.BeforeCommitFunc != nil {
		if err := b.BeforeCommitFunc(ctx); err != nil {
			return err
		}
	}
	if err := tx.commit(ctx); err != nil {
		return storeError("modify models", err)
	}
	return nil
}

// existing returns the ids among ids, other than those of found, that name
// a model: read without locking, they are the ones another transaction
// holds.
func (s *Store) existing(ctx context.Context, tx conn, ids []string, found []refresh.Model) ([]string, error) {
	have := make(map[string]bool, len(found))
	for _, m := range found {
		have[m.ID] = true
	}
	missing := make([]string, 0, len(ids)-len(found))
	for _, id := range ids {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	rows, err := tx.Query(ctx, `SELECT id FROM models WHERE id = ANY($1)`, missing)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// eventBytes is about the length of an event's JSON in the outbox.
const eventBytes = 200

// taken holds what a takeEvents call read, for the next call to reuse:
// a batch's events are about a third of what the publisher allocates.
type taken struct {
	ids    []int64
	events []refresh.Event
}

var takenPool = sync.Pool{New: func() any { return new(taken) }}

// put gives t back for reuse, with nothing left that holds the events'
// text.
func (t *taken) put() {
	clear(t.events)
	t.ids, t.events = t.ids[:0], t.events[:0]
	takenPool.Put(t)
}

// TakeEvents passes the events of the oldest outbox rows, about limit of
// them (at least one row's, the rows read up to about limit events' worth
// of text), to fn and deletes those rows if fn returns nil, in one
// transaction. A transaction-scoped advisory lock lets one caller at a time
// take events; the others get refresh.ErrBusy.
func (s *Store) TakeEvents(ctx context.Context, limit int, fn func(events []refresh.Event) error) (int, error) {
	return s.takeEvents(ctx, limit, func(events []refresh.Event) ([]refresh.Delivery, error) { return nil, fn(events) })
}

// takeEvents is TakeEvents whose fn also returns webhook deliveries,
// inserted in the transaction that deletes the events (see webhook.go).
func (s *Store) takeEvents(ctx context.Context, limit int, fn func(events []refresh.Event) ([]refresh.Delivery, error)) (int, error) {
	// One round trip takes the lock and, if it is ours, reads the rows;
	// another deletes them and commits. The statement's snapshot is taken
	// before the lock: the rows are locked too (FOR UPDATE), which leaves
	// out those that the caller holding the lock before had deleted and
	// committed since, so that no event is published twice.
	mine := false
	reuse := takenPool.Get().(*taken)
	defer reuse.put()
	ids, events := reuse.ids, reuse.events
	tx, err := s.beginQuery(ctx, nil, func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var id *int64
			// The row's text, in the driver's buffer until the next
			// row: parseEvents copies what it keeps.
			var text pgtype.DriverBytes
			if err := rows.Scan(&mine, &id, &text); err != nil {
				return err
			}
			if id == nil {
				continue
			}
			events = slices.Grow(events, len(text)/(eventBytes-20))
			var err error
			if events, err = parseEvents(text, events); err != nil {
				return fmt.Errorf("outbox row %d: %w", *id, err)
			}
			ids = append(ids, *id)
		}
		return rows.Err()
	}, `WITH lock AS (
			SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.freshen_outbox')) AS mine
		)
		SELECT lock.mine, o.id, o.events FROM lock
		LEFT JOIN LATERAL (
			SELECT id, events FROM (
				SELECT id, events, sum(octet_length(events)) OVER (ORDER BY id) - octet_length(events) AS before
				FROM (SELECT id, events FROM outbox WHERE lock.mine ORDER BY id LIMIT 1000 FOR UPDATE) f
			) r WHERE before < $1
		) o ON true
		ORDER BY o.id`, eventBytes*limit)
	reuse.ids, reuse.events = ids, events
	if err != nil {
		return 0, storeError("take events", err)
	}
	defer tx.rollback() // a no-op after the commit
	if !mine {
		return 0, refresh.ErrBusy
	}
	if len(ids) == 0 {
		return 0, nil
	}
	deliveries, err := fn(events)
	if err != nil {
		return 0, err
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM outbox WHERE id = ANY($1)`, ids)
	queueDeliveries(b, deliveries)
	b.Queue("COMMIT")
	res := tx.SendBatch(ctx, b)
	for range b.Len() {
		if _, err = res.Exec(); err != nil {
			break
		}
	}
	tx.ended = err == nil
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, storeError("take events", err)
	}
	return len(events), nil
}
