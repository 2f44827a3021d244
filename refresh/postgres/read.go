package postgres

// The reads of models and their history for the API: one model, a page of
// them, their census and a model's attempts.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// notFound returns the ENOTFOUND error of model id.
func notFound(id string) error {
	return refresh.Errorf(refresh.ENOTFOUND, "model %q not found", id)
}

// Get returns the model with id, or an *refresh.Error with code ENOTFOUND.
func (s *Store) Get(ctx context.Context, id string) (refresh.Model, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+modelColumns+` FROM models WHERE id = $1`, id)
	var found []refresh.Model
	if err == nil {
		found, err = collectModels(ctx, s.pool, rows, 1, &s.policies)
	}
	if err != nil {
		return refresh.Model{}, storeError(fmt.Sprintf("get model %q", id), err)
	}
	if len(found) == 0 {
		return refresh.Model{}, notFound(id)
	}
	return found[0], nil
}

// List returns the models matching f in id order, at most f.Limit (100
// when f.Limit <= 0). Pass the last id of a page as f.After to get the
// next one. f.Prefix, f.After and f.Until bound the read of the primary
// key (see filterSQL), so a page reads its own rows only.
func (s *Store) List(ctx context.Context, f refresh.Filter) ([]refresh.Model, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	columns, extra := modelColumns, ""
	if f.NoPayload {
		columns = modelColumnsNoPayload
	}
	bound := f.BoundPayloads && !f.NoPayload
	if bound {
		// A running sum of the payloads' lengths before each row ends the
		// list on the first row a refresh.PayloadBudget refuses, so that
		// the rows after it are not even sent: the first row fits, so does
		// each later one while the sum up to it is within the bound.
		extra = `, row_number() OVER (ORDER BY id) AS n,
			sum(coalesce(octet_length(payload::text), 0)) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before`
	}
	where, args := filterSQL(f)
	args = append(args, limit)
	query := `SELECT ` + columns + extra + ` FROM models WHERE ` + where + ` ORDER BY id LIMIT $` + fmt.Sprint(len(args))
	if bound {
		args = append(args, refresh.BatchPayloadBytes)
		query = `SELECT ` + columns + ` FROM (` + query + `) models WHERE n <= 2 OR before <= $` + fmt.Sprint(len(args)) + ` ORDER BY id`
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, storeError("list models", err)
	}
	models, err := collectModels(ctx, s.pool, rows, limit, &s.policies)
	if err != nil {
		return nil, storeError("list models", err)
	}
	return models, nil
}

// filterSQL returns the condition on models of what f selects, and its
// arguments ($1...). Only the criteria f sets are in it, so that the
// bounds of the id (f.Prefix as the range [prefix, refresh.PrefixEnd),
// f.After, f.Until) are bounds of the scan of the primary key: a list or a
// census of a prefix reads only the rows of its range, however many the
// table holds. The id column compares bytewise (COLLATE "C", migration
// 011), the order in which the ids of a prefix are one range.
func filterSQL(f refresh.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, strings.ReplaceAll(cond, "$?", "$"+fmt.Sprint(len(args))))
	}
	if f.Prefix != "" {
		add(`id >= $?`, f.Prefix)
		if end, ok := refresh.PrefixEnd(f.Prefix); ok {
			add(`id < $?`, end)
		}
	}
	if f.After != "" {
		add(`id > $?`, f.After)
	}
	if f.Until != "" {
		add(`id <= $?`, f.Until)
	}
	if f.Disabled != nil {
		add(`(disabled_at IS NOT NULL) = $?`, *f.Disabled)
	}
	if f.Failing != nil {
		add(`(consecutive_failures > 0) = $?`, *f.Failing)
	}
	if f.Running != nil {
		add(`(attempt_uid IS NOT NULL) = $?`, *f.Running)
	}
	if f.Paused != nil {
		add(`paused = $?`, *f.Paused)
	}
	if f.Queue != "" {
		add(`queue = $?`, f.Queue)
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// Census counts by state the first f.Limit models f selects, in id order,
// overall and for the maxQueues queues with the most of them, in one
// query that reads at most f.Limit+1 rows of the primary key's range.
func (s *Store) Census(ctx context.Context, f refresh.Filter, maxQueues int) (refresh.Census, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	where, args := filterSQL(f)
	args = append(args, limit+1, limit, max(maxQueues, 0)+1)
	n := len(args)
	rows, _ := s.pool.Query(ctx, `WITH m AS (
			SELECT id, queue, disabled_at, paused, attempt_uid, consecutive_failures, overdue_since, waiting_for_slot
			FROM models WHERE `+where+` ORDER BY id LIMIT $`+fmt.Sprint(n-2)+`
		), c AS (SELECT * FROM m ORDER BY id LIMIT $`+fmt.Sprint(n-1)+`)
		SELECT GROUPING(queue) = 1, coalesce(queue, ''), `+stateCounts+`,
			coalesce(max(id), ''), (SELECT count(*) FROM m) > $`+fmt.Sprint(n-1)+`
		FROM c GROUP BY GROUPING SETS ((), (queue))
		ORDER BY GROUPING(queue) DESC, count(*) DESC, queue
		LIMIT $`+fmt.Sprint(n), args...)
	defer rows.Close()
	res := refresh.Census{Queues: map[string]refresh.ModelCounts{}}
	for rows.Next() {
		var total, more bool
		var q, last string
		var c refresh.ModelCounts
		if err := rows.Scan(append(append([]any{&total, &q}, stateCountsDest(&c)...), &last, &more)...); err != nil {
			return refresh.Census{}, storeError("count models", err)
		}
		if total {
			res.All, res.Last, res.More = c, last, more
		} else {
			res.Queues[q] = c
		}
	}
	if err := rows.Err(); err != nil {
		return refresh.Census{}, storeError("count models", err)
	}
	return res, nil
}

// History returns the attempts of model id, newest first (by start, then
// by uid: xids sort by their creation), at most limit (all when limit <=
// 0), as the view attempt_history shows them: the running attempt, which
// has no row in attempts until it ends (see write), is read from the
// model. It returns an *refresh.Error with code ENOTFOUND if the model
// does not exist.
func (s *Store) History(ctx context.Context, id string, before time.Time, limit int) ([]refresh.Attempt, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	var until *time.Time
	if !before.IsZero() {
		until = &before
	}
	// The outer join keeps one row for an existing model without attempts,
	// so one query tells "no history" from "no model".
	rows, err := s.pool.Query(ctx, `SELECT m.id, a.uid, a.attempt_no, a.started_at, a.deadline_at,
			a.finished_at, a.outcome, a.error_kind, a.error_message, a.decision, a.delay_ns
		FROM models m
		LEFT JOIN LATERAL (
			SELECT * FROM attempt_history WHERE model_id = m.id
				AND ($3::timestamptz IS NULL OR started_at < $3)
			ORDER BY started_at DESC, uid DESC
			LIMIT $2
		) a ON true
		WHERE m.id = $1
		ORDER BY a.started_at DESC, a.uid DESC`, id, lim, until)
	if err != nil {
		return nil, storeError(fmt.Sprintf("history of model %q", id), err)
	}
	defer rows.Close()
	found := false
	var out []refresh.Attempt
	for rows.Next() {
		found = true
		var (
			modelID                                    string
			uid                                        *string
			attemptNo                                  *int
			delay                                      *int64
			startedAt, deadlineAt, finishedAt          *time.Time
			outcome, errorKind, errorMessage, decision *string
		)
		if err := rows.Scan(&modelID, &uid, &attemptNo, &startedAt, &deadlineAt,
			&finishedAt, &outcome, &errorKind, &errorMessage, &decision, &delay); err != nil {
			return nil, storeError(fmt.Sprintf("history of model %q", id), err)
		}
		if uid == nil {
			continue // the model has no attempt
		}
		out = append(out, refresh.Attempt{
			ModelID:      modelID,
			UID:          *uid,
			AttemptNo:    *attemptNo,
			StartedAt:    fromNullTime(startedAt),
			DeadlineAt:   fromNullTime(deadlineAt),
			FinishedAt:   fromNullTime(finishedAt),
			Outcome:      fromNullString(outcome),
			ErrorKind:    fromNullString(errorKind),
			ErrorMessage: fromNullString(errorMessage),
			Decision:     fromNullString(decision),
			Delay:        time.Duration(*delay),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(fmt.Sprintf("history of model %q", id), err)
	}
	if !found {
		return nil, notFound(id)
	}
	return out, nil
}
