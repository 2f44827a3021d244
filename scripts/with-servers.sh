#!/usr/bin/env bash
# with-servers.sh runs a command against a throwaway PostgreSQL 15 and Redis.
#
#   scripts/with-servers.sh go test -count=1 ./...
#
# It starts both servers on free loopback ports in a fresh temporary
# directory, creates the database "freshen", starts PgBouncer in transaction
# mode in front of PostgreSQL (every database name passes through), exports
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:PORT/freshen?sslmode=disable
#   POOLED_DATABASE_URL=postgres://postgres@127.0.0.1:BOUNCER_PORT/freshen?sslmode=disable
#   REDIS_URL=redis://127.0.0.1:PORT/0
#
# runs the command, then stops the servers and removes the directory, also
# when the command fails or the script is interrupted. It exits with the
# command's status (or 1 if a server could not be started, printing its log).
#
# It works as root (PostgreSQL then runs as the "postgres" user) and as a
# normal user. When redis-server is missing and the script runs as root, it
# installs it with apt-get; likewise PostgreSQL 15, PgBouncer, and Chromium
# for the dashboard's browser tests (scripts/install-chromium.sh). PgBouncer
# runs as the "postgres" user when we are root, with its defaults otherwise
# (no ignore_startup_parameters: a client that sends a session setting at
# connection is refused, as by most poolers in production); a normal user
# without pgbouncer gets no POOLED_DATABASE_URL, and the pooled tests skip.
#
# PostgreSQL runs with fsync, synchronous_commit and full_page_writes off:
# fast for tests, but not durable, and commits cost far less than in
# production. Set WITH_SERVERS_DURABLE=1 to keep PostgreSQL's durable
# defaults (fsync, synchronous_commit and full_page_writes on), as make
# bench does: Freshen's no-loss promise assumes synchronous_commit=on.
#
# Environment:
#   PG_BIN                PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
#   WITH_SERVERS_LOGS     if 1, print both server logs when the command is done
#   WITH_SERVERS_DURABLE  if 1, run PostgreSQL with durable settings
#   WITH_SERVERS_PG_CONF  extra postgresql.conf lines, e.g. "shared_preload_libraries = 'pg_stat_statements'"
set -uo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "with-servers: $*" >&2; }

if [ $# -eq 0 ]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

tmp=""
pg_started=""
redis_pid=""
bouncer_started=""

# as_pg runs a PostgreSQL server command as the user that owns the cluster:
# "postgres" when we are root (initdb and postgres refuse to run as root).
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

print_log() { # name file
	if [ -f "$2" ]; then
		echo "----- $1 log ($2) -----" >&2
		tail -n 200 "$2" >&2
		echo "----- end of $1 log -----" >&2
	fi
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ "${WITH_SERVERS_LOGS:-}" = 1 ] && [ -n "$tmp" ]; then
		print_log postgres "$tmp/pg/postgres.log"
		print_log redis "$tmp/redis/redis.log"
		print_log pgbouncer "$tmp/pgbouncer/pgbouncer.log"
	fi
	if [ -n "$bouncer_started" ] && [ -f "$tmp/pgbouncer/pgbouncer.pid" ]; then
		kill "$(cat "$tmp/pgbouncer/pgbouncer.pid")" 2>/dev/null
	fi
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null
		wait "$redis_pid" 2>/dev/null
	fi
	if [ -n "$pg_started" ]; then
		as_pg "$PG_BIN/pg_ctl" -D "$tmp/pg/data" -m immediate -w stop >/dev/null 2>&1 ||
			log "could not stop PostgreSQL in $tmp/pg/data"
	fi
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT

# on_signal passes a signal on to the command, waits for it, and exits, which
# runs cleanup.
cmd_pid=""
on_signal() { # signal status
	if [ -n "$cmd_pid" ]; then
		kill -"$1" "$cmd_pid" 2>/dev/null
		wait "$cmd_pid" 2>/dev/null
	fi
	exit "$2"
}
trap "on_signal INT 130" INT
trap "on_signal TERM 143" TERM

# apt_install installs Debian packages, non-interactively, when we are root.
apt_install() {
	if [ "$(id -u)" -ne 0 ]; then
		log "$* missing and not root: install it (apt-get install $*)"
		return 1
	fi
	log "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null &&
		apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

if [ ! -x "$PG_BIN/postgres" ]; then
	apt_install postgresql-15 || exit 1
fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	apt_install redis-server redis-tools || exit 1
fi
if ! command -v pgbouncer >/dev/null && [ "$(id -u)" -eq 0 ]; then
	apt_install pgbouncer || log "no pgbouncer: the pooled tests will be skipped"
fi
# Headless Chromium for the dashboard's browser tests; they skip without it.
"$(dirname "$0")/install-chromium.sh" || log "no chromium: the browser tests will be skipped"
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
	log "running as root but there is no postgres user to run PostgreSQL"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/freshen-servers.XXXXXX") || exit 1
chmod 755 "$tmp"
mkdir -p "$tmp/pg" "$tmp/redis" "$tmp/pgbouncer"
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$tmp/pg" "$tmp/pgbouncer"
fi

# free_port prints a loopback port nothing listens on. The server may still
# lose a race for it, so callers retry on "address in use".
free_port() {
	local port i
	for i in $(seq 50); do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	log "no free port found"
	return 1
}

addr_in_use() { grep -qiE 'address already in use|could not bind|could not create any TCP/IP sockets' "$1" 2>/dev/null; }

# PostgreSQL.
if ! as_pg "$PG_BIN/initdb" -D "$tmp/pg/data" -U postgres --auth=trust \
	--encoding=UTF8 --locale=C.UTF-8 >"$tmp/pg/initdb.log" 2>&1; then
	log "initdb failed"
	print_log initdb "$tmp/pg/initdb.log"
	exit 1
fi
if [ "${WITH_SERVERS_DURABLE:-}" = 1 ]; then
	durability="fsync = on
synchronous_commit = on
full_page_writes = on"
	log "PostgreSQL with durable settings (fsync, synchronous_commit, full_page_writes on)"
else
	durability="fsync = off
synchronous_commit = off
full_page_writes = off"
fi
cat >>"$tmp/pg/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$tmp/pg'
$durability
max_connections = 200
shared_buffers = 128MB
max_wal_size = 1GB
log_min_messages = warning
${WITH_SERVERS_PG_CONF:-}
EOF
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$tmp/pg/data/postgresql.conf"
fi

pg_port=""
for attempt in 1 2 3 4 5; do
	port=$(free_port) || exit 1
	: >"$tmp/pg/postgres.log"
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$tmp/pg/postgres.log"
	fi
	if as_pg "$PG_BIN/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/postgres.log" \
		-o "-p $port" -w -t 60 start >/dev/null 2>&1; then
		pg_started=1
		pg_port=$port
		break
	fi
	if ! addr_in_use "$tmp/pg/postgres.log"; then
		break
	fi
	log "PostgreSQL lost port $port, retrying ($attempt)"
done
if [ -z "$pg_port" ]; then
	log "PostgreSQL did not start"
	print_log postgres "$tmp/pg/postgres.log"
	exit 1
fi
ready=""
for i in $(seq 120); do
	if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -U postgres; then
		ready=1
		break
	fi
	sleep 0.25
done
if [ -z "$ready" ] || ! "$PG_BIN/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres freshen; then
	log "PostgreSQL does not accept connections on port $pg_port"
	print_log postgres "$tmp/pg/postgres.log"
	exit 1
fi

# Redis.
redis_port=""
for attempt in 1 2 3 4 5; do
	port=$(free_port) || exit 1
	cat >"$tmp/redis/redis.conf" <<EOF
port $port
bind 127.0.0.1
dir $tmp/redis
save ""
appendonly no
daemonize no
logfile ""
EOF
	redis-server "$tmp/redis/redis.conf" >"$tmp/redis/redis.log" 2>&1 </dev/null &
	redis_pid=$!
	ready=""
	for i in $(seq 100); do
		if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
			ready=1
			break
		fi
		if ! kill -0 "$redis_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [ -n "$ready" ]; then
		redis_port=$port
		break
	fi
	kill "$redis_pid" 2>/dev/null
	wait "$redis_pid" 2>/dev/null
	redis_pid=""
	if ! addr_in_use "$tmp/redis/redis.log"; then
		break
	fi
	log "Redis lost port $port, retrying ($attempt)"
done
if [ -z "$redis_port" ]; then
	log "Redis did not start"
	print_log redis "$tmp/redis/redis.log"
	exit 1
fi

# PgBouncer, in transaction mode: a server connection is a client's for one
# transaction only. Pools are per database, and each test has its own.
bouncer_port=""
if command -v pgbouncer >/dev/null; then
	echo '"postgres" ""' >"$tmp/pgbouncer/userlist.txt"
	for attempt in 1 2 3 4 5; do
		port=$(free_port) || exit 1
		cat >"$tmp/pgbouncer/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$pg_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $tmp/pgbouncer/userlist.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
logfile = $tmp/pgbouncer/pgbouncer.log
pidfile = $tmp/pgbouncer/pgbouncer.pid
log_connections = 0
log_disconnections = 0
EOF
		: >"$tmp/pgbouncer/pgbouncer.log"
		if [ "$(id -u)" -eq 0 ]; then
			chown postgres: "$tmp/pgbouncer"/*
		fi
		if as_pg pgbouncer -d -q "$tmp/pgbouncer/pgbouncer.ini" 2>>"$tmp/pgbouncer/pgbouncer.log"; then
			bouncer_started=1
			for i in $(seq 100); do
				if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d freshen; then
					bouncer_port=$port
					break
				fi
				sleep 0.1
			done
		fi
		if [ -n "$bouncer_port" ] || ! addr_in_use "$tmp/pgbouncer/pgbouncer.log"; then
			break
		fi
		if [ -f "$tmp/pgbouncer/pgbouncer.pid" ]; then
			kill "$(cat "$tmp/pgbouncer/pgbouncer.pid")" 2>/dev/null
		fi
		log "PgBouncer lost port $port, retrying ($attempt)"
	done
	if [ -z "$bouncer_port" ]; then
		log "PgBouncer did not start"
		print_log pgbouncer "$tmp/pgbouncer/pgbouncer.log"
		exit 1
	fi
fi

export DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/freshen?sslmode=disable"
if [ -n "$bouncer_port" ]; then
	export POOLED_DATABASE_URL="postgres://postgres@127.0.0.1:$bouncer_port/freshen?sslmode=disable"
fi
export REDIS_URL="redis://127.0.0.1:$redis_port/0"

# The command runs in the background so that a signal sent to this script
# reaches the trap at once; it keeps stdin and the default SIGINT handling.
( trap - INT QUIT; exec "$@" ) <&0 &
cmd_pid=$!
wait "$cmd_pid"
