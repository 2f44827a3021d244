package queue

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestDecodeOutcome(t *testing.T) {
	t.Parallel()
	no := false
	base := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: "success"}
	with := func(f func(*refresh.Outcome)) refresh.Outcome {
		o := base
		f(&o)
		return o
	}
	for _, tc := range []struct {
		name, raw string
		want      refresh.Outcome
		reason    string
	}{
		{"minimal", `{"model_id":"m1","attempt_uid":"u1","outcome":"success"}`, base, ""},
		{"white space", " {\n\t\"model_id\" : \"m1\" ,\r\n\"attempt_uid\":\"u1\", \"outcome\":\"success\" } \n", base, ""},
		{"failure", `{"model_id":"m1","attempt_uid":"u1","outcome":"failure","kind":"validation","message":"row 3","retryable":false,"user_message":"Fix row 3."}`,
			with(func(o *refresh.Outcome) {
				o.Type, o.Kind, o.Message, o.Retryable, o.UserMessage = "failure", "validation", "row 3", &no, "Fix row 3."
			}), ""},
		{"null is absent", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","kind":null,"retryable":null}`, base, ""},
		{"unknown fields are ignored", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","extra":{"a":[1,"}",{"b":null}]},"n":-1.5e3,"t":true}`, base, ""},
		{"escapes", `{"model\u005fid":"m\u00e9\n","attempt_uid":"u1","outcome":"status","message":"\ud83d\ude00 \"q\" \\"}`,
			with(func(o *refresh.Outcome) { o.ModelID, o.Type, o.Message = "mé\n", "status", "😀 \"q\" \\" }), ""},
		{"names are case-sensitive", `{"Model_ID":"m1","attempt_uid":"u1","outcome":"success"}`, refresh.Outcome{}, "model_id: missing"},
		{"empty id", `{"model_id":"","attempt_uid":"u1","outcome":"success"}`, refresh.Outcome{}, "model_id: missing"},
		{"not json", `{"model_id":`, refresh.Outcome{}, "invalid json: unexpected end of JSON input"},
		{"trailing data", `{"model_id":"m1"} {}`, refresh.Outcome{}, "invalid json: invalid character '{' after top-level value"},
		{"string", `"m1"`, refresh.Outcome{}, "must be a JSON object, got a string"},
		{"null", `null`, refresh.Outcome{}, "must be a JSON object, got null"},
		{"bool id", `{"model_id":true,"attempt_uid":"u1","outcome":"success"}`, refresh.Outcome{}, "model_id: must be a string, got true"},
		{"array message", `{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":["a"]}`, refresh.Outcome{}, `message: must be a string, got ["a"]`},
		{"number retryable", `{"model_id":"m1","attempt_uid":"u1","outcome":"failure","retryable":0}`, refresh.Outcome{}, "retryable: must be true or false, got 0"},
		{"NUL in an id", `{"model_id":"m1","attempt_uid":"\u0000","outcome":"success"}`, refresh.Outcome{}, `attempt_uid: must not contain NUL (\u0000)`},
		{"NUL in user_message", `{"model_id":"m1","attempt_uid":"u1","outcome":"failure","user_message":"a\u0000"}`, refresh.Outcome{}, `user_message: must not contain NUL (\u0000)`},
		{"NUL in an unknown field is ignored", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","x":"\u0000"}`, base, ""},
		{"invalid UTF-8 in a value", "{\"model_id\":\"m1\",\"attempt_uid\":\"u1\",\"outcome\":\"status\",\"message\":\"\xc3\x28\"}", refresh.Outcome{}, "message: must be valid UTF-8"},
		{"invalid UTF-8 in an unknown field", "{\"model_id\":\"m1\",\"attempt_uid\":\"u1\",\"outcome\":\"success\",\"x\":[\"\xff\"]}", refresh.Outcome{}, "x: must be valid UTF-8"},
		{"invalid UTF-8 in a name", "{\"\xff\":1}", refresh.Outcome{}, "field name: must be valid UTF-8"},
		{"lone high surrogate", `{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":"\ud83d"}`, refresh.Outcome{}, `message: must be valid UTF-8 (lone surrogate \ud83d)`},
		{"high surrogate and no low", `{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":"\ud83d\u0041"}`, refresh.Outcome{}, `message: must be valid UTF-8 (lone surrogate \ud83d)`},
		{"lone low surrogate", `{"model_id":"m1","attempt_uid":"u1","outcome":"status","message":"\uDE00"}`, refresh.Outcome{}, `message: must be valid UTF-8 (lone surrogate \uDE00)`},
		{"NUL in a name", `{"a\u0000":1}`, refresh.Outcome{}, `field name "a\u0000": must not contain NUL (\u0000)`},
		{"duplicate", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","outcome":"failure"}`, refresh.Outcome{}, "outcome: duplicate field"},
		{"duplicate through an escape", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","model\u005fid":"m2"}`, refresh.Outcome{}, "model_id: duplicate field"},
		{"duplicate odd name", `{"a b":1,"a b":2}`, refresh.Outcome{}, `"a b": duplicate field`},
		{"unknown outcome", `{"model_id":"m1","attempt_uid":"u1","outcome":"Success"}`, refresh.Outcome{}, `outcome: must be success, failure, status or snooze, got "Success"`},
		{"snooze until", `{"model_id":"m1","attempt_uid":"u1","outcome":"snooze","until":"2026-03-02T10:00:00+01:00"}`,
			with(func(o *refresh.Outcome) {
				o.Type, o.Until = "snooze", time.Date(2026, 3, 2, 10, 0, 0, 0, time.FixedZone("", 3600))
			}), ""},
		{"snooze for", `{"model_id":"m1","attempt_uid":"u1","outcome":"snooze","for":"PT5M"}`,
			with(func(o *refresh.Outcome) { o.Type, o.For = "snooze", refresh.Duration(5*time.Minute) }), ""},
		{"unchanged success", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","unchanged":true}`,
			with(func(o *refresh.Outcome) { o.Unchanged = true }), ""},
		{"until not a time", `{"model_id":"m1","attempt_uid":"u1","outcome":"snooze","until":"tomorrow"}`, refresh.Outcome{}, `until: must be an RFC 3339 time, got "tomorrow"`},
		{"until a number", `{"model_id":"m1","attempt_uid":"u1","outcome":"snooze","until":5}`, refresh.Outcome{}, `until: must be a string, got 5`},
		{"for not a duration", `{"model_id":"m1","attempt_uid":"u1","outcome":"snooze","for":"soon"}`, refresh.Outcome{}, `for: must be a duration like "90s" or "PT5M", got "soon"`},
		{"unchanged not a bool", `{"model_id":"m1","attempt_uid":"u1","outcome":"success","unchanged":"yes"}`, refresh.Outcome{}, `unchanged: must be true or false, got "yes"`},
		{"long kind", `{"model_id":"m1","attempt_uid":"u1","outcome":"failure","kind":"` + strings.Repeat("k", 65) + `"}`, refresh.Outcome{}, "kind: must be at most 64 bytes, got 65"},
		{"kind at its limit", `{"model_id":"m1","attempt_uid":"u1","outcome":"failure","kind":"` + strings.Repeat("k", 64) + `"}`,
			with(func(o *refresh.Outcome) { o.Type, o.Kind = "failure", strings.Repeat("k", 64) }), ""},
		{"long uid", `{"model_id":"m1","attempt_uid":"` + strings.Repeat("u", 201) + `","outcome":"success"}`, refresh.Outcome{}, "attempt_uid: must be at most 200 bytes, got 201"},
		{"id at its limit", `{"model_id":"` + strings.Repeat("m", 200) + `","attempt_uid":"u1","outcome":"success"}`,
			with(func(o *refresh.Outcome) { o.ModelID = strings.Repeat("m", 200) }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, reason := decodeOutcome(tc.raw, DefaultLimits())
			require.Equal(t, tc.reason, reason)
			if tc.reason == "" {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestDecodeOutcomeLimits(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxBytes: 2000, MaxIDBytes: 3, MaxKindBytes: 2, MaxMessageBytes: 64}
	lim, err := lim.orDefault()
	require.NoError(t, err)
	raw := func(o refresh.Outcome) string {
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return string(b)
	}
	long := strings.Repeat("€", 30) // 90 bytes
	o, truncated, reason := decodeOutcome(raw(refresh.Outcome{ModelID: "abc", AttemptUID: "u", Type: "failure", Kind: "ab", Message: long, UserMessage: "ok"}), lim)
	require.Empty(t, reason)
	require.True(t, truncated)
	require.Equal(t, strings.Repeat("€", 16)+TruncatedMarker, o.Message) // 48 + 15 <= 64
	require.Equal(t, "ok", o.UserMessage)

	_, truncated, reason = decodeOutcome(raw(refresh.Outcome{ModelID: "abc", AttemptUID: "u", Type: "status", Message: strings.Repeat("x", 64)}), lim)
	require.Empty(t, reason)
	require.False(t, truncated)

	for _, tc := range []struct {
		o      refresh.Outcome
		reason string
	}{
		{refresh.Outcome{ModelID: "abcd", AttemptUID: "u", Type: "success"}, "model_id: must be at most 3 bytes, got 4"},
		{refresh.Outcome{ModelID: "a", AttemptUID: "uuuu", Type: "success"}, "attempt_uid: must be at most 3 bytes, got 4"},
		{refresh.Outcome{ModelID: "a", AttemptUID: "u", Type: "failure", Kind: "abc"}, "kind: must be at most 2 bytes, got 3"},
		{refresh.Outcome{ModelID: "a", AttemptUID: "u", Type: "status", Message: strings.Repeat("x", 2000)}, "too large: must be at most 2000 bytes, got 2066"}, // 66 bytes of JSON around
	} {
		_, _, reason := decodeOutcome(raw(tc.o), lim)
		require.Equal(t, tc.reason, reason)
	}
}

func TestDecodeJob(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	job := refresh.Job{ModelID: "m1", AttemptUID: "u1", AttemptNo: 2, Queue: "q", Payload: json.RawMessage(`{"a":[1,"x"]}`),
		StartedAt: start, DeadlineAt: start.Add(time.Hour)}
	b, err := json.Marshal(job)
	require.NoError(t, err)
	got, reason := decodeJob(string(b), DefaultLimits())
	require.Empty(t, reason)
	require.Equal(t, job, got)

	for _, tc := range []struct{ raw, reason string }{
		{`{"model_id":"m1","attempt_uid":"u1","attempt_no":1.5}`, "attempt_no: must be an integer, got 1.5"},
		{`{"model_id":"m1","attempt_uid":"u1","started_at":"yesterday"}`, `started_at: must be an RFC 3339 time, got "yesterday"`},
		{`{"model_id":"m1","attempt_uid":"u1","deadline_at":5}`, "deadline_at: must be a string, got 5"},
		{`{"model_id":"m1","attempt_uid":"u1","queue":"a\u0000"}`, `queue: must not contain NUL (\u0000)`},
		{`{"model_id":"m1","attempt_uid":"u1","model_id":"m2"}`, "model_id: duplicate field"},
		{`{"model_id":"m1"}`, "attempt_uid: missing"},
		{`[]`, "must be a JSON object, got an array"},
	} {
		_, reason := decodeJob(tc.raw, DefaultLimits())
		require.Equal(t, tc.reason, reason, tc.raw)
	}
	got, reason = decodeJob(`{"model_id":"m1","attempt_uid":"u1","payload":null,"deadline_at":null}`, DefaultLimits())
	require.Empty(t, reason)
	require.Equal(t, refresh.Job{ModelID: "m1", AttemptUID: "u1"}, got)
}

func TestTruncateText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 64, "short"},
		{strings.Repeat("a", 64), 64, strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), 64, strings.Repeat("a", 49) + TruncatedMarker},
		{strings.Repeat("é", 40), 64, strings.Repeat("é", 24) + TruncatedMarker}, // 49 bytes: cut before a split character
		{strings.Repeat("😀", 20), 64, strings.Repeat("😀", 12) + TruncatedMarker},
	} {
		got := truncateText(tc.in, tc.max)
		require.Equal(t, tc.want, got)
		require.LessOrEqual(t, len(got), tc.max)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	l, err := Limits{}.orDefault()
	require.NoError(t, err)
	require.Equal(t, DefaultLimits(), l)
	for _, tc := range []struct {
		l   Limits
		err string
	}{
		{Limits{MaxMessageBytes: 10}, "queue: limits.MaxMessageBytes: must be >= 64, got 10"},
		{Limits{MaxBytes: -1}, "queue: limits.MaxBytes: must be >= 1024, got -1"},
		{Limits{MaxIDBytes: -1}, "queue: limits.MaxIDBytes: must be >= 1, got -1"},
		{Limits{MaxKindBytes: -5}, "queue: limits.MaxKindBytes: must be >= 1, got -5"},
	} {
		_, err := tc.l.orDefault()
		require.EqualError(t, err, tc.err)
	}
}

// An outcome of a megabyte of members costs time in proportion to its
// size: names are compared through a set once there are many, and a
// duplicate among them is still found.
func TestDecodeManyMembers(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"model_id":"m","attempt_uid":"u","outcome":"success"`)
	for i := 0; b.Len() < DefaultMaxBytes-64; i++ {
		fmt.Fprintf(&b, `,"f%d":0`, i)
	}
	ok := b.String() + "}"
	o, _, reason := decodeOutcome(ok, DefaultLimits())
	require.Empty(t, reason)
	require.Equal(t, "m", o.ModelID)
	_, _, reason = decodeOutcome(b.String()+`,"f7":1}`, DefaultLimits())
	require.Equal(t, "f7: duplicate field", reason)
	_, _, reason = decodeOutcome(b.String()+`,"model_id":"x"}`, DefaultLimits())
	require.Equal(t, "model_id: duplicate field", reason)
}

func BenchmarkDecodeManyMembers(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"model_id":"m","attempt_uid":"u","outcome":"success"`)
	for i := 0; s.Len() < DefaultMaxBytes-64; i++ {
		fmt.Fprintf(&s, `,"f%d":0`, i)
	}
	raw := s.String() + "}"
	for b.Loop() {
		if _, _, reason := decodeOutcome(raw, DefaultLimits()); reason != "" {
			b.Fatal(reason)
		}
	}
}

// TestDecodeSnoozeRules checks the rules judged at the arrival, which
// Receive applies after decoding (refresh.CheckOutcome).
func TestDecodeSnoozeRules(t *testing.T) {
	t.Parallel()
	arrived := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, raw, reason string }{
		{"until later", `{"model_id":"m","attempt_uid":"u","outcome":"snooze","until":"2026-03-02T09:30:00Z"}`, ""},
		{"until in the past", `{"model_id":"m","attempt_uid":"u","outcome":"snooze","until":"2026-03-02T08:00:00Z"}`,
			"until: must be after 2026-03-02T09:00:00Z, got 2026-03-02T08:00:00Z"},
		{"both", `{"model_id":"m","attempt_uid":"u","outcome":"snooze","until":"2026-03-02T09:30:00Z","for":"5m"}`,
			"until: a snooze sets until or for, not both"},
		{"neither", `{"model_id":"m","attempt_uid":"u","outcome":"snooze"}`, "until: a snooze needs until or for"},
		{"negative for", `{"model_id":"m","attempt_uid":"u","outcome":"snooze","for":"-5m"}`, "for: must be > 0, got -5m"},
		{"for on a failure", `{"model_id":"m","attempt_uid":"u","outcome":"failure","for":"5m"}`, "for: only a snooze outcome takes it"},
		{"unchanged on a snooze", `{"model_id":"m","attempt_uid":"u","outcome":"snooze","for":"5m","unchanged":true}`, "unchanged: only a success outcome takes it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, reason := decodeOutcome(tc.raw, DefaultLimits())
			require.Empty(t, reason)
			require.Equal(t, tc.reason, refresh.CheckOutcome(o, arrived))
		})
	}
}
