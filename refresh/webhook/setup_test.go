package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// t0 is when the tests' clocks start.
var t0 = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

// bundle is what a test of the dispatcher works with: a store in a schema
// of its own, a virtual clock and an in-memory queue.
type bundle struct {
	url    string
	schema string
	pool   *pgxpool.Pool
	store  *postgres.Store
	clock  *refresh.VirtualClock
	queue  *memory.Queue
}

// setup creates and migrates a schema for the test, dropped at its end. It
// skips when DATABASE_URL is unset: run under scripts/with-servers.sh.
func setup(t *testing.T) *bundle {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	exec(t, url, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, url, "DROP SCHEMA "+schema+" CASCADE") })
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, migrations.Migrate(ctx, conn))
	require.NoError(t, conn.Close(ctx))
	bd := &bundle{url: url, schema: schema, clock: refresh.NewVirtualClock(t0)}
	bd.pool, bd.store = bd.open(t)
	bd.queue = memory.NewQueue(bd.clock)
	return bd
}

// open returns a new pool on the test's schema and a store on it, as a
// restarted process would have.
func (b *bundle) open(t *testing.T) (*pgxpool.Pool, *postgres.Store) {
	t.Helper()
	cfg, err := postgres.ParseConfig(b.url, postgres.Session{})
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = b.schema
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, postgres.New(pool)
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}

// write commits events to the outbox, as a transition's batch does.
func (b *bundle) write(t *testing.T, events ...refresh.Event) {
	t.Helper()
	err := b.store.Modify(context.Background(), nil, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Events: events}, nil
	})
	require.NoError(t, err)
}

// publisher returns a publisher of the bundle's store that routes to
// endpoints, on queue q (the bundle's if nil).
func (b *bundle) publisher(t *testing.T, q refresh.Queue, endpoints ...Endpoint) *refresh.Publisher {
	t.Helper()
	if q == nil {
		q = b.queue
	}
	r, err := NewRouter(endpoints)
	require.NoError(t, err)
	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: q, Clock: b.clock, RouteFunc: r.Route})
	require.NoError(t, err)
	return p
}

// dispatcher returns a dispatcher of store (the bundle's if nil) whose
// sends are reported on the returned channel.
func (b *bundle) dispatcher(t *testing.T, store Store, cfg Config) (*Dispatcher, chan Sent) {
	t.Helper()
	if store == nil {
		store = b.store
	}
	sent := make(chan Sent, 1000)
	cfg.Store, cfg.Clock = store, b.clock
	cfg.AllowPrivate = true // the receivers are httptest servers on 127.0.0.1
	cfg.SentFunc = func(s Sent) { sent <- s }
	d, err := New(cfg)
	require.NoError(t, err)
	return d, sent
}

// rows returns the state of every delivery, by idempotency key and
// endpoint ("key@endpoint"), with its attempts.
func (b *bundle) rows(t *testing.T) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT idempotency_key || '@' || endpoint, state || '/' || attempts FROM webhook_deliveries`)
	require.NoError(t, err)
	out := map[string]string{}
	var k, v string
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error { out[k] = v; return nil })
	require.NoError(t, err)
	return out
}

// request is what the receiver got.
type request struct {
	endpoint  string // the path, which names the endpoint in these tests
	key       string
	signature string
	attempt   string
	event     string
	body      []byte
	status    int
}

// receiver is an HTTP server that answers each request as answer says for
// the n-th request (from 1) of its idempotency key, and records them all
// once answered.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []request
	counts map[string]int
	answer func(key string, n int) int // a status, or 0 to hang until the client gives up
}

func newReceiver(t *testing.T, answer func(key string, n int) int) *receiver {
	r := &receiver{counts: map[string]int{}, answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		key := req.Header.Get("Idempotency-Key")
		r.mu.Lock()
		r.counts[key]++
		n := r.counts[key]
		r.mu.Unlock()
		status := r.answer(key, n) // may block: it runs without the lock
		r.mu.Lock()
		r.got = append(r.got, request{endpoint: req.URL.Path[1:], key: key, signature: req.Header.Get(SignatureHeader),
			attempt: req.Header.Get("Freshen-Attempt"), event: req.Header.Get("Freshen-Event"), body: body, status: status})
		r.mu.Unlock()
		if status == 0 {
			<-req.Context().Done()
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "answer "+http.StatusText(status))
	}))
	t.Cleanup(r.Close)
	return r
}

// requests returns what the receiver got so far.
func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

// endpoint returns an endpoint of the receiver, at path /name.
func (r *receiver) endpoint(name string, events ...string) Endpoint {
	return Endpoint{Name: name, URL: r.URL + "/" + name, Secret: "secret-of-" + name + "-0123456789", Events: events}
}

// wait returns the next n sends reported on sent.
func wait(t *testing.T, sent <-chan Sent, n int) []Sent {
	t.Helper()
	out := make([]Sent, 0, n)
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case s := <-sent:
			out = append(out, s)
		case <-timeout:
			t.Fatalf("waited for %d sends, got %d", n, len(out))
		}
	}
	return out
}

// flakyQueue fails Publish while down.
type flakyQueue struct {
	*memory.Queue
	down bool
}

func (q *flakyQueue) Publish(ctx context.Context, events []refresh.Event) error {
	if q.down {
		return errors.New("redis down")
	}
	return q.Queue.Publish(ctx, events)
}

// decode reads a request's payload.
func decode(t *testing.T, body []byte) Payload {
	t.Helper()
	var p Payload
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}
