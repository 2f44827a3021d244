package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/rrule"
)

// Defaults of HostileConfig.
const (
	DefaultHostileDuration   = 20 * time.Second
	DefaultHostileRepeats    = 3
	DefaultHostileSettle     = time.Second
	DefaultHostileBackground = 600
	DefaultHostileClients    = 4
	DefaultHostileIdleConns  = 2000
	DefaultHostileSlowConns  = 50
	DefaultHostileTrickle    = 2 * time.Second
	DefaultHostilePass       = 1000
	DefaultHostileCrowd      = 2000
	// DefaultHostileConcurrency is the default worker concurrency of the
	// background traffic.
	DefaultHostileConcurrency = 16
)

// HostileConfig configures Hostile.
type HostileConfig struct {
	// Duration is how long the hostile clients attack in the loop phase
	// (default DefaultHostileDuration); the background traffic is first
	// watched alone for half as long.
	Duration time.Duration
	// Repeats is how many times each reproduction runs on the idle serve;
	// the most CPU of the runs is kept (default DefaultHostileRepeats).
	Repeats int
	// Settle is how long serve is left alone before its memory is read
	// after a reproduction (default DefaultHostileSettle).
	Settle time.Duration
	// Background is how many models cycle with a worker during the loop
	// phase, each due once a minute, Background/60 a second (default
	// DefaultHostileBackground); Concurrency is the worker's (default
	// DefaultHostileConcurrency).
	Background, Concurrency int
	// Clients is how many hostile clients run the reproductions in the loop
	// phase, besides the slow and the idle connections (default
	// DefaultHostileClients).
	Clients int
	// IdleConns is how many keep-alive connections the idle-connection
	// reproduction opens (default DefaultHostileIdleConns); SlowConns how
	// many connections trickle their headers, and as many their bodies
	// (default DefaultHostileSlowConns), one byte every TrickleEvery
	// (default DefaultHostileTrickle).
	IdleConns, SlowConns int
	TrickleEvery         time.Duration
	// Pass is how many models, each with its own variant of the costliest
	// accepted schedule, a simulated scheduler pass asks for their next
	// occurrence (default DefaultHostilePass).
	Pass int
	// Crowd is how many models with payloads at the limit come due at
	// once in the crowd phase (default DefaultHostileCrowd).
	Crowd int
	// ServeArgs are extra flags of freshen serve, e.g.
	// --http-read-timeout=5s to cut slow clients sooner.
	ServeArgs []string
}

func (c HostileConfig) withDefaults() (HostileConfig, error) {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Repeats", c.Repeats}, {"Background", c.Background}, {"Concurrency", c.Concurrency}, {"Clients", c.Clients},
		{"IdleConns", c.IdleConns}, {"SlowConns", c.SlowConns}, {"Pass", c.Pass}, {"Crowd", c.Crowd},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("bench: hostile: %s: must be >= 1, got %d", f.name, f.v)
		}
	}
	if c.Pass > maxVariants {
		return c, fmt.Errorf("bench: hostile: Pass: must be at most %d (the variants of a schedule), got %d", maxVariants, c.Pass)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Duration", c.Duration}, {"Settle", c.Settle}, {"TrickleEvery", c.TrickleEvery}} {
		if f.v < 0 {
			return c, fmt.Errorf("bench: hostile: %s: must be > 0, got %s", f.name, f.v)
		}
	}
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setD(&c.Duration, DefaultHostileDuration)
	set(&c.Repeats, DefaultHostileRepeats)
	setD(&c.Settle, DefaultHostileSettle)
	set(&c.Background, DefaultHostileBackground)
	set(&c.Concurrency, DefaultHostileConcurrency)
	set(&c.Clients, DefaultHostileClients)
	set(&c.IdleConns, DefaultHostileIdleConns)
	set(&c.SlowConns, DefaultHostileSlowConns)
	setD(&c.TrickleEvery, DefaultHostileTrickle)
	set(&c.Pass, DefaultHostilePass)
	set(&c.Crowd, DefaultHostileCrowd)
	return c, nil
}

// HostileResult holds the figures of the hostile run.
type HostileResult struct {
	ServePID int
	// CPUSource says how serve's CPU was read: from the schedstat of its
	// threads (nanoseconds), or from its stat (10 ms ticks) where the
	// kernel has no schedstat.
	CPUSource string
	// IdleCPU is the CPU serve uses per second when nobody talks to it;
	// it is taken off every CPU figure of a reproduction.
	IdleCPU time.Duration
	// Repeats is how many times each reproduction ran; Settle how long
	// serve was left alone before its memory was read after them.
	Repeats int
	Settle  time.Duration
	// Repros are the reproductions, each run Repeats times on an
	// otherwise idle serve.
	Repros []ReproResult
	// Next is the cost of finding next occurrences of the costliest
	// accepted schedules, in process.
	Next NextResult
	// Loop is the loop phase: the hostile clients against serve with
	// background traffic.
	Loop LoopResult
	// Crowd is the crowd phase: models with payloads at the limit due at
	// once, then bulk actions on them.
	Crowd CrowdResult
	// LoadBefore and LoadAfter are the machine's load average before and
	// after the run.
	LoadBefore, LoadAfter string
}

// ReproResult holds what one reproduction cost serve.
type ReproResult struct {
	Name string
	// Units is how many requests, connections or messages (Unit) one run
	// sends; the CPU per unit is CPU / Units.
	Units int
	Unit  string
	// Status is what serve answered each run (distinct answers joined
	// with " / "), e.g. "400" or "dead-lettered 1 of 1"; OK whether every
	// answer was the one its limit promises.
	Status string
	OK     bool
	// CPU is serve's CPU time during the run that took the most, less
	// what serve uses when idle over as long; Wall is the longest run.
	CPU, Wall time.Duration
	// RSSBefore is serve's resident set size (VmRSS) before the first run,
	// RSSAfter after the last one and Settle; PeakRSS the largest sampled
	// during a run. Bytes.
	RSSBefore, RSSAfter, PeakRSS int64
	// HeapBefore and HeapAfter are serve's Go heap in use
	// (go_memstats_heap_inuse_bytes) right after a garbage collection,
	// before the first run and after the last one and Settle: what serve
	// holds live, give or take the request that made it collect. HeapGC
	// reports whether both were read so; if not, garbage counts too.
	HeapBefore, HeapAfter int64
	HeapGC                bool
}

// CPUPerUnit is the CPU of one request, connection or message.
func (r ReproResult) CPUPerUnit() time.Duration { return r.CPU / time.Duration(max(r.Units, 1)) }

// Retained is how much serve's Go heap in use after a garbage collection
// grew over the runs: what they left live.
func (r ReproResult) Retained() int64 { return r.HeapAfter - r.HeapBefore }

// NextResult is the cost of next occurrences of the worst accepted
// schedules, in process, through refresh.Model.Next (the rrule cache,
// then rrule's Next), as the scheduler pays it.
type NextResult struct {
	Schedules []NextTime
	// Worst is the schedule whose next occurrence took longest.
	Worst NextTime
	// Queries is how many instants each schedule was asked about.
	Queries int
	// Pass is a scheduler pass over PassModels models, each with its own
	// variant of the schedule PassSchedule (the costliest to parse): Cold
	// when none was parsed before, Warm right after; PassMax is the
	// longest one model took cold, the fastest of coldRepeats passes over
	// new variants.
	PassModels                  int
	PassSchedule                string
	PassCold, PassWarm, PassMax time.Duration
}

// NextTime is the cost of one schedule: Max is its longest next
// occurrence (each instant timed a few times and the fastest kept, so
// that preemption does not count), Parse its first parse (the fastest on
// three variants).
type NextTime struct {
	Name       string
	Max, Parse time.Duration
}

// LoopResult holds the figures of the loop phase.
type LoopResult struct {
	Clients  int
	Duration time.Duration
	// Runs is how many reproductions the hostile clients ran, Units how
	// many requests, connections and messages they sent, Unexpected how
	// many runs serve did not answer as its limits promise, Errors how
	// many runs the client could not finish (FirstError the first).
	Runs, Units, Unexpected, Errors int
	// FirstUnexpected is the first unexpected answer, FirstError the
	// first error.
	FirstUnexpected, FirstError string
	// ServeCPU is serve's CPU during the attack, QuietCPU during the quiet
	// window before it.
	ServeCPU, QuietCPU time.Duration
	// PeakRSS is serve's peak resident set size during the attack: VmHWM
	// reset at its start, or else (PeakNote says why) the largest VmRSS
	// sampled.
	PeakRSS  int64
	PeakNote string
	// Background is how many models cycled; Quiet and Attack what they did
	// in each window.
	Background    int
	Quiet, Attack Traffic
}

// Traffic is what the background models did in a window: how many of
// their occurrences fell in it (Due), how many of those started, how late
// (start lateness: started_at minus the occurrence), and how many of their
// outcomes were applied in it.
type Traffic struct {
	Window                time.Duration
	Due, Started, Applied int
	P50, P99, Max         time.Duration
}

// AppliedPerSec is how many outcomes were applied per second.
func (t Traffic) AppliedPerSec() float64 { return float64(t.Applied) / t.Window.Seconds() }

// Hostile measures what hostile clients cost a real `freshen serve` child
// process. First, in process, the next occurrences of the costliest
// schedules a PUT accepts. Then each reproduction (requests at the edge of
// every limit, schedules refused and accepted, outcomes pushed on the
// outcomes list, slow and idle connections) runs Repeats times on an
// otherwise idle serve; each is measured from outside: serve's CPU (from
// /proc), its memory after a settle (VmRSS, and its Go heap right after a
// garbage collection), and its answers. Last, the hostile
// clients run every reproduction in a loop for Duration while Background
// models cycle with a `freshen bench worker` child: serve's peak memory
// and CPU, and whether the background models still start on time and
// their outcomes are applied, against a quiet window before the attack.
//
// Figures are returned, never judged; an error means the harness could
// not measure (or serve died).
func (b *Bench) Hostile(ctx context.Context, cfg HostileConfig) (HostileResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return HostileResult{}, err
	}
	res := HostileResult{Repeats: cfg.Repeats, Settle: cfg.Settle, LoadBefore: LoadAverage()}
	b.logf("hostile: next occurrences of the worst accepted schedules, in process")
	if res.Next, err = b.nextTimes(cfg.Pass); err != nil {
		return res, err
	}

	poolCfg, err := b.newSchema(ctx, "hostile")
	if err != nil {
		return res, err
	}
	b.clearRedis(ctx)
	b.logf("hostile: starting freshen serve")
	serve, err := b.startServe(ctx, poolCfg, cfg.ServeArgs...)
	if err != nil {
		return res, err
	}
	defer serve.kill()
	h := newHostile(b, serve, cfg)
	defer h.client.CloseIdleConnections()
	res.ServePID, res.CPUSource = serve.pid(), h.cpu.source()

	if err := h.measureIdle(ctx); err != nil {
		return res, err
	}
	res.IdleCPU = time.Duration(h.idle * float64(time.Second))
	for _, r := range h.repros() {
		b.logf("hostile: %s", r.name)
		rr, err := h.measure(ctx, r)
		if err != nil {
			return res, fmt.Errorf("%s: %w", r.name, err)
		}
		res.Repros = append(res.Repros, rr)
	}
	if res.Loop, err = h.loop(ctx, poolCfg); err != nil {
		return res, err
	}
	if res.Crowd, err = h.crowd(ctx, poolCfg); err != nil {
		return res, err
	}
	if err := serve.stop(); err != nil {
		return res, err
	}
	res.LoadAfter = LoadAverage()
	return res, nil
}

// CrowdResult holds the figures of the crowd phase: Models models whose
// payloads are at the limit (PayloadBytes each) come due at once and a
// worker runs them (Done is the time from due to the last success); then
// a bulk dry run and a bulk pause act on all of them, crowdListers
// clients list them all at once, and crowdStalled clients ask for a page
// of them at once and do not read it. PeakRSS is serve's
// peak resident set size over the phase: VmHWM reset at its start, or else
// (PeakNote says why) the largest VmRSS sampled.
type CrowdResult struct {
	Models, PayloadBytes int
	Done                 time.Duration
	// Stalled clients then ask for a page of 1,000 at once and read
	// none of it: StalledPages got a page, StalledRefused a 503.
	Stalled, StalledPages, StalledRefused int
	PeakRSS                               int64
	PeakNote                              string
}

// crowdTimeout is how long the crowd phase waits for its models to
// succeed.
const crowdTimeout = 5 * time.Minute

// crowdListers is how many clients list every model of the crowd at once,
// pages of 1,000, at the end of the crowd phase.
const crowdListers = 8

// crowdStalled is how many clients ask for a page of 1,000 models at once
// at the end of the crowd phase and do not read it.
const crowdStalled = 200

// stalledWait bounds how long stalledReaders waits for the heads of the
// answers.
const stalledWait = time.Minute

// stalledReaders opens n connections that each ask for GET
// /models?limit=1000 with a receive buffer of 4 KiB and read only the
// head of the answer: a 503 is read whole, a page is left unread. Once
// every connection has its head, it closes them all, and returns how many
// got a page and how many a 503.
func (h *hostile) stalledReaders(ctx context.Context, n int) (pages, refused int, err error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := d.DialContext(ctx, "tcp", h.serve.addr)
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /models?limit=1000 HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
			return 0, 0, err
		}
	}
	codes := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	deadline := h.b.clock.Now().Add(stalledWait)
	for i, c := range conns {
		wg.Go(func() {
			if errs[i] = c.SetReadDeadline(deadline); errs[i] != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
			if errs[i] = err; err != nil {
				return
			}
			codes[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				_, errs[i] = io.Copy(io.Discard, resp.Body)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("stalled readers: %w", err)
	}
	for _, code := range codes {
		switch code {
		case http.StatusOK:
			pages++
		case http.StatusServiceUnavailable:
			refused++
		default:
			return 0, 0, fmt.Errorf("stalled readers: answered %d", code)
		}
	}
	return pages, refused, nil
}

// listAll lists the models (GET /models, pages of 1,000, through the API's
// Go client) until the last page, and returns how many of them have an id
// starting with prefix.
func (h *hostile) listAll(ctx context.Context, prefix string) (int, error) {
	c, err := refreshhttp.NewClient(h.base, "", h.client)
	if err != nil {
		return 0, err
	}
	n := 0
	for o := (refreshhttp.ListOptions{Limit: 1000}); ; {
		page, err := c.List(ctx, o)
		if err != nil {
			return n, err
		}
		for _, m := range page.Models {
			if strings.HasPrefix(m.ID, prefix) {
				n++
			}
		}
		if page.Next == "" {
			return n, nil
		}
		o.After = page.Next
	}
}

// crowd runs the crowd phase (see CrowdResult).
func (h *hostile) crowd(ctx context.Context, poolCfg *pgxpool.Config) (CrowdResult, error) {
	b := h.b
	res := CrowdResult{Models: h.cfg.Crowd, PayloadBytes: refresh.DefaultLimits().MaxPayloadBytes}
	b.logf("hostile: crowd: %d models with payloads of %d bytes due at once", res.Models, res.PayloadBytes)
	worker, err := b.startWorker(ctx, h.cfg.Concurrency)
	if err != nil {
		return res, err
	}
	defer worker.kill()
	if err := resetPeakRSS(h.serve.pid()); err != nil {
		res.PeakNote = "VmHWM could not be reset (" + err.Error() + "): the largest VmRSS sampled"
	}
	sampler := h.sampleRSS()
	conn, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig)
	if err != nil {
		return res, fmt.Errorf("crowd: connect to database: %w", err)
	}
	defer conn.Close(ctx)
	payload := `"` + strings.Repeat("x", res.PayloadBytes-2) + `"`
	due := b.clock.Now()
	if _, err := conn.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
		SELECT 'crowd-' || lpad(i::text, 6, '0'), $1, $2::json, (SELECT freshen_policy_id($3::jsonb)), $4, $4 FROM generate_series(1, $5) AS i`,
		Queue, payload, b.policy, due, res.Models); err != nil {
		return res, fmt.Errorf("crowd: load models: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_notify($1, '')`, postgres.NotifyChannel); err != nil {
		return res, fmt.Errorf("crowd: wake the scheduler: %w", err)
	}
	for {
		var done int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM models WHERE id LIKE 'crowd-%' AND last_success_at IS NOT NULL`).Scan(&done); err != nil {
			return res, fmt.Errorf("crowd: count successes: %w", err)
		}
		if done == res.Models {
			break
		}
		if b.clock.Now().Sub(due) > crowdTimeout {
			return res, fmt.Errorf("crowd: %d of %d models succeeded after %s", done, res.Models, crowdTimeout)
		}
		if err := h.sleep(ctx, 50*time.Millisecond); err != nil {
			return res, fmt.Errorf("crowd: %d of %d models succeeded: %w", done, res.Models, err)
		}
	}
	res.Done = b.clock.Now().Sub(due)
	for _, body := range []string{`{"selector":{"prefix":"crowd-"},"dry_run":true}`, `{"selector":{"prefix":"crowd-"}}`} {
		code, answer, err := h.call(ctx, http.MethodPost, "/bulk/pause", []byte(body))
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d: %s", code, answer)
		}
		if err != nil {
			return res, fmt.Errorf("crowd: bulk pause %s: %w", body, err)
		}
	}
	var paused int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM models WHERE id LIKE 'crowd-%' AND paused`).Scan(&paused); err != nil {
		return res, fmt.Errorf("crowd: count paused models: %w", err)
	}
	if paused != res.Models {
		return res, fmt.Errorf("crowd: the bulk pause paused %d of %d models", paused, res.Models)
	}
	listed := make([]int, crowdListers)
	errs := make([]error, crowdListers)
	var wg sync.WaitGroup
	for i := range crowdListers {
		wg.Go(func() { listed[i], errs[i] = h.listAll(ctx, "crowd-") })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil && listed[i] != res.Models {
			err = fmt.Errorf("listed %d of %d models", listed[i], res.Models)
		}
		if err != nil {
			return res, fmt.Errorf("crowd: list the models: %w", err)
		}
	}
	res.Stalled = crowdStalled
	if res.StalledPages, res.StalledRefused, err = h.stalledReaders(ctx, crowdStalled); err != nil {
		return res, fmt.Errorf("crowd: %w", err)
	}
	if res.PeakRSS = sampler.stop(); res.PeakNote == "" {
		if res.PeakRSS, err = peakRSS(h.serve.pid()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// hostile is a hostile client of one freshen serve.
type hostile struct {
	b       *Bench
	cfg     HostileConfig
	serve   *child
	base    string // http://host:port
	client  *http.Client
	cpu     cpuMeter
	idle    float64      // serve's CPU per wall second when idle
	variant atomic.Int64 // makes each schedule text new
	looping atomic.Bool  // in the loop phase: clients run at once
}

func newHostile(b *Bench, serve *child, cfg HostileConfig) *hostile {
	return &hostile{
		b: b, cfg: cfg, serve: serve, base: "http://" + serve.addr,
		client: &http.Client{
			Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
			Timeout:   2 * time.Minute,
		},
		cpu: newCPUMeter(serve.pid()),
	}
}

// sleep waits d, or until ctx ends or serve exits.
func (h *hostile) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-h.b.clock.After(d):
		return nil
	case <-h.serve.done:
		return h.serve.exited()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// measureIdle sets h.idle from serve's CPU over two seconds alone, after
// one to let its start settle.
func (h *hostile) measureIdle(ctx context.Context) error {
	if err := h.sleep(ctx, time.Second); err != nil {
		return err
	}
	c0, err := h.cpu.read()
	if err != nil {
		return err
	}
	t0 := h.b.clock.Now()
	if err := h.sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	c1, err := h.cpu.read()
	if err != nil {
		return err
	}
	h.idle = float64(c1-c0) / float64(h.b.clock.Now().Sub(t0))
	return nil
}

// repro is one reproduction of a hostile client.
type repro struct {
	name  string
	units int
	unit  string // request, connection, message
	// models are written by the runs; they are deleted once the runs on
	// the idle serve are over, so that they do not run meanwhile.
	models []string
	// own reproductions run in the loop phase on a client of their own
	// rather than in turn with the others.
	own bool
	// redis reproductions need Redis (and serve's consumer), besides
	// serve's HTTP API.
	redis bool
	// prepare readies run i of client who ("" before the loop phase),
	// unmeasured, and returns the part that is measured.
	prepare func(ctx context.Context, i int, who string) (run, error)
}

// run is the measured part of a reproduction.
type run func(ctx context.Context) (answer, error)

// answer is what serve answered a run. release, if set, lets go what the
// run holds (connections), once serve's memory was sampled.
type answer struct {
	status  string
	ok      bool
	release func()
}

// measure runs r Repeats times on the idle serve.
func (h *hostile) measure(ctx context.Context, r repro) (ReproResult, error) {
	res := ReproResult{Name: r.name, Units: r.units, Unit: r.unit, OK: true}
	heap, collected, err := h.heapAfterGC(ctx)
	if err != nil {
		return res, err
	}
	res.HeapBefore, res.HeapGC = heap, collected
	if res.RSSBefore, err = residentSet(h.serve.pid()); err != nil {
		return res, err
	}
	var statuses []string
	for i := range h.cfg.Repeats {
		measured, err := r.prepare(ctx, i, "")
		if err != nil {
			return res, err
		}
		// Let the preparation's own work (events published...) end.
		if err := h.sleep(ctx, 200*time.Millisecond); err != nil {
			return res, err
		}
		c0, err := h.cpu.read()
		if err != nil {
			return res, err
		}
		t0 := h.b.clock.Now()
		sampler := h.sampleRSS()
		a, err := measured(ctx)
		wall := h.b.clock.Now().Sub(t0)
		if err == nil {
			// What serve does once it answered (events it publishes, a
			// connection it closes) counts.
			err = h.sleep(ctx, 100*time.Millisecond)
		}
		c1, cerr := h.cpu.read()
		elapsed := h.b.clock.Now().Sub(t0)
		peak := sampler.stop()
		if a.release != nil {
			a.release()
		}
		if err != nil {
			return res, err
		}
		if cerr != nil {
			return res, cerr
		}
		res.CPU = max(res.CPU, c1-c0-time.Duration(h.idle*float64(elapsed)), 0)
		res.Wall, res.PeakRSS = max(res.Wall, wall), max(res.PeakRSS, peak)
		if !slices.Contains(statuses, a.status) {
			statuses = append(statuses, a.status)
		}
		res.OK = res.OK && a.ok
	}
	res.Status = strings.Join(statuses, " / ")
	for _, id := range r.models {
		if _, err := h.do(ctx, http.MethodDelete, "/models/"+id, nil); err != nil {
			return res, fmt.Errorf("delete model %s: %w", id, err)
		}
	}
	if err := h.sleep(ctx, h.cfg.Settle); err != nil {
		return res, err
	}
	if res.RSSAfter, err = residentSet(h.serve.pid()); err != nil {
		return res, err
	}
	heap, collected, err = h.heapAfterGC(ctx)
	res.HeapAfter, res.HeapGC = heap, res.HeapGC && collected
	return res, err
}

// gcBody is the body of the requests that make serve collect garbage: a
// payload over its limit, refused once read. It is made at first use: every
// freshen process links this package, and serve would otherwise keep its
// quarter megabyte on the heap for nothing.
var gcBody = sync.OnceValue(func() []byte {
	return []byte(`{"payload":"` + strings.Repeat("x", 256<<10) + `"}`)
})

// heapAfterGC makes serve collect garbage, sending it requests that
// allocate and keep nothing until its count of collections moves, and
// returns its Go heap in use right after. It reports false, with the heap
// in use of the moment, if serve did not collect within 400 such requests
// (100 MB).
func (h *hostile) heapAfterGC(ctx context.Context) (int64, bool, error) {
	gcs, _, err := h.heapInUse(ctx)
	if err != nil {
		return 0, false, err
	}
	for range 400 {
		if _, err := h.do(ctx, http.MethodPut, "/models/h-garbage", gcBody()); err != nil {
			return 0, false, err
		}
		n, _, err := h.heapInUse(ctx)
		if err != nil {
			return 0, false, err
		}
		if n > gcs {
			// Let the sweep give back what the collection found free.
			if err := h.sleep(ctx, 100*time.Millisecond); err != nil {
				return 0, false, err
			}
			_, heap, err := h.heapInUse(ctx)
			return heap, true, err
		}
	}
	_, heap, err := h.heapInUse(ctx)
	return heap, false, err
}

// heapInUse reads serve's count of garbage collections and its Go heap in
// use (go_gc_duration_seconds_count, go_memstats_heap_inuse_bytes) on its
// /metrics.
func (h *hostile) heapInUse(ctx context.Context) (gcs uint64, heap int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("read /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("read /metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("read /metrics: %w", err)
	}
	inuse, gc := families["go_memstats_heap_inuse_bytes"], families["go_gc_duration_seconds"]
	if inuse == nil || len(inuse.GetMetric()) == 0 || gc == nil || len(gc.GetMetric()) == 0 {
		return 0, 0, errors.New("read /metrics: no go_memstats_heap_inuse_bytes or go_gc_duration_seconds")
	}
	return gc.GetMetric()[0].GetSummary().GetSampleCount(), int64(inuse.GetMetric()[0].GetGauge().GetValue()), nil
}

// do sends a request to serve and returns its status code, having read the
// body; target is the path and query, escaped.
func (h *hostile) do(ctx context.Context, method, target string, body []byte) (int, error) {
	code, _, err := h.call(ctx, method, target, body)
	return code, err
}

// call is do, also returning the "error" member of a JSON error answer.
func (h *hostile) call(ctx context.Context, method, target string, body []byte) (int, string, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+target, r)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPut || method == http.MethodDelete {
		// PUT and DELETE are idempotent: like GET, the transport may send
		// them again on a new connection when the server closed the kept-
		// alive one it reused just as the request went out (the connection
		// limit closes the longest-idle connection for a new client). The
		// empty value marks the request so without sending the header.
		req.Header["Idempotency-Key"] = nil
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return 0, "", err
	}
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode >= 400 && json.Unmarshal(data, &e) == nil {
		return resp.StatusCode, e.Error, nil
	}
	return resp.StatusCode, "", nil
}

// rssSampler samples serve's VmRSS until stopped.
type rssSampler struct {
	stopc chan struct{}
	peak  chan int64
}

func (h *hostile) sampleRSS() rssSampler {
	s := rssSampler{stopc: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		for {
			if v, err := residentSet(h.serve.pid()); err == nil {
				peak = max(peak, v)
			}
			select {
			case <-s.stopc:
				s.peak <- peak
				return
			case <-h.b.clock.After(20 * time.Millisecond):
			}
		}
	}()
	return s
}

// stop returns the largest VmRSS sampled.
func (s rssSampler) stop() int64 {
	close(s.stopc)
	return <-s.peak
}

// residentSet returns the resident set size (VmRSS) of process pid, in
// bytes.
func residentSet(pid int) (int64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("RSS: %w", err)
	}
	s, err := p.NewStatus()
	if err != nil {
		return 0, fmt.Errorf("RSS: %w", err)
	}
	return int64(s.VmRSS), nil
}

// resetPeakRSS resets the peak resident set size (VmHWM) of process pid to
// its current size (proc(5), clear_refs).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// cpuMeter reads the CPU time a process has used: the sum of its threads'
// schedstat run times (nanoseconds) where the kernel has them, else the
// utime and stime of its stat (10 ms ticks). Threads that exit take their
// schedstat time with them; Go rarely ends a thread.
type cpuMeter struct {
	pid       int
	schedstat bool
}

func newCPUMeter(pid int) cpuMeter {
	_, err := threadsCPU(pid)
	return cpuMeter{pid: pid, schedstat: err == nil}
}

func (m cpuMeter) source() string {
	if m.schedstat {
		return "schedstat of its threads, ns"
	}
	return "stat, 10 ms ticks"
}

func (m cpuMeter) read() (time.Duration, error) {
	if m.schedstat {
		return threadsCPU(m.pid)
	}
	return processCPU(m.pid)
}

// threadsCPU returns the sum of the run times of process pid's threads.
func threadsCPU(pid int) (time.Duration, error) {
	threads, err := procfs.AllThreads(pid)
	if err != nil {
		return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
	}
	var total uint64
	read := 0
	for _, t := range threads {
		s, err := t.Schedstat()
		if err != nil {
			continue // ended meanwhile
		}
		total += s.RunningNanoseconds
		read++
	}
	if read == 0 {
		return 0, fmt.Errorf("CPU of process %d: no thread's schedstat could be read", pid)
	}
	return time.Duration(total), nil
}

// loop runs the hostile clients for Duration against serve while the
// background models cycle, after a quiet window with the background
// alone.
func (h *hostile) loop(ctx context.Context, poolCfg *pgxpool.Config) (LoopResult, error) {
	b, cfg := h.b, h.cfg
	res := LoopResult{Clients: cfg.Clients, Duration: cfg.Duration, Background: cfg.Background}
	h.looping.Store(true)
	b.logf("hostile: loop: %d background models due once a minute, a worker of concurrency %d", cfg.Background, cfg.Concurrency)
	if err := h.createBackground(ctx); err != nil {
		return res, err
	}
	worker, err := b.startWorker(ctx, cfg.Concurrency)
	if err != nil {
		return res, err
	}
	defer worker.kill()

	quiet := max(cfg.Duration/2, time.Second)
	b.logf("hostile: loop: background alone for %s", quiet)
	q0 := b.clock.Now()
	c0, err := h.cpu.read()
	if err != nil {
		return res, err
	}
	if err := h.sleep(ctx, quiet); err != nil {
		return res, err
	}
	q1 := b.clock.Now()
	c1, err := h.cpu.read()
	if err != nil {
		return res, err
	}
	res.QuietCPU = c1 - c0

	b.logf("hostile: loop: %d hostile clients, %d slow and %d idle connections, for %s", cfg.Clients, 2*cfg.SlowConns, cfg.IdleConns, cfg.Duration)
	if err := resetPeakRSS(h.serve.pid()); err != nil {
		res.PeakNote = "VmHWM could not be reset (" + err.Error() + "): the largest VmRSS sampled"
	}
	sampler := h.sampleRSS()
	attack, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		all   = h.repros()
		turns []repro
	)
	for _, r := range all {
		if !r.own {
			turns = append(turns, r)
		}
	}
	// tally counts the end of one run.
	tally := func(r repro, a answer, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && attack.Err() != nil: // cut short by the end of the attack
		case err != nil:
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = r.name + ": " + err.Error()
			}
		default:
			res.Runs++
			res.Units += r.units
			if !a.ok {
				res.Unexpected++
				if res.FirstUnexpected == "" {
					res.FirstUnexpected = r.name + ": " + a.status
				}
			}
		}
	}
	once := func(r repro, i int, who string, hold time.Duration) {
		measured, err := r.prepare(attack, i, who)
		if err != nil {
			tally(r, answer{}, err)
			return
		}
		a, err := measured(attack)
		if err == nil && hold > 0 {
			select {
			case <-b.clock.After(hold):
			case <-attack.Done():
			}
		}
		if a.release != nil {
			a.release()
		}
		tally(r, a, err)
	}
	c2, err := h.cpu.read()
	if err != nil {
		return res, err
	}
	a0 := b.clock.Now()
	for c := range cfg.Clients {
		wg.Go(func() {
			who := fmt.Sprintf("-c%d", c)
			for i := 0; attack.Err() == nil; i++ {
				once(turns[(i+c*len(turns)/cfg.Clients)%len(turns)], i, who, 0)
			}
		})
	}
	for _, r := range all {
		if r.own {
			wg.Go(func() {
				for i := 0; attack.Err() == nil; i++ {
					once(r, i, "-own", time.Second)
				}
			})
		}
	}
	err = h.sleep(ctx, cfg.Duration)
	stop()
	wg.Wait()
	a1 := b.clock.Now()
	c3, cerr := h.cpu.read()
	sampled := sampler.stop()
	if err != nil {
		return res, err
	}
	if cerr != nil {
		return res, cerr
	}
	res.ServeCPU = c3 - c2
	res.PeakRSS = sampled
	if res.PeakNote == "" {
		if res.PeakRSS, err = peakRSS(h.serve.pid()); err != nil {
			return res, err
		}
	}

	// Starts due at the end of the attack may come a little later.
	b.logf("hostile: loop: background alone for 3s more, then the attempts are read")
	if err := h.sleep(ctx, 3*time.Second); err != nil {
		return res, err
	}
	select {
	case <-worker.done:
		return res, worker.exited()
	default:
	}
	windows, err := h.background(ctx, poolCfg, [][2]time.Time{{q0, q1}, {a0, a1}})
	if err != nil {
		return res, err
	}
	res.Quiet, res.Attack = windows[0], windows[1]
	return res, worker.stop()
}

// Background models: bg-0000 and up, in the harness's queue, each due
// once a minute at second i % 60.

func backgroundID(i int) string { return fmt.Sprintf("bg-%04d", i) }

// createBackground writes the background models through the API.
func (h *hostile) createBackground(ctx context.Context) error {
	day := h.b.clock.Now().Truncate(24 * time.Hour)
	ids := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range ids {
				text := dtstart(day.Add(time.Duration(i%60)*time.Second)) + "RRULE:FREQ=MINUTELY"
				body := []byte(`{"queue":"` + Queue + `","policy":{"schedule":` + jsonString(text) + `,"timeout":"1m"}}`)
				code, err := h.do(ctx, http.MethodPut, "/models/"+backgroundID(i), body)
				if err == nil && code != http.StatusCreated {
					err = fmt.Errorf("status %d", code)
				}
				if err != nil {
					errs <- fmt.Errorf("create background model %s: %w", backgroundID(i), err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range h.cfg.Background {
		select {
		case ids <- i:
		case err = <-errs:
			break feed
		}
	}
	close(ids)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// background reads the attempts of the background models and returns what
// they did in each window.
func (h *hostile) background(ctx context.Context, poolCfg *pgxpool.Config, windows [][2]time.Time) ([]Traffic, error) {
	conn, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT model_id, started_at, finished_at, coalesce(outcome::text, '') FROM attempts WHERE model_id LIKE 'bg-%'`)
	if err != nil {
		return nil, fmt.Errorf("read background attempts: %w", err)
	}
	var attempts []bgAttempt
	for rows.Next() {
		var (
			id       string
			a        bgAttempt
			finished *time.Time
			outcome  string
		)
		if err := rows.Scan(&id, &a.started, &finished, &outcome); err != nil {
			return nil, fmt.Errorf("read background attempts: %w", err)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(id, "bg-"))
		if err != nil {
			return nil, fmt.Errorf("read background attempts: model id %q", id)
		}
		a.second, a.success = i%60, outcome == "success"
		if finished != nil {
			a.finished = *finished
		}
		attempts = append(attempts, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read background attempts: %w", err)
	}
	perSecond := make([]int, 60)
	for i := range h.cfg.Background {
		perSecond[i%60]++
	}
	out := make([]Traffic, len(windows))
	for k, w := range windows {
		out[k] = traffic(attempts, perSecond, w[0], w[1])
	}
	return out, nil
}

// bgAttempt is an attempt of a background model due every minute at
// second of the minute.
type bgAttempt struct {
	second            int
	started, finished time.Time
	success           bool
}

// traffic returns what the background models did from `from` to `to`:
// perSecond[s] models are due at second s of every minute.
func traffic(attempts []bgAttempt, perSecond []int, from, to time.Time) Traffic {
	t := Traffic{Window: to.Sub(from)}
	for s := from.Truncate(time.Second); s.Before(to); s = s.Add(time.Second) {
		if !s.Before(from) {
			t.Due += perSecond[s.Unix()%60]
		}
	}
	var late []time.Duration
	for _, a := range attempts {
		// The occurrence is the last instant at a.second of a minute at or
		// before the start.
		lateness := time.Duration(((a.started.UnixNano()-int64(a.second)*1e9)%60e9 + 60e9) % 60e9)
		if occ := a.started.Add(-lateness); !occ.Before(from) && occ.Before(to) {
			late = append(late, lateness)
		}
		if a.success && !a.finished.Before(from) && a.finished.Before(to) {
			t.Applied++
		}
	}
	t.Started = len(late)
	if len(late) > 0 {
		slices.Sort(late)
		t.P50, t.P99, t.Max = late[len(late)/2], late[min(len(late)-1, len(late)*99/100)], late[len(late)-1]
	}
	return t
}

// nextQueries is how many instants nextTimes asks each schedule about.
const nextQueries = 256

// coldRepeats is how many times nextTimes times each model of its pass
// cold, on a new variant each time.
const coldRepeats = 3

// nextTimes times, in process, the first parse and the next occurrences
// of the worst accepted schedules through refresh.Model.Next, as the
// scheduler pays them, then a pass over pass models, each with its own
// variant of the schedule costliest to parse.
func (b *Bench) nextTimes(pass int) (NextResult, error) {
	now := b.clock.Now()
	lim := refresh.DefaultLimits()
	res := NextResult{Queries: nextQueries, PassModels: pass}
	// From a day before now to twenty years after, off the second.
	instants := make([]time.Time, nextQueries)
	step := 20 * 365 * 24 * time.Hour / nextQueries
	for i := range instants {
		instants[i] = now.Add(-24*time.Hour + time.Duration(i)*step + time.Duration(i*7919)*time.Millisecond)
	}
	worst := worstSchedules(now, 0)
	// The first parse of each schedule is timed on variant 0 and on two
	// more that the pass below does not use, and the fastest kept.
	others := [][]namedText{worstSchedules(now, maxVariants-1), worstSchedules(now, maxVariants-2)}
	costliest := 0
	for k, s := range worst {
		t := NextTime{Name: s.name, Parse: math.MaxInt64}
		for _, text := range []string{s.text, others[0][k].text, others[1][k].text} {
			t0 := b.clock.Now()
			_, err := rrule.Parse(text, rrule.Options{Created: now, Limits: lim.Schedule})
			t.Parse = min(t.Parse, b.clock.Now().Sub(t0))
			if err != nil {
				return res, fmt.Errorf("schedule %q: %w", s.name, err)
			}
		}
		p, err := refresh.ParsePolicy([]byte(`{"schedule":`+jsonString(s.text)+`}`), lim)
		if err == nil {
			err = p.CheckAt(now, now, lim)
		}
		if err != nil {
			return res, fmt.Errorf("schedule %q is refused at %s: %w", s.name, now.Format(time.RFC3339), err)
		}
		m := refresh.Model{ID: "next", Policy: p, CreatedAt: now}
		for _, at := range instants {
			fastest := time.Duration(math.MaxInt64)
			for range 3 {
				t0 := b.clock.Now()
				m.Next(at)
				fastest = min(fastest, b.clock.Now().Sub(t0))
			}
			t.Max = max(t.Max, fastest)
		}
		res.Schedules = append(res.Schedules, t)
		if t.Max > res.Worst.Max {
			res.Worst = t
		}
		if t.Parse > res.Schedules[costliest].Parse {
			costliest = k
		}
	}

	// The pass: every model due now, each with a schedule of its own, none
	// parsed before (cold), then again at once (warm, as far as the rrule
	// cache holds them). The policies are built as the store reads them
	// back, without a parse. A model's cold figure is the fastest of up to
	// coldRepeats passes, the later ones after the warm pass, each over
	// variants never parsed before (of the same cost: only their times
	// move), so that a pause of the machine does not count, as for the
	// next occurrences above; the whole pass is the first.
	res.PassSchedule = worst[costliest].name
	cold := func(round int, took []time.Duration) (models []refresh.Model) {
		for i := range pass {
			p := refresh.DefaultPolicy()
			p.Schedule = worstSchedules(now, 1+round*pass+i)[costliest].text
			m := refresh.Model{ID: fmt.Sprintf("pass-%d", i), Policy: p, CreatedAt: now}
			t0 := b.clock.Now()
			m.Next(now)
			took[i] = min(took[i], b.clock.Now().Sub(t0))
			models = append(models, m)
		}
		return models
	}
	fastest := make([]time.Duration, pass)
	for i := range fastest {
		fastest[i] = math.MaxInt64
	}
	models := cold(0, fastest)
	for _, d := range fastest {
		res.PassCold += d
	}
	t0 := b.clock.Now()
	for _, m := range models {
		m.Next(now)
	}
	res.PassWarm = b.clock.Now().Sub(t0)
	// Variant 0 and the last two were parsed above.
	for round := 1; round < coldRepeats && (round+1)*pass < maxVariants-2; round++ {
		cold(round, fastest)
	}
	res.PassMax = slices.Max(fastest)
	return res, nil
}
