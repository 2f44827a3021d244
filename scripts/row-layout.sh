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
# each table's updates were HOT. It works in a schema of its own, dropped at
# the end, and needs DATABASE_URL (with-servers.sh sets it) and psql.
set -euo pipefail

pairs=${1:-3}
url=$DATABASE_URL
q() { psql -qXAt -v ON_ERROR_STOP=1 "$url" "$@"; }
trap 'q -c "DROP SCHEMA IF EXISTS row_layout CASCADE" >/dev/null 2>&1' EXIT

q >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS row_layout CASCADE;
CREATE SCHEMA row_layout;
SET search_path = row_layout;
CREATE TABLE one (id text COLLATE "C" PRIMARY KEY, queue text, payload json, policy_id bigint, filler text,
  refresh_at timestamptz, deadline_at timestamptz, attempt_no int, attempt_uid text, started_at timestamptz,
  last_success_at timestamptz, updated_at timestamptz,
  due_at timestamptz GENERATED ALWAYS AS (least(refresh_at, deadline_at)) STORED);
INSERT INTO one (id, queue, payload, policy_id, filler, refresh_at, attempt_no, updated_at)
  SELECT 'm' || lpad(i::text, 8, '0'), 'q', json_build_object('p', repeat('x', 190)), 1, repeat('f', 380),
    now() + interval '1 day', 0, now()
  FROM generate_series(0, 999999) i;
CREATE INDEX one_due ON one (due_at, id);
CREATE INDEX one_running ON one (queue, id) WHERE attempt_uid IS NOT NULL;
CREATE TABLE two (id text COLLATE "C" PRIMARY KEY, queue text, payload json, policy_id bigint, filler text,
  refresh_at timestamptz, deadline_at timestamptz, attempt_no int, attempt_uid text, started_at timestamptz,
  last_success_at timestamptz, updated_at timestamptz) WITH (fillfactor = 90);
INSERT INTO two SELECT id, queue, payload, policy_id, filler, refresh_at, deadline_at, attempt_no, attempt_uid,
  started_at, last_success_at, updated_at FROM one;
CREATE TABLE two_due (id text COLLATE "C" PRIMARY KEY, queue text, due_at timestamptz, running bool NOT NULL DEFAULT false);
INSERT INTO two_due SELECT id, queue, due_at FROM one;
CREATE INDEX two_due_due ON two_due (due_at, id);
CREATE INDEX two_due_running ON two_due (queue, id) WHERE running;
VACUUM ANALYZE one, two, two_due;
CHECKPOINT;

-- batch_ids returns the 750 rows of batch k, spread over the table.
CREATE FUNCTION batch_ids(k int) RETURNS text[] LANGUAGE sql AS $$
  SELECT ARRAY(SELECT 'm' || lpad((((k::bigint * 750 + i) * 7919) % 1000000)::text, 8, '0')
    FROM generate_series(1, 750) i) $$;

CREATE PROCEDURE run_one(batches int, base int) LANGUAGE plpgsql AS $$
DECLARE ids text[];
BEGIN
  FOR k IN base..base + batches - 1 LOOP
    ids := batch_ids(k);
    PERFORM 1 FROM one WHERE id = ANY(ids) FOR UPDATE;
    UPDATE one SET refresh_at = now() + interval '5 minutes', deadline_at = now() + interval '5 minutes',
      attempt_no = one.attempt_no + 1, attempt_uid = 'u' || one.id || k, started_at = now(), updated_at = now()
      FROM unnest(ids) u(id) WHERE one.id = u.id;
    COMMIT;
    PERFORM 1 FROM one WHERE id = ANY(ids) FOR UPDATE;
    UPDATE one SET refresh_at = now() + interval '1 day', deadline_at = NULL, attempt_uid = NULL,
      last_success_at = now(), updated_at = now()
      FROM unnest(ids) u(id) WHERE one.id = u.id;
    COMMIT;
  END LOOP;
END $$;

CREATE PROCEDURE run_two(batches int, base int) LANGUAGE plpgsql AS $$
DECLARE ids text[];
BEGIN
  FOR k IN base..base + batches - 1 LOOP
    ids := batch_ids(k);
    PERFORM 1 FROM two_due WHERE id = ANY(ids) FOR UPDATE;
    UPDATE two_due SET due_at = now() + interval '5 minutes', running = true
      FROM unnest(ids) u(id) WHERE two_due.id = u.id;
    UPDATE two SET refresh_at = now() + interval '5 minutes', deadline_at = now() + interval '5 minutes',
      attempt_no = two.attempt_no + 1, attempt_uid = 'u' || two.id || k, started_at = now(), updated_at = now()
      FROM unnest(ids) u(id) WHERE two.id = u.id;
    COMMIT;
    PERFORM 1 FROM two_due WHERE id = ANY(ids) FOR UPDATE;
    UPDATE two_due SET due_at = now() + interval '1 day', running = false
      FROM unnest(ids) u(id) WHERE two_due.id = u.id;
    UPDATE two SET refresh_at = now() + interval '1 day', deadline_at = NULL, attempt_uid = NULL,
      last_success_at = now(), updated_at = now()
      FROM unnest(ids) u(id) WHERE two.id = u.id;
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
		q -c "SELECT pg_backend_pid()" -c "SET search_path = row_layout" -c "CALL run_$layout(200, $base)" >"$out" &
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
q -F ' ' -c "SELECT relname || ':', n_tup_upd, 'updates,', n_tup_hot_upd, 'HOT' FROM pg_stat_user_tables
	WHERE schemaname = 'row_layout' ORDER BY relname" | tr '\n' ';' | sed 's/;$/\n/; s/;/; /g'
