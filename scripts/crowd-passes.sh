#!/usr/bin/env bash
# crowd-passes.sh shows how the scheduler's passes share the crowds of a
# steady load: it runs `freshen bench soak` for 3 minutes (a million models,
# --rate 2000, so about 2,000 models due at each whole second) and, 2 minutes
# in, prints the attempts started in 5 recent seconds grouped by the instant
# their pass began (every start of a pass has that instant as its
# started_at):
#
#   WITH_SERVERS_DURABLE=1 scripts/with-servers.sh scripts/crowd-passes.sh [bin/freshen]
#
# Each line is "<minute:second> +<ms after the second> <starts> <attempt
# numbers>": first attempts are the crowd, later ones retries. Serve's flags
# can be set through FRESHEN_* variables (FRESHEN_CLAIM_LOOPS=4). It needs
# DATABASE_URL and REDIS_URL (with-servers.sh sets them) and psql.
set -euo pipefail

bin=${1:-bin/freshen}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
q() { psql -qXAt -v ON_ERROR_STOP=1 "$DATABASE_URL" "$@"; }

"$bin" bench soak --minutes 3 --interval 30s --rate 2000 >"$log" 2>&1 &
soak=$!
until grep -q '^30.00 s' "$log"; do
	kill -0 "$soak" 2>/dev/null || { cat "$log"; exit 1; }
	sleep 1
done
sleep 90
schema=$(q -c "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench_soak_%' LIMIT 1")
q -F ' ' -c "SELECT to_char(second, 'MI:SS'), '+' || ms, count(*), string_agg(DISTINCT attempt_no::text, ',')
	FROM (SELECT date_trunc('second', started_at) AS second,
			round(extract(epoch FROM started_at - date_trunc('second', started_at)) * 1000) AS ms, attempt_no
		FROM $schema.attempts
		WHERE started_at > now() - interval '8 seconds' AND started_at < now() - interval '3 seconds') s
	GROUP BY second, ms ORDER BY second, ms"
wait "$soak"
grep -E '^RESULT' "$log"
