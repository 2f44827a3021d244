package http

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestUpstreamsView: a model shows each upstream's status and, while its
// condition does not hold, what it waits for in a customer's words.
func TestUpstreamsView(t *testing.T) {
	f := setupOpenAPI(t)
	for _, r := range []struct{ path, body string }{
		{"/models/orders", `{"queue": "tables"}`},
		{"/models/report", `{"upstreams": ["orders", "ghost"]}`},
	} {
		rec := f.do(t, "PUT", r.path, r.body, "write", nil)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	}
	// orders is disabled by a failure.
	rec := f.do(t, "POST", "/models/orders/trigger", "", "write", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	jobs := f.tick(t)
	require.Len(t, jobs, 1)
	no := false
	f.queue.Deliver(refresh.Outcome{ModelID: "orders", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure,
		Kind: "http_503", Message: "upstream 503", Retryable: &no, UserMessage: "The orders feed is down."})
	_, err := f.consumer.RunOnce(context.Background())
	require.NoError(t, err)

	rec = f.do(t, "GET", "/models/report", "", "read", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	var v ModelWithRuns
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
	require.Equal(t, []string{"orders", "ghost"}, v.Upstreams)
	require.Equal(t, "all", v.UpstreamsMode)
	require.Equal(t, []UpstreamStatus{
		{ID: "orders", Status: "disabled", DisabledReason: "The orders feed is down."},
		{ID: "ghost", Status: "missing"},
	}, v.UpstreamStatus)
	require.Equal(t, nullString("waiting for orders, whose refresh is disabled: The orders feed is down.; ghost, which does not exist"), v.WaitingFor)
}

// TestUpstreamsWithinPrefix: a token limited to a prefix names upstreams
// inside it only.
func TestUpstreamsWithinPrefix(t *testing.T) {
	f := setupOpenAPI(t)
	rec := f.do(t, "PUT", "/models/acme-report", `{"upstreams": ["acme-orders", "other-orders"]}`, "acme", nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), `upstreams[1]: must start with \"acme-\", the id prefix of token \"acme\", got \"other-orders\"`)
	rec = f.do(t, "PUT", "/models/acme-report", `{"upstreams": ["acme-orders"]}`, "acme", nil)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = f.do(t, "PATCH", "/models/acme-report", `{"upstreams": ["x"]}`, "acme", nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
}
