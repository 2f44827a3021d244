package http_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// setupDead returns a bundle whose server serves the dead-letter list of a
// queue on miniredis, with tokens, and the list's Redis client and key.
// The list holds three outcomes refused by their consumer, the oldest
// valid.
func setupDead(t *testing.T) (*bundle, *redis.Client, *queue.Redis) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, queue.Options{Consumer: "c1", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx := context.Background()
	valid, err := json.Marshal(refresh.Outcome{ModelID: "acme-1", AttemptUID: "u1", Type: refresh.OutcomeSuccess})
	require.NoError(t, err)
	require.NoError(t, rdb.LPush(ctx, outcomesKey, valid).Err())
	got, err := q.Receive(ctx, 10, 0)
	require.NoError(t, err)
	require.NoError(t, q.DeadLetter(ctx, got[0], "the store refused it: deadlock"))
	require.NoError(t, rdb.LPush(ctx, outcomesKey, `{"model_id":"m2"}`, `[]`).Err())
	_, err = q.Receive(ctx, 10, 0)
	require.NoError(t, err)
	return setupAuth(t, refreshhttp.WithDeadLetters(q)), rdb, q
}

const outcomesKey = "freshen:{freshen}:outcomes"

func TestDeadRoutes(t *testing.T) {
	t.Parallel()
	b, rdb, _ := setupDead(t)
	ctx := context.Background()
	c := b.client(t, "admin")

	list, err := c.DeadLetters(ctx, "", 2)
	require.NoError(t, err)
	require.Len(t, list.Dead, 2)
	require.NotEmpty(t, list.Next)
	require.Equal(t, "must be a JSON object, got an array", list.Dead[0].Reason)
	require.Equal(t, "[]", list.Dead[0].Message)
	require.Equal(t, "outcomes", string(list.Dead[0].List))
	require.Equal(t, "attempt_uid: missing", list.Dead[1].Reason)
	rest, err := c.DeadLetters(ctx, list.Next, 2)
	require.NoError(t, err)
	require.Len(t, rest.Dead, 1)
	require.Empty(t, rest.Next)
	oldest := rest.Dead[0]
	require.Equal(t, "the store refused it: deadlock", oldest.Reason)

	// The JSON of an entry.
	rec := b.send(authorized(httpRequest(t, "GET", "/dead?limit=1", ""), "admin"))
	require.Equal(t, http.StatusOK, rec.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	entry := body["dead"].([]any)[0].(map[string]any)
	require.Equal(t, []string{"at", "id", "list", "message", "reason"}, keys(entry))

	// Requeue by id: the valid outcome goes back to the outcomes list.
	res, err := c.RequeueDead(ctx, []string{oldest.ID, "00000000000000ff"})
	require.NoError(t, err)
	require.Equal(t, refreshhttp.RequeueResult{Requeued: 1, Missing: []string{"00000000000000ff"}, Refused: []refreshhttp.DeadRefusal{}}, res)
	msgs, err := rdb.LRange(ctx, outcomesKey, 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{oldest.Message}, msgs)

	// Drop one by DELETE, then the rest.
	b.deleteDead(t, list.Dead[0].ID, http.StatusNoContent)
	b.deleteDead(t, list.Dead[0].ID, http.StatusNotFound)
	dropped, err := c.DropAllDead(ctx)
	require.NoError(t, err)
	require.Equal(t, refreshhttp.DropResult{Dropped: 1, Missing: []string{}}, dropped)
	list, err = c.DeadLetters(ctx, "", 0)
	require.NoError(t, err)
	require.Empty(t, list.Dead)
	require.Empty(t, list.Next)
}

func TestDeadRoutesNeedAdmin(t *testing.T) {
	t.Parallel()
	b, _, _ := setupDead(t)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/dead", ""},
		{"POST", "/dead/requeue", `{"all": true}`},
		{"POST", "/dead/drop", `{"all": true}`},
		{"DELETE", "/dead/0123456789abcdef", ""},
	} {
		for token, code := range map[string]int{"": 401, "reader": 403, "writer": 403, "acme": 403} {
			req := httpRequest(t, r.method, r.path, r.body)
			if token != "" {
				req = authorized(req, token)
			}
			rec := b.send(req)
			require.Equal(t, code, rec.Code, "%s %s with %q: %s", r.method, r.path, token, rec.Body.String())
		}
	}
	// Nothing was requeued or dropped.
	list, err := b.client(t, "admin").DeadLetters(context.Background(), "", 0)
	require.NoError(t, err)
	require.Len(t, list.Dead, 3)
}

func TestDeadRoutesRefuse(t *testing.T) {
	t.Parallel()
	b, _, _ := setupDead(t)
	tests := []struct {
		method, path, body string
		error              string
	}{
		{"GET", "/dead?after=x", "", "after: must be the next of a previous page"},
		{"GET", "/dead?limit=0", "", `limit: must be an integer between 1 and 1000, got "0"`},
		{"GET", "/dead?id=1", "", "id: unknown parameter; want one of after, limit"},
		{"POST", "/dead/requeue", "", `body: is empty; send {"ids": ["..."]} or {"all": true}`},
		{"POST", "/dead/requeue", `{}`, `body: must have ids or "all": true`},
		{"POST", "/dead/requeue", `{"all": false}`, "all: must be true (or left out, with ids), got false"},
		{"POST", "/dead/requeue", `{"ids": ["0123456789abcdef"], "all": true}`, "body: must have ids or all, not both"},
		{"POST", "/dead/requeue", `{"ids": []}`, "ids: must list 1 to 1000 ids, got 0"},
		{"POST", "/dead/requeue", `{"ids": "abc"}`, `ids: must be a list of dead-letter ids, got "abc"`},
		{"POST", "/dead/drop", `{"ids": ["abc", "XYZ", ""]}`, "ids[1]: must be a dead-letter id: hex digits, as GET /dead shows; ids[2]: must be a dead-letter id: hex digits, as GET /dead shows"},
		{"POST", "/dead/drop", `{"id": "abc"}`, "id: unknown field; want ids or all"},
		{"DELETE", "/dead/xyz", "", "id: must be a dead-letter id: hex digits, as GET /dead shows"},
	}
	for _, tt := range tests {
		rec := b.send(authorized(httpRequest(t, tt.method, tt.path, tt.body), "admin"))
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s %s: %s", tt.method, tt.path, tt.body, rec.Body.String())
		msg, _ := errorOf(t, rec)
		require.Equal(t, tt.error, msg, "%s %s %s", tt.method, tt.path, tt.body)
	}
	list, err := b.client(t, "admin").DeadLetters(context.Background(), "", 0)
	require.NoError(t, err)
	require.Len(t, list.Dead, 3)
}

// TestDeadRoutesAbsent checks that a server without a dead-letter list has
// no /dead routes.
func TestDeadRoutesAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, _ := b.do(t, "GET", "/dead", "")
	require.Equal(t, http.StatusNotFound, code)
}

// deleteDead sends DELETE /dead/{id} as admin and checks the status.
func (b *bundle) deleteDead(t *testing.T, id string, want int) {
	t.Helper()
	rec := b.send(authorized(httpRequest(t, "DELETE", "/dead/"+id, ""), "admin"))
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func httpRequest(t *testing.T, method, path, body string) *http.Request {
	t.Helper()
	return httptest.NewRequest(method, path, strings.NewReader(body))
}

func authorized(r *http.Request, token string) *http.Request {
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
