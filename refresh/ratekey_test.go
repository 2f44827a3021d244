package refresh_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestServicePutRateKey(t *testing.T) {
	long := strings.Repeat("k", refresh.MaxRateKeyBytes)
	for _, tt := range []struct {
		name, key string
		want      string // the model's rate_key, or the refusal
	}{
		{name: "none", key: "", want: ""},
		{name: "a host", key: "api.example.com", want: "api.example.com"},
		{name: "128 bytes", key: long, want: long},
		{name: "UTF-8 and spaces", key: "clé API 7", want: "clé API 7"},
		{name: "129 bytes", key: long + "k", want: "rate_key: " + refresh.RateKeyRule + `, got "` + strings.Repeat("k", 37) + `..."`},
		{name: "a newline", key: "api\nexample", want: "rate_key: " + refresh.RateKeyRule + `, got "api\nexample"`},
		{name: "a NUL", key: "api\x00", want: "rate_key: " + refresh.RateKeyRule + `, got "api\x00"`},
		{name: "DEL", key: "api\x7f", want: "rate_key: " + refresh.RateKeyRule + `, got "api\x7f"`},
		{name: "not UTF-8", key: "api\xff", want: "rate_key: " + refresh.RateKeyRule + `, got "api\xff"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			m, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: "m", RateKey: tt.key})
			if strings.HasPrefix(tt.want, "rate_key: ") {
				require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
				require.Equal(t, tt.want, refresh.ErrorMessage(err))
				_, err = b.store.Get(context.Background(), "m")
				require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "nothing written")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, m.RateKey)
			got, err := b.store.Get(context.Background(), "m")
			require.NoError(t, err)
			require.Equal(t, tt.want, got.RateKey)
		})
	}
}

func TestServiceRateKeyIsPartOfTheDefinition(t *testing.T) {
	b := setup(t)
	ctx := refresh.WithAudit(context.Background(), refresh.AuditInfo{Actor: "ops"})
	m, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", Queue: "q", RateKey: "api.example.com", Policy: json.RawMessage(hourly)})
	require.NoError(t, err)
	tag := refresh.DefinitionTag(m)
	unkeyed := m
	unkeyed.RateKey = ""
	require.NotEqual(t, tag, refresh.DefinitionTag(unkeyed), "the tag covers the rate key")

	patch := func(req refresh.PatchRequest) (refresh.Model, error) {
		req.ID = "m"
		return b.svc.Patch(ctx, req)
	}
	for _, tt := range []struct {
		name    string
		req     refresh.PatchRequest
		want    string // the rate_key after, or the refusal
		changed bool   // an audited change of rate_key
	}{
		{name: "left out: kept", req: refresh.PatchRequest{Queue: json.RawMessage(`"q2"`)}, want: "api.example.com"},
		{name: "changed", req: refresh.PatchRequest{RateKey: json.RawMessage(`"cdn.example.com"`)}, want: "cdn.example.com", changed: true},
		{name: "the same", req: refresh.PatchRequest{RateKey: json.RawMessage(`"cdn.example.com"`)}, want: "cdn.example.com"},
		{name: "null: none", req: refresh.PatchRequest{RateKey: json.RawMessage(`null`)}, want: "", changed: true},
		{name: "set again", req: refresh.PatchRequest{RateKey: json.RawMessage(`"api.example.com"`)}, want: "api.example.com", changed: true},
		{name: "not a string", req: refresh.PatchRequest{RateKey: json.RawMessage(`7`)}, want: "rate_key: must be a string, got 7"},
		{name: "too long", req: refresh.PatchRequest{RateKey: json.RawMessage(`"` + strings.Repeat("k", 129) + `"`)},
			want: "rate_key: " + refresh.RateKeyRule + `, got "` + strings.Repeat("k", 37) + `..."`},
		{name: "not JSON", req: refresh.PatchRequest{RateKey: json.RawMessage(`"a`)}, want: "rate_key: must be JSON"},
	} {
		before, err := b.store.Get(context.Background(), "m")
		require.NoError(t, err)
		b.clock.Advance(time.Second) // each write's entry at an instant of its own
		m, err := patch(tt.req)
		if strings.HasPrefix(tt.want, "rate_key: ") {
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err), tt.name)
			require.Equal(t, tt.want, refresh.ErrorMessage(err), tt.name)
			got, err := b.store.Get(context.Background(), "m")
			require.NoError(t, err)
			require.Equal(t, before.RateKey, got.RateKey, "%s: nothing written", tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, m.RateKey, tt.name)
		require.Equal(t, tt.changed, rateKeyAudited(t, b), tt.name)
	}

	// A replace that leaves rate_key out removes it.
	b.clock.Advance(time.Second)
	m, _, err = b.svc.Put(ctx, refresh.PutRequest{ID: "m", Queue: "q", Policy: json.RawMessage(hourly)})
	require.NoError(t, err)
	require.Empty(t, m.RateKey)
	require.True(t, rateKeyAudited(t, b))
}

// rateKeyAudited reports whether model m's newest audit entry is of now
// and names a change of rate_key.
func rateKeyAudited(t *testing.T, b bundle) bool {
	t.Helper()
	entries, err := b.store.Audit(context.Background(), "m", 0, 1)
	require.NoError(t, err)
	if len(entries) == 0 || !entries[0].At.Equal(b.clock.Now()) {
		return false
	}
	for _, c := range entries[0].Changes {
		if c.Field == "rate_key" {
			return true
		}
	}
	return false
}

func TestServiceRateKeyChangeReenablesADisabledModel(t *testing.T) {
	b := setup(t)
	ctx := refresh.WithAudit(context.Background(), refresh.AuditInfo{Actor: "ops"})
	m, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "m", RateKey: "api.example.com", Policy: json.RawMessage(hourly)})
	require.NoError(t, err)
	m.DisabledAt, m.DisabledReason = b.clock.Now(), "Refresh disabled after 3 failed attempt(s)."
	require.NoError(t, b.store.Modify(context.Background(), []string{"m"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	b.events(t)

	m, err = b.svc.Patch(ctx, refresh.PatchRequest{ID: "m", RateKey: json.RawMessage(`"cdn.example.com"`)})
	require.NoError(t, err)
	require.False(t, m.Disabled(), "a changed rate_key re-enables the model")
	require.True(t, m.RefreshAt.Equal(b.clock.Now()))
	require.Equal(t, []string{"update:m", "trigger:m"}, types(b.events(t)))
	entries, err := b.store.Audit(context.Background(), "m", 0, 1)
	require.NoError(t, err)
	require.True(t, entries[0].Trigger)
	require.Equal(t, []refresh.FieldChange{{Field: "rate_key", Before: json.RawMessage(`"api.example.com"`), After: json.RawMessage(`"cdn.example.com"`)}},
		entries[0].Changes)
}
