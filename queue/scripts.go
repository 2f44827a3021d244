package queue

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts live in lua/*.lua, one file each, with what they do, their
// keys and their arguments at their top. The clients in other languages
// (clients/) load copies of the same files, so that every worker moves
// messages with the same scripts.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// luaScript is the script of file lua/<name>.lua.
func luaScript(name string) *redis.Script {
	src, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("queue: " + err.Error()) // not reached: the files are embedded
	}
	return redis.NewScript(string(src))
}

var (
	// moveScript takes up to a number of messages, within a number of
	// bytes, from one list into another, and with a heartbeat set records
	// the taker as seen (lua/move.lua).
	moveScript = luaScript("move")
	// requeueScript gives back a taker's whole list (lua/requeue.lua).
	requeueScript = luaScript("requeue")
	// ackScript acknowledges a consumer's processing list (lua/ack.lua).
	ackScript = luaScript("ack")
	// settleScript sorts out a processing list (lua/settle.lua).
	settleScript = luaScript("settle")
	// deadScript sets messages aside as dead letters (lua/dead.lua).
	deadScript = luaScript("dead")
	// trimDeadScript bounds the dead-letter list (lua/trim_dead.lua).
	trimDeadScript = luaScript("trim_dead")
	// giveBackScript gives back messages a live taker holds but does not
	// work on (lua/give_back.lua).
	giveBackScript = luaScript("give_back")
)

// setAside runs deadScript on pairs of messages and entries, keeping at
// most max entries (0: no bound); it returns how many messages it moved and
// how many old entries it dropped.
func setAside(ctx context.Context, c redis.Scripter, taken, dead string, max int64, pairs []any) (moved, dropped int, err error) {
	args := append(make([]any, 0, len(pairs)+1), max)
	v, err := deadScript.Run(ctx, c, []string{taken, dead}, append(args, pairs...)...).Int64Slice()
	if err != nil || len(v) != 2 {
		return 0, 0, err
	}
	return int(v[0]), int(v[1]), nil
}
