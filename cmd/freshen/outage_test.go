package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestE2ERedisOutageEvents kills the Redis of freshen serve (SIGKILL; it
// keeps its data in an append-only file synced at every write) and, while
// it is down, creates a model and triggers a running one: the API answers
// from PostgreSQL, and the events wait in the outbox. Once Redis is back
// on the same port, the create and trigger events appear in the events
// stream exactly once, as does every event published before the outage,
// and the superseded attempt's revocation key is set, so that its worker
// learns it is over.
func TestE2ERedisOutageEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rs := startRedis(t, "redis", "--save", "", "--appendonly", "yes", "--appendfsync", "always")
	rdb := rs.client()
	p := e.serve("outage", "--redis-url", "redis://"+rs.addr()+"/0")

	outbox := func(model, event string) int {
		return e.count(`SELECT count(*) FROM outbox, json_array_elements(events::json) ev
			WHERE ev->>'model_id' = $1 AND ev->>'event' = $2`, model, event)
	}
	published := func(model, typ string) int {
		n := 0
		for _, ev := range streamEvents(t, rdb, e.key("events")) {
			if ev[0] == typ && ev[1] == model {
				n++
			}
		}
		return n
	}
	get := func(id string) map[string]any {
		code, m := request(t, "GET", p.base+"/models/"+id, "")
		require.Equal(t, http.StatusOK, code, m)
		return m
	}

	// A running attempt, whose job no worker takes; its events are out.
	code, body := request(t, "PUT", p.base+"/models/running", `{"queue": "nobody", "trigger": true}`)
	require.Equal(t, http.StatusCreated, code, body)
	var superseded string
	waitFor(t, 10*time.Second, "the attempt to start and its events to be published", func() bool {
		uid, _ := get("running")["attempt_uid"].(string)
		superseded = uid
		return uid != "" && published("running", "started") == 1 && e.count(`SELECT count(*) FROM outbox`) == 0
	})

	// Redis dies; PostgreSQL still takes writes, with their events.
	rs.kill()
	code, body = request(t, "PUT", p.base+"/models/created", `{"queue": "nobody"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = request(t, "POST", p.base+"/models/running/trigger", ``)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, true, body["changed"], body)
	require.Nil(t, get("running")["attempt_uid"], "the trigger dropped the running attempt; no new one starts without Redis")
	require.Equal(t, 1, outbox("created", "create"))
	require.Equal(t, 1, outbox("running", "trigger"))
	require.False(t, p.ready(), "/readyz answers 200 without Redis")
	// The publisher tries them and fails, and they stay (a pass that
	// started before the trigger committed may fail first; the next one
	// took both events).
	failed := func() int { return strings.Count(p.log.String(), `"msg":"publish pass failed"`) }
	before := failed()
	waitFor(t, 20*time.Second, "two failed publish passes", func() bool {
		return failed() >= before+2 || e.count(`SELECT count(*) FROM outbox`) == 0
	})
	require.Equal(t, 1, outbox("created", "create"), "the create event is still in the outbox")
	require.Equal(t, 1, outbox("running", "trigger"), "the trigger event is still in the outbox")

	// Redis comes back: the events are published, the revocation is set.
	rs.restart()
	waitFor(t, 20*time.Second, "the outbox to be published", func() bool {
		return e.count(`SELECT count(*) FROM outbox`) == 0 && published("created", "create") > 0 &&
			published("running", "trigger") > 0
	})
	reason, err := rdb.Get(ctx, e.key("revoked:"+superseded)).Result()
	require.NoError(t, err, "revocation of the superseded attempt %s", superseded)
	require.Equal(t, "superseded", reason)
	ttl, err := rdb.PTTL(ctx, e.key("revoked:"+superseded)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "the revocation expires by itself")

	// The trigger's new attempt starts once Redis is back.
	var next string
	waitFor(t, 20*time.Second, "the new attempt to start", func() bool {
		next, _ = get("running")["attempt_uid"].(string)
		return next != "" && published("running", "started") == 2
	})
	require.NotEqual(t, superseded, next)
	require.ErrorIs(t, rdb.Get(ctx, e.key("revoked:"+next)).Err(), redis.Nil, "the new attempt is not revoked")

	// Exactly once: each of the events appears once in the stream, before
	// the outage and after.
	entries := streamEvents(t, rdb, e.key("events"))
	seen := map[[3]string]int{}
	for _, ev := range entries {
		seen[ev]++
	}
	for ev, n := range seen {
		require.Equal(t, 1, n, "published %d times: %v", n, ev)
	}
	want := map[string]int{"running create": 1, "running started": 2, "running trigger": 1, "created create": 1}
	got := map[string]int{}
	for _, ev := range entries {
		got[ev[1]+" "+ev[0]]++
		var decoded map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev[2]), &decoded))
		require.Equal(t, ev[1], decoded["model_id"], ev)
	}
	require.Equal(t, want, got)
	require.True(t, p.running())
	waitFor(t, 10*time.Second, "/readyz to answer 200", p.ready)
	p.stop()
}
