package queue

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

var encodeTexts = []string{
	"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\rret", "bell\a\b\f\x00\x1f", "<b>&amp;</b>",
	"café 日本", "line\u2028para\u2029", "bad \xff utf8 \xc3", "emoji 😀", strings.Repeat("long ", 300),
}

var payloads = []json.RawMessage{
	nil, json.RawMessage(`{"input_url":"https://example.com/a.csv"}`), json.RawMessage(`{"input_url": "https://example.com/a.csv"}`),
	json.RawMessage(`[1, 2,3]`), json.RawMessage(`"<html>"`), json.RawMessage(`{"a":"b\"c \\ d","e":[true,null,1.5e3]}`),
	json.RawMessage("{\n  \"pretty\": true\n}"), json.RawMessage(`{"s":"\u2028"}`), json.RawMessage(`42`),
	json.RawMessage("{\"html\": \"<a href='x'>&</a>\", \"sep\": \"a\u2028b\u2029c\", \"esc\": \"\\\" <\\\\ \"}"),
	json.RawMessage(" [ {\"a\" : [ ] } , \"\\u003c\" ,\t\r\n null ] "),
}

func randomTime(r *rand.Rand) time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -(9*3600 + 30*60))}
	switch r.IntN(3) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	}
	return time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2))).In(zones[r.IntN(len(zones))])
}

// Jobs and outcomes are encoded to json.Marshal's bytes.
func TestEncodeJobsAndOutcomes(t *testing.T) {
	// A new field must be added to the encoders (and here).
	require.Equal(t, 7, reflect.TypeFor[refresh.Job]().NumField())
	require.Equal(t, 12, reflect.TypeFor[refresh.Outcome]().NumField())
	r := rand.New(rand.NewPCG(3, 4))
	text := func() string { return encodeTexts[r.IntN(len(encodeTexts))] }
	for range 3000 {
		j := refresh.Job{ModelID: text(), AttemptUID: text(), AttemptNo: r.IntN(100) - 10, Queue: text(),
			Payload: payloads[r.IntN(len(payloads))], StartedAt: randomTime(r), DeadlineAt: randomTime(r)}
		want, err := json.Marshal(j)
		require.NoError(t, err)
		got, err := appendJob([]byte("x"), &j)
		require.NoError(t, err)
		require.Equal(t, "x"+string(want), string(got))

		o := refresh.Outcome{ModelID: text(), AttemptUID: text(), Type: text(), Kind: text(), Message: text(), UserMessage: text(),
			ArrivedAt: randomTime(r), Raw: text(), Until: randomTime(r), Unchanged: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			o.For = refresh.Duration(r.Int64N(1e13))
		}
		if b := r.IntN(3); b < 2 {
			v := b == 1
			o.Retryable = &v
		}
		want, err = json.Marshal(o)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendOutcome(nil, &o)))
	}
	// What json.Marshal refuses, appendJob refuses.
	_, err := appendJob(nil, &refresh.Job{Payload: json.RawMessage(`{"a":`)})
	require.Error(t, err)
	_, err = appendJob(nil, &refresh.Job{StartedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	require.Error(t, err)
}
