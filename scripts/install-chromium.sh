#!/usr/bin/env bash
# install-chromium.sh installs Debian's headless Chromium (and a sans-serif
# font family) for the dashboard's browser tests, when it is missing:
#
#   scripts/install-chromium.sh
#
# It does nothing when chromium is already on PATH, and needs root to
# install (apt-get); scripts/with-servers.sh runs it. It exits non-zero
# when Chromium is missing and cannot be installed; the browser tests then
# skip, saying so.
set -uo pipefail

log() { echo "install-chromium: $*" >&2; }

if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	log "chromium missing and not root: install it (apt-get install chromium fonts-dejavu-core)"
	exit 1
fi
log "installing chromium"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq >/dev/null ||
	! apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core </dev/null >/dev/null; then
	log "apt-get could not install chromium"
	exit 1
fi
