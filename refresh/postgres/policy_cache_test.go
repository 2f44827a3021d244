package postgres

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// storedPolicy returns the stored JSON of the policy that input parses to.
func storedPolicy(t *testing.T, input string) []byte {
	t.Helper()
	p, err := refresh.ParsePolicy([]byte(input), refresh.Limits{})
	require.NoError(t, err)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return b
}

func TestPolicyCacheDecodesLikeUnmarshal(t *testing.T) {
	inputs := []string{
		`{}`,
		`{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris", "timeout": "1h"}`,
		`{"retry": {"delays": [], "non_retryable": []}}`,
		`{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 2, "max_retries": 3}, "align": false, "retry_on": ["http_503"]}}`,
	}
	var c policyCache
	for _, in := range inputs {
		data := storedPolicy(t, in)
		var want refresh.Policy
		require.NoError(t, json.Unmarshal(data, &want))
		for range 2 { // a miss, then a hit
			got, err := c.decode(data)
			require.NoError(t, err)
			require.Equal(t, want, got, in)
			require.Equal(t, want.Retry.Delays == nil, got.Retry.Delays == nil, "nil and empty delays differ: %s", in)
			require.Equal(t, want.Retry.NonRetryable == nil, got.Retry.NonRetryable == nil, in)
		}
	}
}

func TestPolicyCacheCopies(t *testing.T) {
	var c policyCache
	data := storedPolicy(t, `{"retry": {"backoff": {"strategy": "fixed", "base": "1m", "max_retries": 2}, "align": true, "retry_on": ["a"], "non_retryable": ["b"]}}`)
	first, err := c.decode(data)
	require.NoError(t, err)
	want, err := c.decode(data)
	require.NoError(t, err)

	first.Retry.Backoff.Base = 0
	*first.Retry.Align = false
	first.Retry.RetryOn[0] = "changed"
	first.Retry.NonRetryable[0] = "changed"
	first.Retry.Delays = append(first.Retry.Delays, 1)

	again, err := c.decode(data)
	require.NoError(t, err)
	require.Equal(t, want, again)

	delays := storedPolicy(t, `{"retry": {"delays": ["1m", "5m"]}}`)
	d, err := c.decode(delays)
	require.NoError(t, err)
	d.Retry.Delays[0] = 0
	d, err = c.decode(delays)
	require.NoError(t, err)
	require.Equal(t, refresh.Duration(60e9), d.Retry.Delays[0])
}

func TestPolicyCacheErrorsAndBound(t *testing.T) {
	var c policyCache
	_, err := c.decode([]byte(`{"timeout": 5}`))
	require.Error(t, err)
	require.Empty(t, c.m, "a policy that does not decode is not remembered")

	for i := range maxCachedPolicies + 10 {
		_, err := c.decode(storedPolicy(t, fmt.Sprintf(`{"timeout": "%ds"}`, i+1)))
		require.NoError(t, err)
		require.LessOrEqual(t, len(c.m), maxCachedPolicies)
	}
}

// TestClonePolicyCoversEveryReference fails when refresh.Policy gains a
// field that can share memory (slice, map, pointer) that clonePolicy does
// not copy: add it there, then here.
func TestClonePolicyCoversEveryReference(t *testing.T) {
	copied := map[string]bool{
		"Retry.Delays": true, "Retry.RetryOn": true, "Retry.NonRetryable": true,
		"Retry.Backoff": true, "Retry.Align": true,
	}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			name := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(name+".", f.Type)
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				require.True(t, copied[name], "clonePolicy does not copy %s", name)
				if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
					for g := range f.Type.Elem().Fields() {
						switch g.Type.Kind() {
						case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
							t.Errorf("clonePolicy copies %s shallowly but %s.%s is a reference", name, name, g.Name)
						}
					}
				}
			}
		}
	}
	walk("", reflect.TypeFor[refresh.Policy]())
}
