package postgres

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// texts are strings that JSON escapes in every way json.Marshal does.
var texts = []string{
	"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\rret", "bell\a\b\f\x00\x1f", "<b>&amp;</b>",
	"café 日本", "line\u2028para\u2029", "bad \xff utf8 \xc3", "emoji 😀", strings.Repeat("long ", 300),
}

var zones = []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -(9*3600 + 30*60))}

func randomEvent(r *rand.Rand) refresh.Event {
	text := func() string { return texts[r.IntN(len(texts))] }
	tm := func() time.Time {
		switch r.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
		}
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2))).In(zones[r.IntN(len(zones))])
	}
	e := refresh.Event{
		At: tm(), ModelID: text(), Type: text(), Decision: text(), Kind: text(), Message: text(), Reason: text(),
		Delay: time.Duration(r.Int64N(1e12) - 5e11), AttemptNo: r.IntN(100) - 10, AttemptUID: text(),
		AttemptDeadlineAt: tm(), RefreshAt: tm(), DeadlineAt: tm(), Disabled: r.IntN(2) == 1,
	}
	if r.IntN(4) == 0 {
		// The extensions' fields, one at a time or all.
		all := r.IntN(2) == 0
		switch k := r.IntN(10); {
		case all || k == 0:
			e.Cause = text()
			fallthrough
		case k == 1:
			e.Upstream = text()
			fallthrough
		case k == 2:
			e.Unchanged = true
			fallthrough
		case k == 3:
			e.Until = tm()
			fallthrough
		case k == 4:
			e.OverdueSince = tm()
			fallthrough
		case k == 5:
			e.OverdueFor = time.Duration(r.Int64N(1e12))
			fallthrough
		case k == 6:
			e.State = text()
			fallthrough
		case k == 7:
			e.Missed = r.IntN(5)
			fallthrough
		case k == 8:
			e.DebounceAt = tm()
			fallthrough
		case k == 9:
			e.WaitingForSlot = r.IntN(2) == 0
			fallthrough
		default:
			e.Recovered = true
		}
	}
	return e
}

// The outbox encoding is json.Marshal's, byte for byte, and reads back the
// events json.Unmarshal would read.
func TestEventsCodec(t *testing.T) {
	// A new field of refresh.Event must be added to appendEvent and
	// parseEvent (and here).
	require.Equal(t, 26, reflect.TypeFor[refresh.Event]().NumField())
	r := rand.New(rand.NewPCG(1, 2))
	var events []refresh.Event
	for range 2000 {
		events = append(events, randomEvent(r))
	}
	want, err := json.Marshal(events)
	require.NoError(t, err)
	got, err := appendEvents(nil, events)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	var decoded []refresh.Event
	require.NoError(t, json.Unmarshal(want, &decoded))
	parsed, err := parseEvents(got, nil)
	require.NoError(t, err)
	require.Len(t, parsed, len(decoded))
	// got may be the driver's buffer, which the next row overwrites: the
	// events keep a copy.
	for i := range got {
		got[i] = '#'
	}
	for i := range parsed {
		single, err := json.Marshal(events[i])
		require.NoError(t, err)
		require.Equal(t, string(single), string(parsed[i].Raw), "Raw is the event's own JSON")
		parsed[i].Raw = nil
		require.Equal(t, decoded[i], parsed[i])
	}
	empty, err := appendEvents(nil, nil)
	require.NoError(t, err)
	require.Equal(t, "[]", string(empty))
	none, err := parseEvents(empty, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// What json.Unmarshal reads that the fast path leaves to it: other orders,
// spaces, null, unknown or differently cased names, escapes.
func TestParseEventsFallBack(t *testing.T) {
	text := `[ {"disabled": true, "At": "2026-03-02T06:00:00Z", "model_id": null, "delay": 60000000000 , "extra": [1, {"a": "]"}],
		"event": "st\u0061rt", "attempt_no": 2 } , {"at":"2026-03-02T06:00:00.5+01:00","model_id":"m\"2","event":"success","attempt_no":0,"disabled":false}]`
	var want []refresh.Event
	require.NoError(t, json.Unmarshal([]byte(text), &want))
	got, err := parseEvents([]byte(text), nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Contains(t, string(got[0].Raw), `"extra"`)
	require.Equal(t, `{"at":"2026-03-02T06:00:00.5+01:00","model_id":"m\"2","event":"success","attempt_no":0,"disabled":false}`, string(got[1].Raw))
	for i := range got {
		got[i].Raw = nil
	}
	require.Equal(t, want, got)
	require.Equal(t, "start", got[0].Type)
	require.Equal(t, time.Minute, got[0].Delay)

	for _, bad := range []string{``, `{}`, `[`, `[{"at":"x"}]`, `[{"at":1}]`, `[{}`, `[{} {}]`, `[{}] x`, `[{"model_id":"a}]`} {
		_, err := parseEvents([]byte(bad), nil)
		require.Error(t, err, bad)
	}
}

func BenchmarkEventsCodec(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	events := make([]refresh.Event, 1000)
	for i := range events {
		at := time.Date(2026, 3, 2, 6, 0, 0, r.IntN(1e9), time.UTC)
		events[i] = refresh.Event{At: at, ModelID: "m-0000123", Type: "start", AttemptNo: 1, AttemptUID: "d0v1q2k3m4n5p6r7s8t0",
			RefreshAt: at.Add(time.Hour), DeadlineAt: at.Add(time.Hour)}
	}
	text, _ := appendEvents(nil, events)
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, len(text))
		for b.Loop() {
			buf, _ = appendEvents(buf[:0], events)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(events)
		}
	})
	b.Run("parse", func(b *testing.B) {
		out := make([]refresh.Event, 0, len(events))
		for b.Loop() {
			out, _ = parseEvents(text, out[:0])
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var out []refresh.Event
			_ = json.Unmarshal(text, &out)
		}
	})
}
