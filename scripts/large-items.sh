#!/usr/bin/env bash
# large-items.sh measures what large items cost freshen serve and Redis, each
# case on a new serve:
#
#   WITH_SERVERS_DURABLE=1 scripts/with-servers.sh scripts/large-items.sh [bin/freshen]
#
#   1. pages: 3,000 models with payloads of 60 KB; one GET /models?limit=1000,
#      then 8 at once: serve's peak RSS and CPU;
#   2. outcomes: 750 outcomes of 900 KB (under the 1 MiB limit) on the
#      outcomes list: how many serve took, its peak RSS, Redis's peak memory;
#   3. dead letters: 300 entries of 900 KB; one GET /dead?limit=1000, then 4
#      at once: serve's peak RSS and CPU;
#   4. a flood: 1,000 malformed outcomes of 900 KB, which serve sets aside:
#      the memory Redis uses after them;
#   5. readers that do not read: on the models of case 1, 200 clients ask
#      for GET /models?limit=1000 at once and read nothing for 5 seconds:
#      serve's peak RSS, and how many pages it sent and refused (503).
#
# It needs DATABASE_URL, REDIS_URL (with-servers.sh sets them), redis-cli,
# psql, curl and python3. The binary defaults to bin/freshen; pass another
# build to compare. Each line it prints is "<case>: <figure>".
set -euo pipefail

bin=${1:-bin/freshen}
addr=127.0.0.1:18089
rport=$(echo "$REDIS_URL" | sed 's|.*:\([0-9]*\)/.*|\1|')
prefix='freshen:{freshen}:'
work=$(mktemp -d)
serve_pid=
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; rm -rf "$work"' EXIT

rcli() { redis-cli -p "$rport" "$@"; }

# fresh empties the database and Redis.
fresh() {
	psql -q "$DATABASE_URL" -c 'SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public;' >/dev/null
	"$bin" migrate --database-url "$DATABASE_URL" >/dev/null
	rcli FLUSHALL >/dev/null
	rcli CONFIG RESETSTAT >/dev/null
}

start_serve() {
	"$bin" serve --database-url "$DATABASE_URL" --redis-url "$REDIS_URL" --addr "$addr" \
		--log-level error >"$work/serve.log" 2>&1 &
	serve_pid=$!
	for _ in $(seq 1 100); do
		curl -sf "http://$addr/readyz" >/dev/null && return
		sleep 0.1
	done
	echo "serve did not get ready:" >&2
	cat "$work/serve.log" >&2
	exit 1
}

stop_serve() {
	kill "$serve_pid"
	wait "$serve_pid" 2>/dev/null || true
	serve_pid=
}

hwm() { awk '/VmHWM/ {printf "%.1f MB", $2 / 1024}' "/proc/$serve_pid/status"; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f s", ($14 + $15) / hz}' "/proc/$serve_pid/stat"; }

# get fetches url n times at once and waits for them all.
get() {
	local n=$1 url=$2 pids=()
	for _ in $(seq 1 "$n"); do
		curl -sf "http://$addr$url" -o /dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
}

# push lpushes the file $2 $1 times on list $3, 50 per command.
push() {
	local n=$1 file=$2 key=$3
	python3 - "$n" "$file" "$key" <<'EOF' | rcli --pipe >/dev/null
import sys
n, data, key = int(sys.argv[1]), open(sys.argv[2], 'rb').read(), sys.argv[3].encode()
def bulk(b): return b'$%d\r\n%s\r\n' % (len(b), b)
out = sys.stdout.buffer
while n > 0:
    k = min(n, 50)
    out.write(b'*%d\r\n' % (k + 2) + bulk(b'LPUSH') + bulk(key) + bulk(data) * k)
    n -= k
EOF
}

echo "binary: $bin"

fresh
psql -q "$DATABASE_URL" -c "INSERT INTO models (id, queue, payload, policy, created_at, refresh_at, updated_at)
	SELECT 'm' || lpad(i::text, 5, '0'), 'tables', json_build_object('blob', repeat('x', 60000)),
		'{\"schedule\": \"FREQ=DAILY;BYHOUR=6,16\", \"timeout\": \"1h\"}'::jsonb, now(), now() + interval '1 day', now()
	FROM generate_series(1, 3000) i"
start_serve
get 1 '/models?limit=1000'
echo "pages: one page of 1,000 models with 60 KB payloads: serve's peak RSS $(hwm)"
get 8 '/models?limit=1000'
echo "pages: then 8 at once: serve's peak RSS $(hwm), CPU $(cpu) in all"
stop_serve
start_serve
python3 - "$addr" 200 >"$work/stalled" <<'PY'
import socket, sys, time
host, port = sys.argv[1].split(':')
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    s.connect((host, int(port)))
    s.sendall(b'GET /models?limit=1000 HTTP/1.1\r\nHost: x\r\n\r\n')
    socks.append(s)
time.sleep(5)
codes = {}
for s in socks:
    s.settimeout(5)
    head = s.recv(64).split(b' ')
    code = head[1].decode() if len(head) > 1 else 'none'
    codes[code] = codes.get(code, 0) + 1
    s.close()
print(', '.join('%s x %d' % kv for kv in sorted(codes.items())))
PY
echo "readers: 200 clients that do not read a page of 1,000: answered $(cat "$work/stalled"); serve's peak RSS $(hwm)"
stop_serve

fresh
python3 -c "import json; print(json.dumps({'model_id': 'nobody', 'attempt_uid': 'u1', 'outcome': 'failure', 'kind': 'boom', 'message': 'x' * 900000}), end='')" >"$work/outcome"
push 750 "$work/outcome" "${prefix}outcomes"
start_serve
for _ in $(seq 1 300); do
	[ "$(rcli LLEN "${prefix}outcomes")" = 0 ] && [ "$(rcli LLEN "${prefix}processing:$(hostname)")" = 0 ] && break
	sleep 0.2
done
echo "outcomes: 750 of 900 KB: $(rcli LLEN "${prefix}outcomes") still waiting, $(rcli LLEN "${prefix}processing:$(hostname)") taken and not applied"
echo "outcomes: serve's peak RSS $(hwm), Redis's peak memory $(rcli INFO memory | awk -F: '/^used_memory_peak_human/ {print $2}' | tr -d '\r')"
stop_serve

fresh
python3 -c "print('x' * 900000, end='')" >"$work/entry"
push 300 "$work/entry" "${prefix}dead"
start_serve
get 1 '/dead?limit=1000'
echo "dead letters: one page, 300 entries of 900 KB: serve's peak RSS $(hwm)"
get 4 '/dead?limit=1000'
echo "dead letters: then 4 at once: serve's peak RSS $(hwm), CPU $(cpu) in all"
stop_serve

fresh
python3 -c "import json; print(json.dumps({'model_id': 'm1', 'outcome': 'success', 'message': 'x' * 900000}), end='')" >"$work/malformed"
start_serve
push 1000 "$work/malformed" "${prefix}outcomes"
for _ in $(seq 1 300); do
	[ "$(rcli LLEN "${prefix}outcomes")" = 0 ] && break
	sleep 0.2
done
sleep 1
echo "flood: 1,000 malformed outcomes of 900 KB: $(rcli LLEN "${prefix}dead") dead letters, Redis uses $(rcli INFO memory | awk -F: '/^used_memory_human/ {print $2}' | tr -d '\r')"
stop_serve
