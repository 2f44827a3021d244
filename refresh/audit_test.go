package refresh_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestDefinitionChanges(t *testing.T) {
	t.Parallel()
	base := refresh.Model{ID: "m1", Queue: "tables", Payload: json.RawMessage(`{"a": 1}`), Policy: refresh.DefaultPolicy()}
	withTimeout := base
	withTimeout.Policy.Timeout = refresh.Duration(2 * time.Hour)
	relaid := base
	relaid.Payload = json.RawMessage("{\n  \"a\":1}")
	moved := base
	moved.Queue, moved.Payload, moved.Upstreams = "other", nil, []string{"up-1"}
	keyed := base
	keyed.RateKey = "api.example.com"
	rekeyed := keyed
	rekeyed.RateKey = "cdn.example.com"
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tt := range []struct {
		name          string
		before, after refresh.Model
		want          []refresh.FieldChange
	}{
		{"nothing", base, base, nil},
		{"layout alone", base, relaid, nil},
		{"a policy member", base, withTimeout, []refresh.FieldChange{{Field: "policy.timeout", Before: raw(`"1h"`), After: raw(`"2h"`)}}},
		{"queue, payload removed, upstreams", base, moved, []refresh.FieldChange{
			{Field: "queue", Before: raw(`"tables"`), After: raw(`"other"`)},
			{Field: "payload", Before: raw(`{"a":1}`)},
			{Field: "upstreams", After: raw(`["up-1"]`)},
		}},
		{"rate_key set", base, keyed, []refresh.FieldChange{{Field: "rate_key", After: raw(`"api.example.com"`)}}},
		{"rate_key changed", keyed, rekeyed, []refresh.FieldChange{{Field: "rate_key", Before: raw(`"api.example.com"`), After: raw(`"cdn.example.com"`)}}},
		{"rate_key removed", keyed, base, []refresh.FieldChange{{Field: "rate_key", Before: raw(`"api.example.com"`)}}},
	} {
		require.Equal(t, tt.want, refresh.DefinitionChanges(tt.before, tt.after), tt.name)
	}
}
