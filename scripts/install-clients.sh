#!/usr/bin/env bash
# install-clients.sh installs what the worker clients in clients/ need for
# their tests, when it is missing:
#
#   scripts/install-clients.sh
#
# Debian's python3-redis (for clients/python, run with /usr/bin/python3),
# php-cli and php-redis (for clients/php), jq (for the conformance
# handler that freshen work runs in its test), and the TypeScript client's npm
# packages from its lock file (npm ci in clients/typescript, then its build).
# It needs root for apt-get; make test runs it. It never fails the build:
# whatever it cannot install, it says so, and the tests of that client skip,
# saying why.
set -uo pipefail

log() { echo "install-clients: $*" >&2; }

root=$(cd "$(dirname "$0")/.." && pwd)

missing=()
/usr/bin/python3 -c 'import redis' 2>/dev/null || missing+=(python3-redis)
command -v php >/dev/null || missing+=(php-cli)
command -v jq >/dev/null || missing+=(jq)
if ! command -v php >/dev/null || ! php -m 2>/dev/null | grep -qx redis; then
	missing+=(php-redis)
fi
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "missing ${missing[*]} and not root: install them with apt-get"
	else
		log "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		if ! apt-get update -qq >/dev/null ||
			! apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null; then
			log "apt-get could not install ${missing[*]}"
		fi
	fi
fi

ts="$root/clients/typescript"
if command -v npm >/dev/null; then
	if [ ! -d "$ts/node_modules" ] || [ "$ts/package-lock.json" -nt "$ts/node_modules/.package-lock.json" ]; then
		log "npm ci in clients/typescript"
		(cd "$ts" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || log "npm ci failed"
	fi
	(cd "$ts" && npm run --silent build >/dev/null) || log "building the TypeScript client failed"
else
	log "npm missing: the TypeScript client's tests skip"
fi
exit 0
