#!/usr/bin/env bash
# throughput.sh measures this client's throughput beside the Go SDK's with
# the conformance kit's throughput case (a no-op handler), on the Redis of
# REDIS_URL, alternating the two workers ROUNDS times, and prints each run
# (with the load average then), then the medians and their ratio:
#
#   scripts/with-servers.sh clients/typescript/scripts/throughput.sh [ROUNDS [JOBS]]
#
# ROUNDS defaults to 5, JOBS (--bench) to 2000, as in make test. The Go SDK's
# worker is the test binary of clients/ (FRESHEN_TEST_WORKER=go); the
# client must be built (npm run build).
set -euo pipefail
rounds=${1:-5}
jobs=${2:-2000}
root=$(cd "$(dirname "$0")/../../.." && pwd)
: "${REDIS_URL:?REDIS_URL must be set: run under scripts/with-servers.sh}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/freshen" ./cmd/freshen
go test -c -o "$tmp/clients.test" ./clients
for _ in $(seq "$rounds"); do
	for w in go typescript; do
		if [ "$w" = go ]; then
			cmd=("$tmp/clients.test")
		else
			cmd=(node clients/typescript/examples/conformance.mjs)
		fi
		line=$(FRESHEN_TEST_WORKER=go "$tmp/freshen" conformance --bench "$jobs" --cases throughput -- "${cmd[@]}" | grep throughput)
		echo "$w load $(cut -d' ' -f1 /proc/loadavg): ${line#*: }"
	done
done | tee "$tmp/runs"
# Each line: "<worker> load <l>: <n> jobs in <t>: <c> cycles/s, worker CPU <d>ms per 1,000 jobs".
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for w in go typescript; do
	c=$(grep "^$w " "$tmp/runs" | awk '{ print $(NF-7) }' | median)
	d=$(grep "^$w " "$tmp/runs" | awk '{ print $(NF-3) + 0 }' | median)
	printf '%-10s median %5s cycles/s, worker CPU %3s ms per 1,000 jobs\n' "$w" "$c" "$d"
	eval "c_$w=$c d_$w=$d"
done
awk -v cg="$c_go" -v ct="$c_typescript" -v dg="$d_go" -v dt="$d_typescript" \
	'BEGIN { printf "typescript/go: %.2f of the cycles/s, %.2f of the CPU per job\n", ct / cg, dt / dg }'
