package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func outcomeJSON(t testing.TB, o refresh.Outcome) string {
	b, err := json.Marshal(o)
	require.NoError(t, err)
	return string(b)
}

func TestNew(t *testing.T) {
	t.Parallel()
	b := newMini(t)
	_, err := New(b.client, Options{})
	require.EqualError(t, err, "queue: consumer: must not be empty")
	_, err = New(nil, Options{Consumer: "c"})
	require.EqualError(t, err, "queue: client: must not be nil")
	r, err := New(b.client, Options{Consumer: "c"})
	require.NoError(t, err)
	require.Equal(t, "freshen", r.opt.Prefix)
	require.EqualValues(t, DefaultEventsMaxLen, r.opt.EventsMaxLen)
}

func TestPush(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		jobs := []refresh.Job{
			{ModelID: "m1", AttemptUID: "u1", AttemptNo: 1, Queue: "thumbs", Payload: json.RawMessage(`{"x":1}`), StartedAt: t0, DeadlineAt: t0.Add(time.Hour)},
			{ModelID: "m2", AttemptUID: "u2", AttemptNo: 1, Queue: "tables", StartedAt: t0, DeadlineAt: t0.Add(time.Hour)},
			{ModelID: "m3", AttemptUID: "u3", AttemptNo: 2, Queue: "thumbs", StartedAt: t0, DeadlineAt: t0.Add(time.Hour)},
			{ModelID: "m4", AttemptUID: "u4", AttemptNo: 1, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)},
		}
		require.NoError(t, r.Push(ctx, jobs))
		require.NoError(t, r.Push(ctx, nil))

		// FIFO: the first pushed is at the right end, where workers pop.
		thumbs := b.lrange(t, b.keys.jobsKey("thumbs"))
		require.Len(t, thumbs, 2)
		var got refresh.Job
		require.NoError(t, json.Unmarshal([]byte(thumbs[1]), &got))
		require.Equal(t, jobs[0], got)
		require.NoError(t, json.Unmarshal([]byte(thumbs[0]), &got))
		require.Equal(t, "m3", got.ModelID)
		require.Len(t, b.lrange(t, b.keys.jobsKey("tables")), 1)
		require.Len(t, b.lrange(t, b.keys.jobsKey(DefaultQueue)), 1)

		// The wire format's field names.
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(thumbs[1]), &fields))
		require.Equal(t, map[string]any{
			"model_id": "m1", "attempt_uid": "u1", "attempt_no": 1.0, "queue": "thumbs",
			"payload": map[string]any{"x": 1.0}, "started_at": "2026-03-02T06:00:00Z",
			"deadline_at": "2026-03-02T07:00:00Z",
		}, fields)
		require.EqualValues(t, 4, r.Stats().Pushed)
	})
}

func TestReceiveAck(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		no := false
		outs := []refresh.Outcome{
			{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess},
			{ModelID: "m2", AttemptUID: "u2", Type: refresh.OutcomeFailure, Kind: "validation", Message: "bad", Retryable: &no, UserMessage: "Fix it"},
			{ModelID: "m3", AttemptUID: "u3", Type: refresh.OutcomeStatus, Message: "50%"},
		}
		for _, o := range outs {
			b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		}

		got, err := r.Receive(ctx, 2, 0)
		require.NoError(t, err)
		require.Equal(t, outs[:2], bare(t, got)) // oldest first
		require.Len(t, b.lrange(t, b.keys.processingKey("s1")), 2)

		got, err = r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, outs[2:], bare(t, got))
		require.Len(t, b.lrange(t, b.keys.processingKey("s1")), 3)
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))

		got, err = r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Empty(t, got)

		require.NoError(t, r.Ack(ctx, nil))
		require.Empty(t, b.lrange(t, b.keys.processingKey("s1")))
		st := r.Stats()
		require.EqualValues(t, 3, st.Received)
		require.EqualValues(t, 3, st.Acked)

		// The consumer is registered as seen at the clock's time.
		score, err := b.client.ZScore(ctx, b.keys.consumersKey(), "s1").Result()
		require.NoError(t, err)
		require.Equal(t, float64(t0.UnixMilli()), score)
	})
}

func TestReceiveBlocks(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))

		// Nothing comes: it returns empty once the block is over.
		got, err := r.Receive(ctx, 10, 50*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, got)

		// Outcomes pushed while it waits are returned.
		type result struct {
			outs []refresh.Outcome
			err  error
		}
		done := make(chan result)
		go func() {
			outs, err := r.Receive(ctx, 10, 10*time.Second)
			done <- result{outs, err}
		}()
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		res := <-done
		require.NoError(t, res.err)
		require.Equal(t, []refresh.Outcome{o}, bare(t, res.outs))
		require.Len(t, b.lrange(t, b.keys.processingKey("s1")), 1)
	})
}

// Every outcome the database could not store, or that breaks the wire
// format, is set aside with a reason naming the field; the good ones around
// it are received.
func TestReceiveDeadLetters(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		r := b.newRedis(t, "s1", clock)
		good := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		cases := []struct{ msg, reason string }{
			{"not json", "invalid json: invalid character 'o' in literal null (expecting 'u')"},
			{`["m1"]`, "must be a JSON object, got an array"},
			{`{"model_id":"m1","outcome":"success"}`, "attempt_uid: missing"},
			{`{"attempt_uid":"u1","outcome":"success"}`, "model_id: missing"},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"done"}`, `outcome: must be success, failure, status or snooze, got "done"`},
			{`{"model_id":"m1","attempt_uid":"u1"}`, "outcome: missing"},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"failure","retryable":"no"}`, `retryable: must be true or false, got "no"`},
			{`{"model_id":7,"attempt_uid":"u1","outcome":"success"}`, "model_id: must be a string, got 7"},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":{"text":"50%"}}`, `message: must be a string, got {"text":"50%"}`},
			// What PostgreSQL refuses: NUL and invalid UTF-8, in any field.
			{`{"model_id":"a\u0000b","attempt_uid":"x","outcome":"success"}`, `model_id: must not contain NUL (\u0000)`},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":"50\u0000%"}`, `message: must not contain NUL (\u0000)`},
			{"{\"model_id\":\"m1\",\"attempt_uid\":\"u1\",\"outcome\":\"failure\",\"kind\":\"x\xff\"}", "kind: must be valid UTF-8"},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"failure","user_message":"\ud800!"}`, `user_message: must be valid UTF-8 (lone surrogate \ud800)`},
			// Duplicated names, which decoders in other languages read
			// differently.
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"success","attempt_uid":"u2"}`, "attempt_uid: duplicate field"},
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"success","x":1,"x":2}`, "x: duplicate field"},
			// Over the limits.
			{`{"model_id":"m1","attempt_uid":"u1","outcome":"failure","kind":"` + strings.Repeat("k", 65) + `"}`, "kind: must be at most 64 bytes, got 65"},
			{`{"model_id":"` + strings.Repeat("m", 201) + `","attempt_uid":"u1","outcome":"success"}`, "model_id: must be at most 200 bytes, got 201"},
		}
		for _, c := range cases {
			b.lpush(t, b.keys.outcomesKey(), c.msg)
		}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, good))

		got, err := r.Receive(ctx, 100, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{good}, bare(t, got))
		require.Equal(t, []string{outcomeJSON(t, good)}, b.lrange(t, b.keys.processingKey("s1")))

		dead := b.lrange(t, b.keys.deadKey())
		require.Len(t, dead, len(cases))
		for i, c := range cases {
			e := readDead(t, dead[len(dead)-1-i])
			require.Equal(t, t0, e.At)
			require.Equal(t, c.reason, e.Reason, c.msg)
			require.Equal(t, strings.ToValidUTF8(c.msg, "\uFFFD"), e.Message)
		}
		require.EqualValues(t, len(cases), r.Stats().DeadLettered)
		require.EqualValues(t, 1, r.Stats().Received)
	})
}

// readDead decodes a dead-letter entry.
func readDead(t *testing.T, raw string) deadLetter {
	t.Helper()
	var e deadLetter
	require.NoError(t, json.Unmarshal([]byte(raw), &e))
	return e
}

// A worker's long texts are cut on a character boundary with a marker; a
// message over the size limit is set aside undecoded, its beginning kept.
func TestReceiveLimits(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		long := strings.Repeat("é", 5000) // 10,000 bytes
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeFailure, Kind: "x",
			Message: long, UserMessage: "short"}
		status := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeStatus, Message: "ok " + long}
		huge := `{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":"` + strings.Repeat("x", 5<<20) + `"}`
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o), huge, outcomeJSON(t, status))

		got, err := r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Len(t, got[0].Message, 4095) // 2-byte characters: one byte is left unused
		require.Equal(t, strings.Repeat("é", (4096-len(TruncatedMarker))/2)+TruncatedMarker, got[0].Message)
		require.Equal(t, "short", got[0].UserMessage)
		require.Equal(t, "ok "+strings.Repeat("é", (4096-3-len(TruncatedMarker))/2)+TruncatedMarker, got[1].Message)
		require.EqualValues(t, 2, r.Stats().Truncated)

		dead := b.lrange(t, b.keys.deadKey())
		require.Len(t, dead, 1)
		e := readDead(t, dead[0])
		require.Equal(t, fmt.Sprintf("too large: must be at most 1048576 bytes, got %d", len(huge)), e.Reason)
		require.Equal(t, huge[:4096-len(TruncatedMarker)]+TruncatedMarker, e.Message)
		require.Len(t, b.lrange(t, b.keys.processingKey("s1")), 2)
	})
}

// TestReceiveBytesBound: a receive takes outcomes in order while they add
// up to 8 messages at the size limit, and always one; small ones, up to
// the count asked for, across the script's reads of 100.
func TestReceiveBytesBound(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newSmallRedis(t, "s1")
		sized := func(i, size int) string {
			o := outcomeJSON(t, refresh.Outcome{ModelID: fmt.Sprintf("m%d", i), AttemptUID: "u", Type: refresh.OutcomeStatus})
			return o[:len(o)-1] + `,"message":"` + strings.Repeat("x", size-len(o)-13) + `"}`
		}
		var msgs []string
		for i := range 250 {
			msgs = append(msgs, sized(i, 100))
		}
		b.lpush(t, b.keys.outcomesKey(), msgs...)
		ids := func(r *Redis, max int) []string {
			t.Helper()
			got, err := r.Receive(ctx, max, 0)
			require.NoError(t, err)
			out := []string{}
			for _, o := range got {
				out = append(out, o.ModelID)
			}
			require.NoError(t, r.Ack(ctx, nil))
			return out
		}
		want := func(from, to int) []string {
			var out []string
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("m%d", i))
			}
			return out
		}
		require.Equal(t, want(0, 250), ids(b.newRedis(t, "s2", refresh.NewVirtualClock(t0)), 1000), "in order across reads of 100")

		msgs = []string{sized(1000, 9000)}
		for i := range 20 {
			msgs = append(msgs, sized(i, 1000))
		}
		b.lpush(t, b.keys.outcomesKey(), msgs...)
		require.Empty(t, ids(r, 100), "the first whatever its size (and dead-lettered: too large)")
		require.Len(t, b.lrange(t, b.keys.deadKey()), 1)
		require.Equal(t, want(0, 8), ids(r, 100), "8 KiB: 8 messages of 1,000 bytes")
		require.Equal(t, want(8, 16), ids(r, 100))
		require.Equal(t, want(16, 18), ids(r, 2), "the count still holds")
		require.Equal(t, want(18, 20), ids(r, 100))
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
	})
}

func TestRecoverSameConsumer(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		var outs []refresh.Outcome
		for i := range 5 {
			o := refresh.Outcome{ModelID: fmt.Sprint("m", i), AttemptUID: fmt.Sprint("u", i), Type: refresh.OutcomeSuccess}
			outs = append(outs, o)
			b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		}

		// The first life receives three and dies before Ack.
		first := b.newRedis(t, "s1", clock)
		got, err := first.Receive(ctx, 3, 0)
		require.NoError(t, err)
		require.Equal(t, outs[:3], bare(t, got))

		// The next life, same id, gets them again, in order, then the rest.
		second := b.newRedis(t, "s1", clock)
		got, err = second.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, outs, bare(t, got))
		require.EqualValues(t, 3, second.Stats().Recovered)
		require.NoError(t, second.Ack(ctx, nil))
		require.Empty(t, b.lrange(t, b.keys.processingKey("s1")))
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
	})
}

func TestRecoverDeadConsumer(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		o1 := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		o2 := refresh.Outcome{ModelID: "m2", AttemptUID: "u2", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o1), outcomeJSON(t, o2))

		dead := b.newRedis(t, "a", clock)
		got, err := dead.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 2)

		// While "a" counts as alive, "b" leaves its outcomes alone.
		other := b.newRedis(t, "b", clock)
		clock.Advance(DefaultConsumerTimeout - time.Second)
		got, err = other.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Empty(t, got)
		n, err := other.Recover(ctx)
		require.NoError(t, err)
		require.Zero(t, n)

		// Once "a" has not been seen for ConsumerTimeout, they come back.
		clock.Advance(2 * time.Second)
		n, err = other.Recover(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		got, err = other.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o1, o2}, bare(t, got))
		require.Empty(t, b.lrange(t, b.keys.processingKey("a")))
		members, err := b.client.ZRange(ctx, b.keys.consumersKey(), 0, -1).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, members)
	})
}

func TestReceiveRecoversPeriodically(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		dead := b.newRedis(t, "a", clock)
		_, err := dead.Receive(ctx, 10, 0)
		require.NoError(t, err)

		other := b.newRedis(t, "b", clock)
		got, err := other.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Empty(t, got)
		clock.Advance(DefaultConsumerTimeout + time.Second)
		got, err = other.Receive(ctx, 10, 0) // looks for dead consumers on its own
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o}, bare(t, got))
	})
}

func TestPublish(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		events := []refresh.Event{
			{At: t0, ModelID: "m1", Type: refresh.EventStart, AttemptNo: 1, AttemptUID: "u1", DeadlineAt: t0.Add(time.Hour)},
			{At: t0, ModelID: "m1", Type: refresh.EventFailure, Decision: refresh.DecisionRetry, Kind: "http_503", Message: "503", AttemptNo: 1},
			{At: t0, ModelID: "m1", Type: refresh.EventTimeout, Decision: refresh.DecisionDisable, Reason: "Gave up", Disabled: true},
			{At: t0, ModelID: "m2", Type: refresh.EventTrigger},
		}
		require.NoError(t, r.Publish(ctx, events))
		entries, err := b.client.XRange(ctx, b.keys.eventsKey(), "-", "+").Result()
		require.NoError(t, err)
		var types []string
		for _, e := range entries {
			types = append(types, e.Values["type"].(string))
		}
		require.Equal(t, []string{"started", "failed", "retry_scheduled", "failed", "disabled", "trigger"}, types)
		var got refresh.Event
		require.NoError(t, json.Unmarshal([]byte(entries[4].Values["event"].(string)), &got))
		require.Equal(t, events[2], got)
		require.Equal(t, "m1", entries[4].Values["model_id"])
		require.EqualValues(t, 6, r.Stats().Published)

		// An event read back from a store carries its JSON: it is sent as
		// it is (here with spaces json.Marshal would not write).
		raw := `{"at": "2026-03-02T06:00:00Z", "model_id": "m3", "event": "success", "attempt_no": 1, "disabled": false}`
		require.NoError(t, r.Publish(ctx, []refresh.Event{{At: t0, ModelID: "m3", Type: refresh.EventSuccess, AttemptNo: 1, Raw: json.RawMessage(raw)}}))
		entries, err = b.client.XRange(ctx, b.keys.eventsKey(), "-", "+").Result()
		require.NoError(t, err)
		last := entries[len(entries)-1].Values
		require.Equal(t, map[string]any{"type": "succeeded", "model_id": "m3", "event": raw}, last)
	})
}

func TestEventsStreamBound(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r, err := New(b.client, Options{Prefix: b.prefix, Consumer: "s1", EventsMaxLen: 100, Clock: refresh.NewVirtualClock(t0), Logger: quiet})
		require.NoError(t, err)
		for i := range 10 {
			events := make([]refresh.Event, 100)
			for j := range events {
				events[j] = refresh.Event{At: t0, ModelID: fmt.Sprint("m", i*100+j), Type: refresh.EventStart}
			}
			require.NoError(t, r.Publish(ctx, events))
		}
		n, err := b.client.XLen(ctx, b.keys.eventsKey()).Result()
		require.NoError(t, err)
		// MAXLEN ~ trims whole stream nodes (100 entries by default), so the
		// stream may hold up to one node more than the bound.
		require.GreaterOrEqual(t, n, int64(100))
		require.LessOrEqual(t, n, int64(200))
	})
}

func TestCollectors(t *testing.T) {
	t.Parallel()
	b := newMini(t)
	r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
	b.lpush(t, b.keys.outcomesKey(), "garbage")
	_, err := r.Receive(context.Background(), 10, 0)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	for _, c := range r.Collectors() {
		require.NoError(t, reg.Register(c))
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, f := range families {
		values[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
	}
	require.Equal(t, 1.0, values["freshen_queue_outcomes_dead_lettered_total"])
	require.Len(t, values, 8)
}

// TestReceiveAfterLostReply checks that outcomes moved by a Receive whose
// reply was lost are given back by the next Receive, or by Ack, which
// acknowledges only what was delivered.
func TestReceiveAfterLostReply(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		o1 := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		o2 := refresh.Outcome{ModelID: "m2", AttemptUID: "u2", Type: refresh.OutcomeSuccess}
		o3 := refresh.Outcome{ModelID: "m3", AttemptUID: "u3", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o1))
		got, err := r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o1}, bare(t, got))

		// A move happens on the server but its reply is lost.
		b.lpush(t, b.keys.processingKey("s1"), outcomeJSON(t, o2))
		r.dirty = true
		// Ack acknowledges o1 only: o2 was never delivered.
		require.NoError(t, r.Ack(ctx, nil))
		require.Empty(t, b.lrange(t, b.keys.processingKey("s1")))
		require.Equal(t, []string{outcomeJSON(t, o2)}, b.lrange(t, b.keys.outcomesKey()))
		require.EqualValues(t, 1, r.Stats().Acked)

		// The same before the next Receive: what was delivered stays, what
		// was not is delivered now.
		got, err = r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o2}, bare(t, got))
		b.lpush(t, b.keys.processingKey("s1"), outcomeJSON(t, o3))
		r.dirty = true
		got, err = r.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o3}, bare(t, got))
		require.NoError(t, r.Ack(ctx, nil))
		require.Empty(t, b.lrange(t, b.keys.processingKey("s1")))
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
		require.EqualValues(t, 3, r.Stats().Acked)

		// A Receive that fails leaves the next one to sort things out.
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = r.Receive(canceled, 10, 0)
		require.Error(t, err)
	})
}

// Jobs of several queues, interleaved and more than one LPUSH carries: each
// queue's list pops them in the order given.
func TestPushOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		queues := []string{"thumbs", "tables", ""}
		var jobs []refresh.Job
		want := map[string][]string{}
		for i := range 2*pushChunk + 7 {
			q := queues[i%len(queues)]
			if i > pushChunk {
				q = "thumbs"
			}
			id := fmt.Sprintf("m%05d", i)
			jobs = append(jobs, refresh.Job{ModelID: id, AttemptUID: "u" + id, AttemptNo: 1, Queue: q, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)})
			want[b.keys.jobsKey(q)] = append(want[b.keys.jobsKey(q)], id)
		}
		require.NoError(t, r.Push(ctx, jobs))
		for k, ids := range want {
			list := b.lrange(t, k)
			require.Len(t, list, len(ids))
			for i, id := range ids {
				var got refresh.Job
				require.NoError(t, json.Unmarshal([]byte(list[len(list)-1-i]), &got))
				require.Equal(t, id, got.ModelID, "key %s, job %d", k, i)
			}
		}
		require.EqualValues(t, len(jobs), r.Stats().Pushed)
	})
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
		require.NoError(t, r.Revoke(ctx, nil))
		require.NoError(t, r.Revoke(ctx, []refresh.Revocation{
			{ModelID: "m1", AttemptUID: "u1", Reason: refresh.RevokedSuperseded, DeadlineAt: t0.Add(time.Hour)},
			{ModelID: "m2", AttemptUID: "u2", Reason: refresh.RevokedDeleted, DeadlineAt: t0.Add(-time.Hour)},
			{ModelID: "m3", AttemptUID: "u3", DeadlineAt: t0.Add(time.Minute)},
			{ModelID: "m4"},
		}))
		for uid, want := range map[string]struct {
			reason string
			ttl    time.Duration
		}{
			"u1": {"superseded", time.Hour + time.Minute},
			"u2": {"deleted", time.Minute},
			"u3": {"revoked", 2 * time.Minute},
		} {
			v, err := b.client.Get(ctx, b.keys.revokedKey(uid)).Result()
			require.NoError(t, err)
			require.Equal(t, want.reason, v)
			ttl, err := b.client.PTTL(ctx, b.keys.revokedKey(uid)).Result()
			require.NoError(t, err)
			require.InDelta(t, want.ttl.Seconds(), ttl.Seconds(), 5, uid)
		}
		n, err := b.client.Exists(ctx, b.keys.revokedKey("")).Result()
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
