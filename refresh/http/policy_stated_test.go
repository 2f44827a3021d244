package http_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPolicyReadBackStatesDefaults checks that the policy the API answers
// states every default (docs/policy.md: "what you read back is what
// runs"), and that writing it back keeps it as it is.
func TestPolicyReadBackStatesDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)

	policy := b.put(t, "on-demand", `{}`)["policy"].(map[string]any)
	require.Equal(t, "UTC", policy["timezone"])
	require.Equal(t, "1h", policy["timeout"])
	require.Equal(t, "disable", policy["on_exhausted"])
	require.Equal(t, "24h", policy["max_snooze"])
	require.Contains(t, policy, "disabled_message")
	retry := policy["retry"].(map[string]any)
	require.Equal(t, false, retry["align"], "no schedule: nothing to align with")
	require.Equal(t, []any{}, retry["retry_on"])
	require.Equal(t, []any{"validation", "not_found", "unauthorized", "forbidden"}, retry["non_retryable"])
	require.Equal(t, 0.0, retry["jitter"])
	require.Len(t, retry["delays"], 6)

	policy = b.put(t, "scheduled", `{"policy": {"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris",
		"retry": {"retry_on": ["http_503"]}}}`)["policy"].(map[string]any)
	require.Equal(t, "Europe/Paris", policy["timezone"])
	retry = policy["retry"].(map[string]any)
	require.Equal(t, true, retry["align"], "a schedule: retries align by default")
	require.Equal(t, []any{"http_503"}, retry["retry_on"])
	require.Equal(t, []any{}, retry["non_retryable"], "an allow-list drops the default deny-list")

	// What was read back, written back, reads back the same.
	body, err := json.Marshal(map[string]any{"policy": policy})
	require.NoError(t, err)
	code, m := b.do(t, "PUT", "/models/copy", string(body))
	require.Equal(t, http.StatusCreated, code, m)
	require.Equal(t, policy, m["policy"])

	// Written back to its own model, it changes nothing: the audit has
	// only the create, and a disabled model would stay disabled.
	code, m = b.do(t, "PUT", "/models/scheduled", string(body))
	require.Equal(t, http.StatusOK, code, m)
	code, audit := b.do(t, "GET", "/models/scheduled/audit", "")
	require.Equal(t, http.StatusOK, code, audit)
	require.Len(t, audit["audit"], 1, "%v", audit)
	require.Equal(t, "create", audit["audit"].([]any)[0].(map[string]any)["action"])
}
