#!/usr/bin/env bash
# row-layout.sh measures, in PostgreSQL alone, what a cycle's two writes of
# a model cost in two layouts of the row:
#
#   WITH_SERVERS_DURABLE=1 scripts/with-servers.sh scripts/row-layout.sh [pairs]
#
#   one: the row as models has it, the due time and a partial index on
#        running rows beside the primary key, so that every write of a
#        cycle is a non-HOT update;
#   two: the same wide row with its primary key only (its writes can be HOT
#        updates), and a narrow row (id, queue, due time, running) that
#        carries those two indexes and is written too.
#
# A million rows of about 750 bytes in each. A run is 200 batches of 750
# rows, each batch a claim (lock the rows, set the due time, the attempt and
# its start) and an outcome (lock them, clear the attempt, set the next due
# time and the success), each in its own transaction, from a procedure; the
# layouts alternate, `pairs` (3) times. Each line is "<layout>: <elapsed>,
# <the backend's CPU seconds>, <WAL written>"; the last says how many of
# each table's updates were HOT. It works in schemas of its own (row_layout,
# row_layout_one, row_layout_two), dropped at the end, and needs DATABASE_URL (with-servers.sh sets it) and psql.
set -euo pipefail

pairs=${1:-3}
url=$DATABASE_URL
q() { psql -qXAt -v ON_ERROR_STOP=1 "$url" "$@"; }
schemas="row_layout row_layout_one row_layout_two"
drop() { for n in $schemas; do q -c "DROP SCHEMA IF EXISTS $n CASCADE"; done; }
trap 'drop >/dev/null 2>&1' EXIT
drop >/dev/null 2>&1

# Each layout's wide row is the table models of a schema of its own, so that
# one procedure (in row_layout) runs both: its table names resolve through
# the search_path of the session that calls it, and only the narrow row's
# steps depend on the layout.
q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA row_layout;
CREATE SCHEMA row_layout_one;
CREATE SCHEMA row_layout_two;
CREATE TABLE row_layout_one.models (id text COLLATE "C" PRIMARY KEY, queue text, payload json, policy_id bigint,
  filler text, refresh_at timestamptz, deadline_at timestamptz, attempt_no int, attempt_uid text,
  started_at timestamptz, last_success_at timestamptz, updated_at timestamptz,
  due_at timestamptz GENERATED ALWAYS AS (least(refresh_at, deadline_at)) STORED);
INSERT INTO row_layout_one.models (id, queue, payload, policy_id, filler, refresh_at, attempt_no, updated_at)
  SELECT 'm' || lpad(i::text, 8, '0'), 'q', json_build_object('p', repeat('x', 190)), 1, repeat('f', 380),
    now() + interval '1 day', 0, now()
  FROM generate_series(0, 999999) i;
CREATE INDEX ON row_layout_one.models (due_at, id);
CREATE INDEX ON row_layout_one.models (queue, id) WHERE attempt_uid IS NOT NULL;
-- The same wide row without the due time, its primary key its one index.
CREATE TABLE row_layout_two.models (LIKE row_layout_one.models INCLUDING DEFAULTS);
ALTER TABLE row_layout_two.models DROP COLUMN due_at, ADD PRIMARY KEY (id), SET (fillfactor = 90);
INSERT INTO row_layout_two.models SELECT id, queue, payload, policy_id, filler, refresh_at, deadline_at,
  attempt_no, attempt_uid, started_at, last_success_at, updated_at FROM row_layout_one.models;
CREATE TABLE row_layout_two.models_due (id text COLLATE "C" PRIMARY KEY, queue text, due_at timestamptz,
  running bool NOT NULL DEFAULT false);
INSERT INTO row_layout_two.models_due SELECT id, queue, due_at FROM row_layout_one.models;
CREATE INDEX ON row_layout_two.models_due (due_at, id);
CREATE INDEX ON row_layout_two.models_due (queue, id) WHERE running;
VACUUM ANALYZE row_layout_one.models, row_layout_two.models, row_layout_two.models_due;
CHECKPOINT;

-- batch_ids returns the 750 rows of batch k, spread over the table.
CREATE FUNCTION row_layout.batch_ids(k int) RETURNS text[] LANGUAGE sql AS $$
  SELECT ARRAY(SELECT 'm' || lpad((((k::bigint * 750 + i) * 7919) % 1000000)::text, 8, '0')
    FROM generate_series(1, 750) i) $$;

-- take locks the rows of ids for a step of a cycle: with split (the
-- second layout), it locks the narrow rows and sets their due time and
-- running flag, and the step writes the wide rows without a lock of their
-- own; else it locks the wide rows.
CREATE FUNCTION row_layout.take(ids text[], split bool, due interval, running bool) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF split THEN
    PERFORM 1 FROM models_due WHERE id = ANY(ids) FOR UPDATE;
    UPDATE models_due SET due_at = now() + due, running = take.running
      FROM unnest(ids) u(id) WHERE models_due.id = u.id;
  ELSE
    PERFORM 1 FROM models WHERE id = ANY(ids) FOR UPDATE;
  END IF;
END $$;

-- run_cycles runs batches from base on, each a claim and an outcome.
CREATE PROCEDURE row_layout.run_cycles(batches int, base int, split bool) LANGUAGE plpgsql AS $$
DECLARE ids text[];
BEGIN
  FOR k IN base..base + batches - 1 LOOP
    ids := batch_ids(k);
    PERFORM take(ids, split, interval '5 minutes', true);
    UPDATE models SET refresh_at = now() + interval '5 minutes', deadline_at = now() + interval '5 minutes',
      attempt_no = models.attempt_no + 1, attempt_uid = 'u' || models.id || k, started_at = now(),
      updated_at = now()
      FROM unnest(ids) u(id) WHERE models.id = u.id;
    COMMIT;
    PERFORM take(ids, split, interval '1 day', false);
    UPDATE models SET refresh_at = now() + interval '1 day', deadline_at = NULL, attempt_uid = NULL,
      last_success_at = now(), updated_at = now()
      FROM unnest(ids) u(id) WHERE models.id = u.id;
    COMMIT;
  END LOOP;
END $$;
SQL

out=$(mktemp)
base=0
for _ in $(seq "$pairs"); do
	for layout in one two; do
		lsn=$(q -c "SELECT pg_current_wal_lsn()")
		: >"$out"
		start=$(date +%s.%N)
		# The backend's CPU is read from /proc while the procedure runs: it
		# ends with the session.
		split=false
		[ "$layout" = two ] && split=true
		q -c "SELECT pg_backend_pid()" -c "SET search_path = row_layout_$layout, row_layout" \
			-c "CALL run_cycles(200, $base, $split)" >"$out" &
		client=$!
		until [ -s "$out" ]; do sleep 0.01; done
		backend=$(head -1 "$out")
		ticks=0
		while kill -0 "$client" 2>/dev/null; do
			t=$(awk '{print $14 + $15}' "/proc/$backend/stat" 2>/dev/null) && ticks=$t
			sleep 0.05
		done
		wait "$client"
		end=$(date +%s.%N)
		wal=$(q -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn')::bigint")
		awk -v l="$layout" -v s="$start" -v e="$end" -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v w="$wal" \
			'BEGIN { printf "%s: %.1f s elapsed, backend CPU %.2f s, WAL %d MB (150,000 cycles)\n", l, e - s, t / hz, w / 1e6 }'
		base=$((base + 200))
	done
done
rm -f "$out"
q -F ' ' -c "SELECT schemaname || '.' || relname || ':', n_tup_upd, 'updates,', n_tup_hot_upd, 'HOT'
	FROM pg_stat_user_tables WHERE schemaname LIKE 'row_layout_%' ORDER BY 1" | tr '\n' ';' | sed 's/;$/\n/; s/;/; /g'
