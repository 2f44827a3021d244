package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/freshen-dev/freshen/refresh"
)

// lockSlotsSQL takes the slots lock, a transaction-scoped advisory lock
// of the schema that the scheduler passes of every instance hold while
// limits exist. It is taken before the pass claims anything, in a
// statement of its own: each statement after it sees what the pass that
// held the lock before committed, so the count of current attempts and
// the log of each rate limit's starts are right, and no model can be due,
// unclaimed and earlier than the models a pass starts (save those an API
// call holds at that instant).
const lockSlotsSQL = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.freshen_slots'))`

// coversSQL is Limit.Covers in SQL, for a limit l and a model m.
const coversSQL = `CASE l.kind WHEN 'queue' THEN m.queue = l.key WHEN 'prefix' THEN starts_with(m.id, l.key)
	ELSE m.rate_key = l.key END`

// waitedSQL names the limits that models wait for, one index probe each
// (a loose scan of models_waiting_limit).
const waitedSQL = `WITH RECURSIVE w(name) AS (
		(SELECT waiting_limit FROM models WHERE waiting_for_slot AND waiting_limit IS NOT NULL
			ORDER BY waiting_limit LIMIT 1)
		UNION ALL
		SELECT (SELECT m.waiting_limit FROM models m WHERE m.waiting_for_slot AND m.waiting_limit > w.name
			ORDER BY m.waiting_limit LIMIT 1)
		FROM w WHERE w.name IS NOT NULL)`

// limitsSQL reads the limits of the query from (rows of limits with the
// columns waited: a model waits for it, and counted: the pass counts it),
// by kind then key, with their turns and, for those counted, their
// current attempts (a concurrency limit) and their log of starts within
// per of the parameter $now (a rate limit), as scanLimits reads them.
func limitsSQL(from, now string) string {
	return `SELECT l.kind, l.key, coalesce(l.max_running, 0), coalesce(l.max_starts, 0), coalesce(l.per, 0),
			coalesce(l.burst, 0), l.turn, l.waited, l.counted,
			CASE WHEN l.counted AND l.max_running IS NOT NULL THEN
				(SELECT count(*) FROM models m WHERE m.attempt_uid IS NOT NULL AND ` + coversSQL + `) END,
			g.at, g.n
		FROM (` + from + `) AS l
		LEFT JOIN LATERAL (SELECT array_agg(s.at ORDER BY s.at) AS at, array_agg(s.n ORDER BY s.at) AS n
			FROM limit_starts s
			WHERE l.counted AND l.max_starts IS NOT NULL AND s.kind = l.kind AND s.key = l.key
				AND s.at > ` + now + `::timestamptz - l.per * interval '1 microsecond') AS g ON true
		ORDER BY l.kind, l.key`
}

// limitState is a row of limitsSQL.
type limitState struct {
	limit           refresh.Limit
	turn            string // the tenant of the last start under the limit
	waited, counted bool
	running         int
	log             []refresh.RateStarts
}

// scanLimits reads the rows of limitsSQL.
func scanLimits(rows pgx.Rows) ([]limitState, error) {
	defer rows.Close()
	var out []limitState
	var r limitRow
	for rows.Next() {
		var st limitState
		var running pgtype.Int8
		var at []time.Time
		var n []int32
		if err := rows.Scan(append(r.dest(), &st.turn, &st.waited, &st.counted, &running, &at, &n)...); err != nil {
			return nil, err
		}
		st.limit, st.running = r.limit(), int(running.Int64)
		if st.counted && st.limit.Rated() {
			st.log = make([]refresh.RateStarts, len(at))
			for i := range at {
				st.log[i] = refresh.RateStarts{At: at[i].UTC(), N: int(n[i])}
			}
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// add appends st to the slots of the pass.
func (st *limitState) addTo(slots *refresh.Slots) {
	slots.Limits = append(slots.Limits, st.limit)
	slots.Running = append(slots.Running, st.running)
	slots.Rates = append(slots.Rates, st.log)
	slots.Turns = append(slots.Turns, st.turn)
}

// maxOffer bounds how many waiting models a pass offers one limit, and
// all the limits together (shared in proportion to their free starts and
// slots): the offer reads up to a limit's share of each tenant's waiting
// models.
const maxOffer = 10_000

// free returns how many of the models waiting for st's limit the pass
// may offer it: its free slots (a concurrency limit) and its free starts
// at now (a rate limit, Limit.Admits), whichever is fewer, at most
// maxOffer.
func (st *limitState) free(now time.Time) int {
	free := maxOffer
	if l := st.limit; l.Concurrent() {
		free = min(free, l.MaxRunning-st.running)
	}
	if l := st.limit; l.Rated() {
		starts, _ := l.Admits(st.log, now)
		free = min(free, starts)
	}
	return max(free, 0)
}

// tenantsSQL is the query t(tenant) of the tenants waiting for the
// limit named name that the condition first holds for (a comparison with
// the empty tenant, to take it or not), one index probe each (a loose
// scan of models_waiting_limit), ended by a NULL.
func tenantsSQL(name, first string) string {
	return `t(tenant) AS (
		(SELECT m.waiting_tenant FROM models m
			WHERE m.waiting_for_slot AND m.waiting_limit = ` + name + ` AND m.waiting_tenant ` + first + `
			ORDER BY m.waiting_tenant LIMIT 1)
		UNION ALL
		SELECT (SELECT m.waiting_tenant FROM models m
			WHERE m.waiting_for_slot AND m.waiting_limit = ` + name + ` AND m.waiting_tenant > t.tenant
			ORDER BY m.waiting_tenant LIMIT 1)
		FROM t WHERE t.tenant IS NOT NULL)`
}

// shareOffers brings the offers of free down in proportion, each to at
// least 1, so that they add up to about maxOffer at most.
func shareOffers(free []int32) {
	total := 0
	for _, f := range free {
		total += int(f)
	}
	if total <= maxOffer {
		return
	}
	for i, f := range free {
		free[i] = int32(max(1, int(f)*maxOffer/total))
	}
}

// offerSQL adds to a pass the waiting models that may take a slot or a
// start (see claimForSlots), locked, by refresh_at then id. For each limit
// $1 with $2 free and the turn $8, the tenants waiting for it are found
// one index probe each (a loose scan of models_waiting_limit), and each
// tenant's first $2 waiting models through the same index; they take
// turns: the first model of each tenant, then the second of each..., each
// turn by tenant starting with the first after the limit's turn (bytewise,
// wrapping around).
var offerSQL = `SELECT ctid, ` + modelColumns + ` FROM models
	WHERE id = ANY (ARRAY(
		SELECT o.id FROM unnest($1::text[], $2::int[], $8::text[]) AS l(name, free, turn)
		CROSS JOIN LATERAL (
			WITH RECURSIVE ` + tenantsSQL("l.name", ">= ''") + `
			SELECT x.id FROM t CROSS JOIN LATERAL (
				SELECT f.id, f.refresh_at, row_number() OVER (ORDER BY f.refresh_at, f.id) AS rank
				FROM (SELECT m.id, m.refresh_at FROM models m
					WHERE m.waiting_for_slot AND m.waiting_limit = l.name AND m.waiting_tenant = t.tenant
						AND m.due_at <= $3
					ORDER BY m.refresh_at, m.id -- models_waiting_limit's order within a tenant
					LIMIT l.free) AS f) AS x
			WHERE t.tenant IS NOT NULL
			ORDER BY x.rank, t.tenant COLLATE "C" <= l.turn COLLATE "C", t.tenant COLLATE "C"
			LIMIT l.free) AS o
		UNION ALL
		(SELECT m.id FROM models m
			WHERE m.waiting_for_slot AND m.due_at <= $3 AND (m.waiting_limit = ANY ($4::text[]) OR ($5 AND m.waiting_limit IS NULL))
			ORDER BY m.refresh_at, m.id
			LIMIT $6)
		UNION ALL
		(SELECT m.id FROM models m WHERE m.waiting_for_slot AND m.due_at <= $3
			ORDER BY m.refresh_at, m.id
			LIMIT $7)))
		AND waiting_for_slot AND due_at <= $3
	ORDER BY refresh_at, id
	FOR UPDATE SKIP LOCKED`

// claimForSlots runs under the slots lock. It reads the limits as they
// are (not as limited last read them); for those that cover a model of
// locked or that a model waits for, it counts the current attempts (a
// concurrency limit) and reads the log of starts (a rate limit). Then it
// adds to locked, in one more statement (offerSQL):
//
//   - for each limit that models wait for, as many of them as it has free
//     slots and free starts (shareOffers: maxOffer in all at most), the
//     tenants waiting taking turns: the batch may be full of newly due
//     models, and the earliest waiting ones still get the slots and
//     starts that freed, whatever the batch size;
//   - the models waiting for a limit that no longer exists, up to limit;
//   - waiting models by refresh_at, up to limit models in all, as before
//     the limits existed, so that each is looked at again (its catch-up
//     window, its freshness instant).
//
// Every lookup goes through an index (models_waiting_limit,
// models_waiting): a pass costs the same with a hundred thousand models
// waiting. Last, it reads the limits that cover an added model and were
// not read yet. It returns the limits it read with their current attempts
// and logs, and the keys of the prefix limits (the tenants).
func (s *Store) claimForSlots(ctx context.Context, tx *tx, now time.Time, limit int, locked *lockedModels, budget *refresh.PayloadBudget) (refresh.Slots, error) {
	n := len(locked.models)
	ids, queues, rateKeys := make([]string, n), make([]string, n), make([]string, n)
	for i, m := range locked.models {
		ids[i], queues[i], rateKeys[i] = m.ID, m.Queue, m.RateKey
	}
	b := &pgx.Batch{}
	b.Queue(waitedSQL+limitsSQL(`SELECT l.*, l.waited OR EXISTS (
			SELECT FROM unnest($1::text[], $2::text[], $3::text[]) AS m(id, queue, rate_key) WHERE `+coversSQL+`) AS counted
		FROM (SELECT l.*, l.kind || ':' || l.key IN (SELECT name FROM w WHERE name IS NOT NULL) AS waited
			FROM limits AS l) AS l`, "$4"), ids, queues, rateKeys, now)
	// The names waited for that are no longer limits, and whether a model
	// waits for none (it waited before waiting_limit existed).
	b.Queue(waitedSQL + `
		SELECT array(SELECT name FROM w WHERE name IS NOT NULL AND name NOT IN (SELECT kind || ':' || key FROM limits)),
			EXISTS (SELECT FROM models WHERE waiting_for_slot AND waiting_limit IS NULL),
			EXISTS (SELECT FROM w WHERE name IS NOT NULL)`)
	var all []limitState
	var gone []string
	var unnamed, anyWaited bool
	res := tx.SendBatch(ctx, b)
	rows, err := res.Query()
	if err == nil {
		all, err = scanLimits(rows)
	}
	if err == nil {
		err = res.QueryRow().Scan(&gone, &unnamed, &anyWaited)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return refresh.Slots{}, err
	}
	var slots refresh.Slots
	var freeNames, freeTurns []string
	var free []int32
	for i := range all {
		st := &all[i]
		if st.limit.Kind == refresh.LimitPrefix {
			slots.Tenants = append(slots.Tenants, st.limit.Key)
		}
		if !st.counted {
			continue
		}
		st.addTo(&slots)
		if f := st.free(now); st.waited && f > 0 {
			freeNames, free = append(freeNames, st.limit.Name()), append(free, int32(f))
			freeTurns = append(freeTurns, st.turn)
		}
	}
	shareOffers(free)
	room := max(limit-len(locked.models), 0)
	if !anyWaited && !unnamed {
		room = 0
	}
	if len(free) == 0 && len(gone) == 0 && !unnamed && room == 0 {
		return slots, nil
	}
	rows, err = tx.Query(ctx, offerSQL, freeNames, free, now, gone, unnamed, limit, room, freeTurns)
	if err != nil {
		return slots, err
	}
	more, err := collectLocked(rows, limit, &s.policies, budget)
	if err != nil {
		return slots, err
	}
	locked.add(more)
	// A waiting model added may be covered by a limit that neither covers
	// the batch nor has models waiting for it: read it too.
	var kinds, keys []string
	for _, st := range all {
		if !st.counted && slices.ContainsFunc(more.models, st.limit.Covers) {
			kinds, keys = append(kinds, st.limit.Kind), append(keys, st.limit.Key)
		}
	}
	if len(kinds) == 0 {
		return slots, nil
	}
	rows, err = tx.Query(ctx, limitsSQL(`SELECT l.*, false AS waited, true AS counted FROM limits AS l
		WHERE (l.kind, l.key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, "$3"), kinds, keys, now)
	if err != nil {
		return slots, err
	}
	extra, err := scanLimits(rows)
	if err != nil {
		return slots, err
	}
	for i := range extra {
		extra[i].addTo(&slots)
	}
	return slots, nil
}

// startsSQL keeps the tenant of the last start of a batch under each of
// its limits as the limit's turn ($1 the limits' names, kind:key; $4 the
// tenants), appends the starts of the batch to the logs of its rate
// limits ($2 the instants, rounded up to the microsecond; $3 the counts),
// merging the starts of one limit at one instant into one entry, and
// deletes the entries of those limits that are older than their per at
// the latest of the instants: no window that ends from then on counts
// them. A limit deleted meanwhile gets no entry.
const startsSQL = `WITH s AS (
		SELECT split_part(u.name, ':', 1) AS kind, substr(u.name, strpos(u.name, ':') + 1) AS key, u.at, u.n, u.tenant
		FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::text[]) AS u(name, at, n, tenant)
	), turned AS (
		UPDATE limits l SET turn = s.tenant FROM s
		WHERE l.kind = s.kind AND l.key = s.key AND l.turn <> s.tenant
	), added AS (
		INSERT INTO limit_starts (kind, key, at, n)
		SELECT s.kind, s.key, s.at, sum(s.n) FROM s JOIN limits l ON l.kind = s.kind AND l.key = s.key
		WHERE l.max_starts IS NOT NULL
		GROUP BY s.kind, s.key, s.at
		ON CONFLICT (kind, key, at) DO UPDATE SET n = limit_starts.n + excluded.n
	)
	DELETE FROM limit_starts d
	USING (SELECT s.kind, s.key, max(s.at) - l.per * interval '1 microsecond' AS before
		FROM s JOIN limits l ON l.kind = s.kind AND l.key = s.key
		WHERE l.per IS NOT NULL
		GROUP BY s.kind, s.key, l.per) AS p
	WHERE d.kind = p.kind AND d.key = p.key AND d.at <= p.before`

// queueStarts queues the statement that appends starts to the logs of
// their rate limits and keeps the limits' turns (startsSQL), and reports
// whether it did.
func queueStarts(b *pgx.Batch, starts []refresh.LimitStarts) bool {
	if len(starts) == 0 {
		return false
	}
	names, at, n, tenants := make([]string, len(starts)), make([]time.Time, len(starts)), make([]int32, len(starts)), make([]string, len(starts))
	for i, st := range starts {
		names[i], at[i], n[i], tenants[i] = st.Limit, ceilMicro(st.At), int32(st.N), st.Tenant
		if !strings.Contains(st.Limit, ":") {
			names[i] = st.Limit + ":" // matches no limit
		}
	}
	b.Queue(startsSQL, names, at, n, tenants)
	return true
}

// ceilMicro returns t rounded up to the microsecond, the precision of a
// timestamptz: a start stored earlier than it was made would leave the
// windows that end just after it.
func ceilMicro(t time.Time) time.Time {
	if u := t.Truncate(time.Microsecond); !u.Equal(t) {
		return u.Add(time.Microsecond)
	}
	return t
}

// A full rate limit and a backlog: while a rate limit admits no start,
// the models it covers cannot start, and marking each one waiting, a batch
// a pass, would hold up every model due after them (the models of other
// tenants) for as long as the backlog takes to mark. So the claim leaves
// out of its batch the models that such a limit covers and whose tenant
// already has models waiting for it (heldCond): they would wait behind
// them anyway, and are claimed (and marked waiting) once the limit admits
// again or their tenant no longer waits for it. Their tenant is known by
// the waiting_tenant of the models waiting for the limit: a model is left
// out when its id starts with one of them (the tenant "" of the models
// under no prefix is never left out: every id starts with it). Only a
// start is left out: a model due for a timeout, a debounced trigger or
// the loss of its freshness is claimed as ever.

// held is what a claim left out: for each (kind, key, tenant) of the
// arrays, the models that the limit covers whose ids start with the
// tenant; until is the earliest instant one of these limits admits again.
type held struct {
	kinds, keys, tenants []string
	until                time.Time
}

func (h held) empty() bool { return len(h.kinds) == 0 }

// heldCond is the condition that a model m is held for its start by a
// held of the parameters $first, $first+1, $first+2 (kinds, keys,
// tenants): no attempt of it runs (a timeout is never held), and a limit
// of the held covers it and its id starts with the limit's tenant.
func heldCond(first int) string {
	return fmt.Sprintf(`m.attempt_uid IS NULL AND EXISTS (
		SELECT FROM unnest($%d::text[], $%d::text[], $%d::text[]) AS l(kind, key, tenant)
		WHERE starts_with(m.id, l.tenant) AND `+coversSQL+`)`, first, first+1, first+2)
}

// claimHeldSQL is claimSQL leaving out the models held for their start
// (heldCond of $3 to $5), unless due for something else: a debounced
// trigger or the loss of freshness.
var claimHeldSQL = `SELECT ctid, ` + modelColumns + ` FROM models AS m
	WHERE due_at <= $1 AND NOT waiting_for_slot
		AND NOT (` + heldCond(3) + ` AND coalesce(m.debounce_at > $1, true) AND coalesce(m.overdue_at > $1, true))
	ORDER BY due_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// nextDueHeldSQL is NextDue's query while models are held (heldCond of
// $1 to $3) until $4: the earliest DueAt of the others, or debounced
// trigger or loss of freshness of the held ones, and $4, in one read of
// models_due_at up to $4.
var nextDueHeldSQL = `SELECT least(min(CASE WHEN ` + heldCond(1) + ` THEN least(debounce_at, overdue_at) ELSE due_at END), $4)
	FROM models AS m WHERE ` + dueCondition + ` AND due_at < $4`

// heldSQL reads the rate limits that models wait for, with their logs of
// starts within per of $1 and the non-empty tenants waiting for each (one
// index probe per tenant, a loose scan of models_waiting_limit).
var heldSQL = waitedSQL + `
	SELECT l.kind, l.key, coalesce(l.max_running, 0), l.max_starts, l.per, coalesce(l.burst, 0), g.at, g.n,
		array(WITH RECURSIVE ` + tenantsSQL("w.name", "> ''") + `
			SELECT tenant FROM t WHERE tenant IS NOT NULL)
	FROM w JOIN limits l ON l.kind || ':' || l.key = w.name
	LEFT JOIN LATERAL (SELECT array_agg(s.at ORDER BY s.at) AS at, array_agg(s.n ORDER BY s.at) AS n
		FROM limit_starts s
		WHERE s.kind = l.kind AND s.key = l.key AND s.at > $1::timestamptz - l.per * interval '1 microsecond') AS g ON true
	WHERE l.max_starts IS NOT NULL`

// beginClaimLimited begins the transaction of a pass while limits exist:
// it takes the slots lock, reads the rate limits that models wait for
// (heldSQL) and claims the due models that do not wait, up to limit,
// leaving out those that a limit that admits no start at now holds
// (claimHeldSQL), and passes them to collect. It records what it left out
// for NextDue.
func (s *Store) beginClaimLimited(ctx context.Context, now time.Time, limit int, collect func(pgx.Rows) error) (*tx, error) {
	var h held
	_, forgets := s.held.get()
	// The slot statements are cheap, but the planner, which knows the
	// limits table only by default estimates, may find them costly
	// enough to compile them: a fifth of a second each time.
	first := []string{lockSlotsSQL, "SET LOCAL jit = off"}
	tx, err := s.beginQuery(ctx, first, func(rows pgx.Rows) error {
		defer rows.Close()
		var r limitRow
		for rows.Next() {
			var at []time.Time
			var n []int32
			var tenants []string
			if err := rows.Scan(append(r.dest(), &at, &n, &tenants)...); err != nil {
				return err
			}
			if len(tenants) == 0 {
				continue
			}
			log := make([]refresh.RateStarts, len(at))
			for i := range at {
				log[i] = refresh.RateStarts{At: at[i], N: int(n[i])}
			}
			l := r.limit()
			free, next := l.Admits(log, now)
			if free > 0 {
				continue
			}
			for _, t := range tenants {
				h.kinds, h.keys, h.tenants = append(h.kinds, l.Kind), append(h.keys, l.Key), append(h.tenants, t)
			}
			if h.until.IsZero() || next.Before(h.until) {
				h.until = next
			}
		}
		return rows.Err()
	}, heldSQL, now)
	if err != nil {
		return nil, err
	}
	s.held.set(forgets, h)
	// With limits, from the start of the due models (no floor).
	query, args := claimSQL, []any{now, limit, floorArg(time.Time{})}
	if !h.empty() {
		query, args = claimHeldSQL, []any{now, limit, h.kinds, h.keys, h.tenants}
	}
	rows, err := tx.Query(ctx, query, args...)
	if err == nil {
		err = collect(rows)
	}
	if err != nil {
		tx.rollback()
		return nil, err
	}
	return tx, nil
}
