#!/bin/sh
# sync-lua.sh copies the shared Lua scripts (queue/lua/*.lua, the ones the Go
# SDK embeds) into each client's package, which ships them: run it after
# changing a script. The Go test in clients/ fails while a copy differs.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
for dest in python/src/freshen/lua typescript/lua php/lua; do
	mkdir -p "$root/clients/$dest"
	rm -f "$root/clients/$dest"/*.lua
	cp "$root"/queue/lua/*.lua "$root/clients/$dest/"
done
