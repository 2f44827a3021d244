package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// takeEvents returns the events written since the last call, oldest
// first.
func takeEvents(t *testing.T, s refresh.Store) []refresh.Event {
	t.Helper()
	var all []refresh.Event
	for {
		n, err := s.TakeEvents(context.Background(), 1000, func(events []refresh.Event) error {
			all = append(all, events...)
			return nil
		})
		require.NoError(t, err)
		if n == 0 {
			return all
		}
	}
}

// paused returns the ids of the paused models of s, in id order.
func paused(t *testing.T, s refresh.Store) []string {
	t.Helper()
	yes := true
	var ids []string
	for f := (refresh.Filter{Paused: &yes, Limit: 1000}); ; {
		page, err := s.List(context.Background(), f)
		require.NoError(t, err)
		for _, m := range page {
			ids = append(ids, m.ID)
		}
		if len(page) < f.Limit {
			return ids
		}
		f.After = page[len(page)-1].ID
	}
}

// bulk sends POST /bulk/{action} with token and returns the status and
// the answer.
func (b *bundle) bulk(t *testing.T, token, action, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("POST", "/bulk/"+action, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// TestBulkRefusesBadInput: every broken rule of a bulk request is named,
// and nothing is done.
func TestBulkRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	takeEvents(t, b.store)
	long := strings.Repeat("x", refresh.MaxAuditReasonBytes+1)
	for _, tt := range []struct{ body, error string }{
		{``, `body: is empty; send a JSON object such as {"selector": {"prefix": "acme-"}, "dry_run": true}`},
		{`{}`, "selector: names no criterion, so it matches every model: name one (prefix, queue, state, overdue) or set all: true"},
		{`{"selector": {}, "all": false}`, "selector: names no criterion, so it matches every model: name one (prefix, queue, state, overdue) or set all: true"},
		{`{"selector": {"prefix": "acme-"}, "all": true}`, "all: means every model: leave it out or the selector"},
		{`{"selector": {"color": "red"}}`, "selector.color: unknown field; want prefix, queue, state or overdue"},
		{`{"selector": {"state": "asleep"}}`, `selector.state: must be one of disabled, paused, running, snoozed, retrying, waiting_for_slot, scheduled, idle, got "asleep"`},
		{`{"selector": {"prefix": "a/b"}}`, "selector.prefix: must be the start of a model id: must be 1 to 200 letters, digits or ._:@- starting with a letter or digit"},
		{`{"selector": {"queue": "a:b"}}`, "selector.queue: must be 1 to 200 letters, digits or ._@- starting with a letter or digit"},
		{`{"selector": {"overdue": "yes"}}`, `selector.overdue: must be true or false, got "yes"`},
		{`{"selector": "acme-"}`, `selector: must be a JSON object, got "acme-"`},
		{`{"selector": {"prefix": "acme-"}, "dryrun": true}`, "dryrun: unknown field; want selector, all, dry_run or reason"},
		{`{"selector": {"prefix": "acme-"}, "reason": "` + long + `"}`, "reason: must be at most 500 bytes, got 501"},
		{`{"selector": {"prefix": "acme-"}, "reason": "a\u0000b"}`, "reason: must not hold NUL or other control characters (tab and newline are allowed)"},
		{`{"selector": {"color": 1, "state": "asleep"}, "reason": 5}`,
			`reason: must be a string, got 5; selector.color: unknown field; want prefix, queue, state or overdue; selector.state: must be one of disabled, paused, running, snoozed, retrying, waiting_for_slot, scheduled, idle, got "asleep"`},
	} {
		code, body := b.bulk(t, "writer", refresh.ActionPause, tt.body)
		require.Equal(t, http.StatusBadRequest, code, tt.body)
		require.Contains(t, body, `"error":`+mustJSON(tt.error), tt.body)
	}
	require.Empty(t, paused(t, b.store), "nothing applied")
	require.Empty(t, takeEvents(t, b.store), "nothing published")
}

// mustJSON returns s as the server writes a JSON string.
func mustJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// TestBulk applies bulk actions to the models setupAuth holds (acme-1,
// acme-2, globex-1, acme): a dry run writes nothing, each model gets its
// single action's transition, event and audit entry, and a token limited
// to a prefix reaches only its models.
func TestBulk(t *testing.T) {
	t.Parallel()
	b := setupAuth(t)
	ctx := context.Background()
	takeEvents(t, b.store)

	res, err := b.client(t, "writer").Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{
		Selector: refreshhttp.BulkSelector{Prefix: "acme-"}, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{DryRun: true, Matched: 2, WouldChange: 2}, res)
	require.Empty(t, paused(t, b.store), "a dry run writes nothing")
	require.Empty(t, takeEvents(t, b.store))

	res, err = b.client(t, "writer").Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{
		Selector: refreshhttp.BulkSelector{Prefix: "acme-"}, Reason: "maintenance"})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{Matched: 2, Changed: 2, Failed: []refresh.BulkFailure{}}, res)
	require.Equal(t, []string{"acme-1", "acme-2"}, paused(t, b.store))
	var got []string
	for _, e := range takeEvents(t, b.store) {
		got = append(got, e.ModelID+":"+e.Type)
	}
	require.Equal(t, []string{"acme-1:pause", "acme-2:pause"}, got, "one event per model, as a single pause")
	list, err := b.client(t, "admin").Audit(ctx, "acme-2", "", 1)
	require.NoError(t, err)
	require.Equal(t, refreshhttp.AuditEntry{ID: list.Audit[0].ID, At: refreshhttp.Time(start), Actor: "writer", Action: "pause",
		Reason: "maintenance", Bulk: true}, list.Audit[0])

	// Again: no model changes, nothing is published or audited.
	res, err = b.client(t, "writer").Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{Selector: refreshhttp.BulkSelector{Prefix: "acme-"}})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{Matched: 2, Unchanged: 2, Failed: []refresh.BulkFailure{}}, res)
	require.Empty(t, takeEvents(t, b.store))
	list, err = b.client(t, "admin").Audit(ctx, "acme-2", "", 0)
	require.NoError(t, err)
	require.Len(t, list.Audit, 2, "create and the one pause that changed it")

	// By state: the paused ones.
	res, err = b.client(t, "writer").Bulk(ctx, refresh.ActionResume, refreshhttp.BulkRequest{Selector: refreshhttp.BulkSelector{State: refresh.PhasePaused}})
	require.NoError(t, err)
	require.Equal(t, 2, res.Changed)
	require.Empty(t, paused(t, b.store))
	takeEvents(t, b.store)

	// A token limited to acme- asking for every model gets its own; a
	// trigger carries the cause bulk.
	res, err = b.client(t, "acme").Bulk(ctx, refresh.ActionTrigger, refreshhttp.BulkRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{Matched: 2, Changed: 2, Failed: []refresh.BulkFailure{}}, res)
	got = nil
	for _, e := range takeEvents(t, b.store) {
		got = append(got, e.ModelID+":"+e.Type+":"+e.Cause)
	}
	require.Equal(t, []string{"acme-1:trigger:bulk", "acme-2:trigger:bulk"}, got)
	for _, prefix := range []string{"globex-", "acm", "acme"} {
		code, body := b.bulk(t, "acme", refresh.ActionPause, `{"selector": {"prefix": "`+prefix+`"}}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, body, `limited to the models whose id starts with \"acme-\"`)
	}
	res, err = b.client(t, "acme").Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{Selector: refreshhttp.BulkSelector{Prefix: "acme-2"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Changed, "a prefix within the token's")
	code, _ := b.bulk(t, "reader", refresh.ActionPause, `{"all": true}`)
	require.Equal(t, http.StatusForbidden, code, "bulk actions need scope write")

	// All of them, by a token without a prefix.
	res, err = b.client(t, "admin").Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{Matched: 4, Changed: 3, Unchanged: 1, Failed: []refresh.BulkFailure{}}, res)
	require.Equal(t, []string{"acme", "acme-1", "acme-2", "globex-1"}, paused(t, b.store))
}

// TestBulkSelector: every criterion must hold.
func TestBulkSelector(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	m := refresh.Model{ID: "acme-1", Queue: "tables"}
	overdue := m
	overdue.OverdueSince = start
	pausedModel := m
	pausedModel.Paused = true
	for _, tt := range []struct {
		sel  refresh.Selector
		m    refresh.Model
		want bool
	}{
		{refresh.Selector{}, m, true},
		{refresh.Selector{Prefix: "acme-"}, m, true},
		{refresh.Selector{Prefix: "acme-2"}, m, false},
		{refresh.Selector{Queue: "tables"}, m, true},
		{refresh.Selector{Queue: "default"}, m, false},
		{refresh.Selector{State: refresh.PhaseIdle}, m, true},
		{refresh.Selector{State: refresh.PhasePaused}, m, false},
		{refresh.Selector{State: refresh.PhasePaused}, pausedModel, true},
		{refresh.Selector{Overdue: &yes}, m, false},
		{refresh.Selector{Overdue: &yes}, overdue, true},
		{refresh.Selector{Overdue: &no}, overdue, false},
		{refresh.Selector{Prefix: "acme-", Queue: "tables", State: refresh.PhaseIdle, Overdue: &no}, m, true},
		{refresh.Selector{Prefix: "acme-", Queue: "other", State: refresh.PhaseIdle, Overdue: &no}, m, false},
	} {
		require.Equal(t, tt.want, tt.sel.Matches(tt.m), "%+v", tt.sel)
	}
}

// TestPostgresBulkPause pauses 10,000 models of one prefix among others on
// PostgreSQL through the API, reading another model meanwhile: the others
// stay untouched, each paused model has its event and its audit entry,
// and a dry run first writes nothing. It logs how long the bulk action
// took and how long the reads made during it took.
func TestPostgresBulkPause(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	ctx := context.Background()
	store := b.svc.Store
	const n = 10_000
	var changes []refresh.Change
	add := func(id string) {
		changes = append(changes, refresh.Change{Model: refresh.Model{ID: id, Queue: "tables", Policy: refresh.DefaultPolicy(), CreatedAt: start}})
	}
	for i := range n {
		add(fmt.Sprintf("acme-%05d", i))
	}
	others := []string{"acme", "acme_1", "acmf-1", "acme0"}
	for i := range 2000 {
		others = append(others, fmt.Sprintf("globex-%05d", i))
	}
	for _, id := range others {
		add(id)
	}
	require.NoError(t, store.Modify(ctx, nil, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: changes}, nil
	}))
	srv := httptest.NewServer(b.handler)
	t.Cleanup(srv.Close)
	c, err := refreshhttp.NewClient(srv.URL, "", srv.Client())
	require.NoError(t, err)

	res, err := c.Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{Selector: refreshhttp.BulkSelector{Prefix: "acme-"}, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{DryRun: true, Matched: n, WouldChange: n}, res)
	require.Empty(t, paused(t, store), "a dry run writes nothing")
	require.Empty(t, takeEvents(t, store))

	// Read a model of the prefix and one outside it while the bulk action
	// runs, until it answers.
	done := make(chan struct{})
	reads := make(chan []time.Duration)
	go func() {
		var took []time.Duration
		defer func() { reads <- took }()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			id := []string{"acme-05000", "globex-00001"}[i%2]
			began := time.Now()
			if _, err := c.Get(ctx, id); err != nil {
				t.Errorf("get %s during the bulk action: %v", id, err)
				return
			}
			took = append(took, time.Since(began))
		}
	}()
	began := time.Now()
	res, err = c.Bulk(ctx, refresh.ActionPause, refreshhttp.BulkRequest{Selector: refreshhttp.BulkSelector{Prefix: "acme-"}, Reason: "maintenance"})
	elapsed := time.Since(began)
	close(done)
	took := <-reads
	require.NoError(t, err)
	require.Equal(t, refreshhttp.BulkResult{Matched: n, Changed: n, Failed: []refresh.BulkFailure{}}, res)
	require.NotEmpty(t, took, "reads made during the bulk action")
	slices.Sort(took)
	t.Logf("bulk pause of %d models: %s; %d reads meanwhile: median %s, p99 %s, max %s", n, elapsed.Round(time.Millisecond),
		len(took), took[len(took)/2], took[len(took)*99/100], took[len(took)-1])

	ids := paused(t, store)
	require.Len(t, ids, n)
	for _, id := range ids {
		require.True(t, strings.HasPrefix(id, "acme-"), id)
	}
	for _, id := range others {
		m, err := store.Get(ctx, id)
		require.NoError(t, err)
		require.False(t, m.Paused, id)
	}
	events := takeEvents(t, store)
	require.Len(t, events, n)
	byModel := map[string]int{}
	for _, e := range events {
		require.Equal(t, refresh.EventPause, e.Type)
		byModel[e.ModelID]++
	}
	require.Len(t, byModel, n, "one event per model")
	log := store.(refresh.AuditLog)
	for _, id := range []string{"acme-00000", "acme-05000", "acme-09999"} {
		entries, err := log.Audit(ctx, id, 0, 0)
		require.NoError(t, err)
		require.Len(t, entries, 1, id)
		require.Equal(t, "pause", entries[0].Action)
		require.Equal(t, "maintenance", entries[0].Reason)
		require.True(t, entries[0].Bulk)
	}
	entries, err := log.Audit(ctx, "globex-00001", 0, 0)
	require.NoError(t, err)
	require.Empty(t, entries)
}
