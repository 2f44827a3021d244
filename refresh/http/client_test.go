package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

func TestNewClient(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"localhost:8080", "http://localhost:8080", "http://localhost:8080/", "https://freshen.example.com/api/"} {
		_, err := refreshhttp.NewClient(u, "", nil)
		require.NoError(t, err, u)
	}
	for u, want := range map[string]string{
		"ftp://localhost":            `server: must be an http or https URL such as http://localhost:8080, got "ftp://localhost"`,
		"http://":                    `server: must be an http or https URL such as http://localhost:8080, got "http://"`,
		"http://localhost:8080/?x=1": `server: must have no query or fragment, got "http://localhost:8080/?x=1"`,
	} {
		_, err := refreshhttp.NewClient(u, "", nil)
		require.EqualError(t, err, want, u)
	}
}

// TestClient runs every model method of the client against a server.
func TestClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t, "")
	ctx := context.Background()

	m, created, err := c.Put(ctx, "bigtable-1", []byte(`{"queue": "tables", "payload": {"url": "s3://x"},
		"policy": {"schedule": "`+parisSchedule+`", "timezone": "Europe/Paris"}}`))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "bigtable-1", m.ID)
	require.Equal(t, "tables", m.Queue)
	require.JSONEq(t, `{"url": "s3://x"}`, string(m.Payload))
	require.Equal(t, "Europe/Paris", m.Policy.Timezone)
	require.Equal(t, start, time.Time(m.CreatedAt))
	require.Equal(t, time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC), time.Time(m.RefreshAt))
	require.True(t, time.Time(m.DeadlineAt).IsZero())
	require.Len(t, m.NextRuns, 5)
	_, created, err = c.Put(ctx, "bigtable-1", []byte(`{"queue": "tables", "policy": {"schedule": "`+parisSchedule+`"}}`))
	require.NoError(t, err)
	require.False(t, created)

	m, err = c.Patch(ctx, "bigtable-1", []byte(`{"payload": {"url": "s3://y"}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"url": "s3://y"}`, string(m.Payload))

	got, err := c.Get(ctx, "bigtable-1")
	require.NoError(t, err)
	require.Equal(t, m, got)

	// An action, then the attempts of a run that failed.
	res, err := c.Act(ctx, "bigtable-1", refresh.ActionTrigger)
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Equal(t, "trigger", res.Decision.Event)
	require.Equal(t, start, time.Time(res.Model.RefreshAt))
	jobs := b.tick(t, "tables")
	require.Len(t, jobs, 1)
	b.clock.Advance(time.Minute)
	b.deliver(t, refresh.Outcome{ModelID: "bigtable-1", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream 503"})
	attempts, err := c.Attempts(ctx, "bigtable-1", "", 10)
	require.NoError(t, err)
	require.Len(t, attempts.Attempts, 1)
	require.Empty(t, attempts.Next, "a short page is the last")
	// A full page gives the cursor of the next, which holds what started
	// before its last attempt: nothing here.
	first, err := c.Attempts(ctx, "bigtable-1", "", 1)
	require.NoError(t, err)
	require.Len(t, first.Attempts, 1)
	require.NotEmpty(t, first.Next)
	first, err = c.Attempts(ctx, "bigtable-1", first.Next, 1)
	require.NoError(t, err)
	require.Empty(t, first.Attempts)
	require.Empty(t, first.Next)
	_, err = c.Attempts(ctx, "bigtable-1", "yesterday", 1)
	require.ErrorContains(t, err, "before: must be an RFC 3339 time")
	a := attempts.Attempts[0]
	require.Equal(t, "failure", string(a.Outcome))
	require.Equal(t, "http_503", a.ErrorKind)
	require.Equal(t, "retry", a.Decision)
	require.Equal(t, refresh.Duration(0), *a.Delay) // the first of the default delays
	require.Equal(t, start.Add(time.Minute), time.Time(a.FinishedAt))

	got, err = c.Get(ctx, "bigtable-1")
	require.NoError(t, err)
	require.Equal(t, 1, got.ConsecutiveFailures)
	require.Equal(t, "upstream 503", got.LastError.Message)

	res, err = c.Act(ctx, "bigtable-1", refresh.ActionEnable)
	require.NoError(t, err)
	require.False(t, res.Changed, "enable on a model that is not disabled")

	// The list, with filters and pages.
	for _, id := range []string{"m1", "m2", "m3"} {
		_, _, err := c.Put(ctx, id, []byte(`{"queue": "thumbs"}`))
		require.NoError(t, err)
	}
	page, err := c.List(ctx, refreshhttp.ListOptions{Queue: "thumbs", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, "m2", page.Next)
	require.Len(t, page.Models, 2)
	page, err = c.List(ctx, refreshhttp.ListOptions{Queue: "thumbs", After: page.Next})
	require.NoError(t, err)
	require.Equal(t, "", page.Next)
	require.Equal(t, "m3", page.Models[0].ID)
	yes := true
	page, err = c.List(ctx, refreshhttp.ListOptions{Failing: &yes})
	require.NoError(t, err)
	require.Len(t, page.Models, 1)
	require.Equal(t, "bigtable-1", page.Models[0].ID)

	require.NoError(t, c.Delete(ctx, "m1"))
	_, err = c.Get(ctx, "m1")
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))

	// A model id that needs escaping in a path.
	_, created, err = c.Put(ctx, "tenant:a@b", []byte(`{}`))
	require.NoError(t, err)
	require.True(t, created)
	_, err = c.Get(ctx, "tenant:a@b")
	require.NoError(t, err)
}

// TestClientErrors checks that the API's errors reach the caller whole:
// the message, the field errors, and the code of the refresh package.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t, "")
	ctx := context.Background()

	_, _, err := c.Put(ctx, "m1", []byte(`{"policy": {"timeout": "1h", "retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}}`))
	var apiErr *refreshhttp.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "policy.retry.backoff.multiplier: must be >= 1, got 0.5", err.Error())
	require.Equal(t, []refresh.FieldError{{Field: "policy.retry.backoff.multiplier", Rule: "must be >= 1, got 0.5"}}, apiErr.Fields)
	require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
	var v *refresh.ValidationError
	require.ErrorAs(t, err, &v)

	_, err = c.Patch(ctx, "nope", []byte(`{}`))
	require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err))
	require.EqualError(t, err, `model "nope" not found`)

	// An answer that is not the API's JSON still says what happened.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	t.Cleanup(plain.Close)
	pc, err := refreshhttp.NewClient(plain.URL, "", plain.Client())
	require.NoError(t, err)
	_, err = pc.Get(ctx, "m1")
	require.EqualError(t, err, "GET /models/m1: 502 Bad Gateway: bad gateway")
	require.Equal(t, refresh.EINTERNAL, refresh.ErrorCode(err))

	// Auth errors keep their status.
	a := setupAuth(t)
	_, err = a.client(t, "").Get(ctx, "acme-1")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	_, err = a.client(t, "reader").Act(ctx, "acme-1", "pause")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusForbidden, apiErr.StatusCode)
	require.Equal(t, `token "reader" has scope read; POST /models/acme-1/pause needs scope write`, apiErr.Message)
	require.True(t, errors.As(err, &apiErr))
}

// TestTimeJSON checks that the API's times read back as they were written.
func TestTimeJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   refreshhttp.Time
		json string
	}{
		{refreshhttp.Time{}, `null`},
		{refreshhttp.Time(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)), `"2026-03-02T06:00:00Z"`},
	} {
		data, err := json.Marshal(tt.in)
		require.NoError(t, err)
		require.Equal(t, tt.json, string(data))
		var back refreshhttp.Time
		require.NoError(t, json.Unmarshal(data, &back))
		require.True(t, time.Time(tt.in).Equal(time.Time(back)), tt.json)
	}
	var bad refreshhttp.Time
	require.Error(t, json.Unmarshal([]byte(`"yesterday"`), &bad))
}

// waitsClock is a clock whose After records the wait and fires at once.
type waitsClock struct {
	refresh.SystemClock
	waits []time.Duration
}

func (c *waitsClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

// TestClientRetriesReads: a GET answered 503 with a Retry-After of a few
// seconds is sent again after it, 4 times at most; a write, or a wait
// longer than 5 seconds, is not.
func TestClientRetriesReads(t *testing.T) {
	t.Parallel()
	var (
		mu         sync.Mutex // the handler runs on the server's goroutines
		requests   []string
		busy       int
		retryAfter = "1"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		requests = append(requests, r.Method+" "+r.URL.Path)
		if busy > 0 {
			busy--
			w.Header().Set("Retry-After", retryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error": "busy; try again"}`))
			return
		}
		_, _ = w.Write([]byte(`{"models": [{"id": "m1"}], "next": ""}`))
	}))
	t.Cleanup(srv.Close)
	c, err := refreshhttp.NewClient(srv.URL, "", srv.Client())
	require.NoError(t, err)
	clock := &waitsClock{}
	refreshhttp.SetClientClock(c, clock)
	ctx := context.Background()
	attempts := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := len(requests)
		requests = nil
		return n
	}
	set := func(b int, after string) {
		mu.Lock()
		defer mu.Unlock()
		busy, retryAfter = b, after
	}

	set(3, "1")
	page, err := c.List(ctx, refreshhttp.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Models, 1)
	require.Equal(t, 4, attempts())
	require.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, clock.waits)

	set(4, "1")
	_, err = c.List(ctx, refreshhttp.ListOptions{})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err))
	require.EqualError(t, err, "busy; try again")
	require.Equal(t, 4, attempts(), "4 attempts at most")

	set(1, "1")
	_, err = c.Act(ctx, "m1", "pause")
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err))
	require.Equal(t, 1, attempts(), "a write is sent once")

	set(1, "6")
	_, err = c.List(ctx, refreshhttp.ListOptions{})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err))
	require.Equal(t, 1, attempts(), "a wait longer than 5s is not waited for")
}
