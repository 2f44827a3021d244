package ui_test

// Browser tests: headless Chromium, driven through the DevTools protocol
// (chromedp), against a real freshen serve on the PostgreSQL and Redis of
// scripts/with-servers.sh, which also installs Chromium. They are skipped,
// saying why, without DATABASE_URL and REDIS_URL or without Chromium.
//
// Screenshots of every page go to $FRESHEN_SCREENSHOTS (default: a
// temporary directory of the test); the test logs their paths.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// chromiumPath returns the Chromium binary, or "" when there is none.
func chromiumPath() string {
	if p := os.Getenv("FRESHEN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// served is a freshen serve of the test, with its own database and Redis
// prefix.
type served struct {
	base   string // http://127.0.0.1:port
	prefix string
	rdb    *redis.Client
	admin  *refreshhttp.Client
}

// The tokens freshen serve is given.
var browserTokens = []struct {
	name, secret string
	scopes       []refreshhttp.Scope
}{
	{"support", "support-secret", []refreshhttp.Scope{"read"}},
	{"oncall", "oncall-secret", []refreshhttp.Scope{"write"}},
	{"ops", "ops-secret", []refreshhttp.Scope{"admin"}},
}

// startServe builds freshen, creates a database, and runs freshen serve
// on it with the tokens above until the test ends.
func startServe(t *testing.T) *served {
	t.Helper()
	serverURL, redisURL := os.Getenv("DATABASE_URL"), os.Getenv("REDIS_URL")
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "freshen")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/freshen-dev/freshen/cmd/freshen").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	suffix := strings.ToLower(rand.Text()[:10])
	name := "ui_" + suffix
	admin, err := pgx.Connect(ctx, serverURL)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		_ = admin.Close(context.Background())
	})
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	u.Path = "/" + name

	s := &served{prefix: "ui-" + suffix}
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	s.rdb = redis.NewClient(opt)
	t.Cleanup(func() {
		iter := s.rdb.Scan(context.Background(), 0, s.prefix+":*", 1000).Iterator()
		for iter.Next(context.Background()) {
			s.rdb.Del(context.Background(), iter.Val())
		}
		_ = s.rdb.Close()
	})

	var tokens []refreshhttp.Token
	for _, tk := range browserTokens {
		tokens = append(tokens, refreshhttp.Token{Name: tk.name, Hash: refreshhttp.HashToken(tk.secret), Scopes: tk.scopes})
	}
	tokensJSON, err := json.Marshal(tokens)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	cmd := exec.Command(bin, "serve", "--database-url", u.String(), "--redis-url", redisURL, "--redis-prefix", s.prefix,
		"--addr", addr, "--instance-id", "ui-"+suffix, "--migrate", "--max-sleep", "1s", "--tokens", string(tokensJSON))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	// serve logs "serving" once the API (and the dashboard) are open.
	ready := make(chan error, 1)
	var logTail []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if len(logTail) < 50 {
				logTail = append(logTail, line)
			}
			if strings.Contains(line, `"msg":"serving"`) {
				ready <- nil
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- errors.New("serve exited before serving")
	}()
	select {
	case err := <-ready:
		require.NoError(t, err, "log:\n%s", strings.Join(logTail, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start within 30s")
	}
	s.base = "http://" + addr
	s.admin, err = refreshhttp.NewClient(s.base, "ops-secret", nil)
	require.NoError(t, err)
	return s
}

// waitUntil calls cond every 20ms until it holds, for at most timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// importSchedule is the schedule of import-7: daily in New York at the
// hour twelve hours from now, so that its next run is never close. Within
// its timeout (15m) of the next run, a retry would be aligned with that
// run, and the replay form test would count one attempt, not three.
var importSchedule = func() string {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("FREQ=DAILY;BYHOUR=%d", (refresh.SystemClock{}.Now().In(ny).Hour()+12)%24)
}()

// evil is a failure message that would run if a page did not escape it.
const evil = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> no date in row 3`

// seed creates the models of the tests: a scheduled table, an on-demand
// thumbnail (no worker takes its queue), a model disabled by a failure
// whose message holds HTML, and a dead letter.
func (s *served) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	put := func(id, body string) {
		_, _, err := s.admin.Put(ctx, id, []byte(body))
		require.NoError(t, err, id)
	}
	put("bigtable-1", `{"queue": "tables", "payload": {"input_url": "https://data.example.com/big.csv"}, "policy": {
		"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
		"timezone": "Europe/Paris", "timeout": "1h",
		"retry": {"delays": ["0s", "1m", "5m", "15m", "30m", "1h"]}}}`)
	put("thumbnail-1", `{"queue": "thumbnails", "payload": {"image": "s3://bucket/42.png"}, "policy": {"timeout": "5m"}}`)
	put("cache-1", `{"queue": "caches", "policy": {"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris", "timeout": "10m",
		"retry": {"backoff": {"strategy": "exponential", "base": "1m", "max_retries": 3}}}}`)
	// Its disabled message names {error}, so that the worker's message,
	// which holds HTML, reaches the pages (the default names none).
	put("import-7", `{"queue": "imports", "trigger": true, "policy": {"schedule": "`+importSchedule+`", "timezone": "America/New_York", "timeout": "15m",
		"disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}}`)

	// A worker of the imports queue fails with a validation error, which
	// disables the model at once.
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	w, err := queue.NewWorker(s.rdb, queue.WorkerOptions{Prefix: s.prefix, Queue: "imports", ID: "ui-test", Block: 100 * time.Millisecond},
		func(context.Context, queue.Job) error {
			return &queue.JobError{Kind: "validation", Message: evil, Permanent: true}
		})
	require.NoError(t, err)
	go func() {
		defer close(done)
		_ = w.Run(wctx)
	}()
	waitUntil(t, 15*time.Second, "import-7 to be disabled", func() bool {
		m, err := s.admin.Get(ctx, "import-7")
		return err == nil && m.Disabled
	})
	stop()
	<-done

	// A message no consumer can read goes to the dead letters.
	outcomes := s.prefix + ":{" + s.prefix + "}:outcomes"
	require.NoError(t, s.rdb.LPush(ctx, outcomes, `{"model_id": "bigtable-1", "outcome": "finished"}`).Err())
	waitUntil(t, 15*time.Second, "a dead letter", func() bool {
		list, err := s.admin.DeadLetters(ctx, "", 10)
		return err == nil && len(list.Dead) == 1
	})
}

// shots is where screenshots go.
func shots(t *testing.T) string {
	dir := os.Getenv("FRESHEN_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// screenshot saves the whole page as name.png and logs its path.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)))
	path := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// newBrowser starts headless Chromium with a fresh profile; it is closed
// when the test ends.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Run(ctx), "start chromium")
	return ctx
}

// step runs actions with a bound of 15 seconds.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Run(ctx, actions...), what)
}

func TestBrowser(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" || os.Getenv("REDIS_URL") == "" {
		t.Skip("DATABASE_URL and REDIS_URL are not set; run under scripts/with-servers.sh")
	}
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("Chromium is not installed and could not be (scripts/install-chromium.sh needs root and apt-get): the browser tests are skipped")
	}
	s := startServe(t)
	s.seed(t)
	dir := shots(t)
	ctx := newBrowser(t, chromium)
	ui := s.base + "/ui"

	t.Run("sign in", func(t *testing.T) {
		var path string
		step(t, ctx, "open the overview",
			chromedp.Navigate(ui+"/"),
			chromedp.WaitVisible(`#token`, chromedp.ByQuery),
			chromedp.Evaluate(`location.pathname`, &path))
		require.Equal(t, "/ui/login", path, "without a session the dashboard asks for a token")
		screenshot(t, ctx, dir, "login")

		var msg string
		step(t, ctx, "a wrong token",
			chromedp.SendKeys(`#token`, "not-a-token", chromedp.ByQuery),
			chromedp.Submit(`#token`, chromedp.ByQuery),
			chromedp.WaitVisible(`.field-error`, chromedp.ByQuery),
			chromedp.Text(`.field-error`, &msg, chromedp.ByQuery))
		require.Contains(t, msg, "is not a token this server knows")

		step(t, ctx, "sign in as oncall",
			chromedp.SendKeys(`#token`, "oncall-secret", chromedp.ByQuery),
			chromedp.Submit(`#token`, chromedp.ByQuery),
			chromedp.WaitVisible(`.tiles`, chromedp.ByQuery),
			chromedp.Evaluate(`location.pathname`, &path))
		require.Equal(t, "/ui/", path)
	})

	t.Run("overview", func(t *testing.T) {
		var total, disabled string
		step(t, ctx, "open the overview",
			chromedp.Navigate(ui+"/"),
			chromedp.Text(`.tile .n`, &total, chromedp.ByQuery),
			chromedp.Text(`.tile.disabled .n`, &disabled, chromedp.ByQuery))
		require.Equal(t, "4", total)
		require.Equal(t, "1", disabled)
		screenshot(t, ctx, dir, "overview")
	})

	t.Run("list shows the models", func(t *testing.T) {
		var ids []string
		step(t, ctx, "open the list",
			chromedp.Navigate(ui+"/models"),
			chromedp.WaitVisible(`table.models`, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("table.models tbody td:first-child a")].map(a => a.textContent)`, &ids))
		require.Equal(t, []string{"bigtable-1", "cache-1", "import-7", "thumbnail-1"}, ids)
		screenshot(t, ctx, dir, "models")

		step(t, ctx, "filter disabled",
			chromedp.SetValue(`#state`, "disabled", chromedp.ByQuery),
			chromedp.Submit(`#state`, chromedp.ByQuery),
			// The page the form loads has the option selected in its HTML.
			chromedp.WaitReady(`#state option[value=disabled][selected]`, chromedp.ByQuery),
			chromedp.WaitVisible(`table.models`, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("table.models tbody td:first-child a")].map(a => a.textContent)`, &ids))
		require.Equal(t, []string{"import-7"}, ids)

		var errText string
		step(t, ctx, "a queue name with a colon",
			chromedp.Navigate(ui+"/models?queue=a:b"),
			chromedp.WaitVisible(`.field-error`, chromedp.ByQuery),
			chromedp.Text(`.field-error`, &errText, chromedp.ByQuery))
		require.Contains(t, errText, "must be 1 to 200 letters, digits or ._@-")
	})

	t.Run("disabled model shows its reason", func(t *testing.T) {
		var reason string
		var pwned bool
		step(t, ctx, "open the disabled model",
			chromedp.Navigate(ui+"/models/import-7"),
			chromedp.WaitVisible(`.banner.disabled`, chromedp.ByQuery),
			chromedp.Text(`.banner.disabled blockquote.reason`, &reason, chromedp.ByQuery),
			chromedp.Evaluate(`window.pwned !== undefined || document.querySelector("main script, main img[src=x]") !== null`, &pwned))
		require.Equal(t, "Refresh disabled after 1 failed attempt(s): "+evil, reason, "the reason is shown as text")
		require.False(t, pwned, "nothing of the message ran or became an element")
		screenshot(t, ctx, dir, "model-disabled")
	})

	t.Run("model waiting on a disabled upstream", func(t *testing.T) {
		// daily-report waits for import-7, disabled with a message that
		// holds HTML, and for ghost-1, which does not exist; with a
		// freshness promise of a second, it is soon overdue.
		ctx0 := context.Background()
		_, _, err := s.admin.Put(ctx0, "daily-report", []byte(`{"queue": "reports", "upstreams": ["import-7", "ghost-1"],
			"policy": {"schedule": "FREQ=DAILY;BYHOUR=7", "timezone": "Europe/Paris", "timeout": "10m", "max_age": "1s"}}`))
		require.NoError(t, err)
		var m refreshhttp.ModelWithRuns
		waitUntil(t, 15*time.Second, "daily-report to be overdue", func() bool {
			m, err = s.admin.Get(ctx0, "daily-report")
			return err == nil && !time.Time(m.OverdueSince).IsZero()
		})
		require.NotEmpty(t, m.WaitingFor)

		var waiting, overdue string
		var rows [][]string
		var pwned bool
		step(t, ctx, "open the waiting model",
			chromedp.Navigate(ui+"/models/daily-report"),
			chromedp.WaitVisible(`.banner.waiting`, chromedp.ByQuery),
			chromedp.Text(`.banner.waiting blockquote.reason`, &waiting, chromedp.ByQuery),
			chromedp.Text(`.banner.overdue .banner-title`, &overdue, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("section.upstreams tbody tr")].map(r => [
				r.cells[0].textContent.trim(), r.cells[1].textContent.trim(), r.cells[0].querySelector("a") ? r.cells[0].querySelector("a").pathname : ""])`, &rows),
			chromedp.Evaluate(`window.pwned !== undefined || document.querySelector("main script, main img[src=x]") !== null`, &pwned))
		require.Equal(t, string(m.WaitingFor), waiting, "the API's sentence, as text")
		require.True(t, strings.HasPrefix(waiting, "waiting for import-7, whose refresh is disabled: Refresh disabled after 1 failed attempt(s): "+evil), waiting)
		require.True(t, strings.HasSuffix(waiting, "; ghost-1, which does not exist"), waiting)
		require.Equal(t, [][]string{{"import-7", "disabled", "/ui/models/import-7"}, {"ghost-1", "missing", ""}}, rows,
			"each upstream with its status; a missing one has no link")
		require.Contains(t, overdue, "Overdue since")
		require.False(t, pwned, "nothing of the upstream's message ran or became an element")
		screenshot(t, ctx, dir, "model-waiting")

		var path string
		step(t, ctx, "follow the upstream's link",
			chromedp.Click(`section.upstreams a`, chromedp.ByQuery),
			chromedp.WaitVisible(`.banner.disabled`, chromedp.ByQuery),
			chromedp.Evaluate(`location.pathname`, &path))
		require.Equal(t, "/ui/models/import-7", path)
	})

	t.Run("model waiting for a rate limit", func(t *testing.T) {
		// pull-1 takes the one start an hour of the rate limit of its
		// rate_key; pull-2, triggered after it, waits for the next.
		ctx0 := context.Background()
		_, err := s.admin.PutLimit(ctx0, refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 1, Per: refresh.Duration(time.Hour)})
		require.NoError(t, err)
		for _, id := range []string{"pull-1", "pull-2"} {
			_, _, err := s.admin.Put(ctx0, id, []byte(`{"queue": "pulls", "rate_key": "api.example.com", "trigger": true, "policy": {"timeout": "2h"}}`))
			require.NoError(t, err)
		}
		var m refreshhttp.ModelWithRuns
		waitUntil(t, 15*time.Second, "pull-2 to wait for the rate limit", func() bool {
			m, err = s.admin.Get(ctx0, "pull-2")
			return err == nil && m.WaitingLimit != nil && !time.Time(m.WaitingUntil).IsZero()
		})

		var badge, key, wait string
		step(t, ctx, "open the model waiting for a rate limit",
			chromedp.Navigate(ui+"/models/pull-2"),
			chromedp.WaitVisible(`.head .badge`, chromedp.ByQuery),
			chromedp.Text(`.head .badge`, &badge, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("dl.facts dt")].find(d => d.textContent === "Rate key").nextElementSibling.textContent`, &key),
			chromedp.Evaluate(`[...document.querySelectorAll("dl.facts dt")].find(d => d.textContent === "Waiting for a rate limit").nextElementSibling.textContent`, &wait))
		require.Equal(t, "waiting for a rate limit", badge)
		require.True(t, strings.HasPrefix(key, "api.example.com"), key)
		require.True(t, strings.HasPrefix(wait, "rate_key:api.example.com admits its next start "), wait)
		require.Contains(t, wait, "in 59 min", "an hour after pull-1's start")
		screenshot(t, ctx, dir, "model-rate-waiting")
		require.NoError(t, s.admin.DeleteLimit(ctx0, refresh.LimitRateKey, "api.example.com"))
	})

	t.Run("replay form", func(t *testing.T) {
		// import-7 was disabled by its first failure, a validation error.
		// Replayed under a policy that retries every kind twice at once,
		// the same failure costs three attempts before the disabling.
		var policy string
		step(t, ctx, "open the replay from the model's page",
			chromedp.Navigate(ui+"/models/import-7"),
			chromedp.WaitVisible(`#replay-days`, chromedp.ByQuery),
			chromedp.SetValue(`#replay-days`, "1", chromedp.ByQuery),
			chromedp.Click(`form.replay-open button`, chromedp.ByQuery),
			chromedp.WaitVisible(`form.replay #policy`, chromedp.ByQuery),
			chromedp.Value(`form.replay #policy`, &policy, chromedp.ByQuery))
		require.Contains(t, policy, `"schedule": "`+importSchedule+`"`, "the form proposes the model's own policy")

		var recorded, replayed, rows []string
		var pwned bool
		step(t, ctx, "replay under another policy",
			chromedp.SetValue(`form.replay #policy`, `{"schedule": "`+importSchedule+`", "timezone": "America/New_York", "timeout": "15m",
				"retry": {"delays": ["0s", "0s"], "non_retryable": []}, "disabled_message": "Refresh disabled after {attempts} failed attempt(s): {error}"}`, chromedp.ByQuery),
			chromedp.Click(`form.replay button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#result svg.chart`, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("#result table.tally tbody tr")].map(r => r.cells[0].textContent + ": " + r.cells[1].textContent.trim())`, &recorded),
			chromedp.Evaluate(`[...document.querySelectorAll("#result table.tally tbody tr")].map(r => r.cells[0].textContent + ": " + r.cells[2].textContent.trim())`, &replayed),
			chromedp.Evaluate(`[...document.querySelectorAll("#result .projection")].map(p => p.querySelectorAll("svg.chart rect.bar").length + " bars")`, &rows),
			chromedp.Evaluate(`window.pwned !== undefined || document.querySelector("main script, main img[src=x]") !== null`, &pwned))
		require.Equal(t, []string{"Attempts: 1", "Retries: 0"}, recorded[:2])
		require.Equal(t, []string{"Attempts: 3", "Retries: 2"}, replayed[:2])
		require.NotEqual(t, "Disabled: no", recorded[2])
		require.NotEqual(t, "Disabled: no", replayed[2])
		require.Equal(t, []string{"1 bars", "3 bars"}, rows, "a chart of each: one attempt recorded, three replayed")
		require.False(t, pwned, "the failure message in the replayed reason is text")
		screenshot(t, ctx, dir, "replay")

		var errText string
		step(t, ctx, "too many days",
			chromedp.SetValue(`#days`, "400", chromedp.ByQuery),
			chromedp.Click(`form.replay button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#days + .field-error`, chromedp.ByQuery),
			chromedp.Text(`#days + .field-error`, &errText, chromedp.ByQuery))
		require.Equal(t, `must be a whole number of days from 1 to 366, got "400"`, errText)
	})

	t.Run("trigger starts an attempt", func(t *testing.T) {
		var flash string
		step(t, ctx, "click trigger",
			chromedp.Navigate(ui+"/models/thumbnail-1"),
			chromedp.WaitVisible(`button[value=trigger]`, chromedp.ByQuery),
			chromedp.Click(`button[value=trigger]`, chromedp.ByQuery),
			chromedp.WaitVisible(`.flash.ok`, chromedp.ByQuery),
			chromedp.Text(`.flash.ok`, &flash, chromedp.ByQuery))
		require.Contains(t, flash, "Triggered thumbnail-1")
		// The scheduler starts it; no worker takes the thumbnails queue, so
		// it stays running.
		waitUntil(t, 10*time.Second, "the attempt to start", func() bool {
			m, err := s.admin.Get(context.Background(), "thumbnail-1")
			return err == nil && m.Running
		})
		var badge, outcome string
		step(t, ctx, "reload",
			chromedp.Reload(),
			chromedp.WaitVisible(`.head .badge`, chromedp.ByQuery),
			chromedp.Text(`.head .badge`, &badge, chromedp.ByQuery),
			chromedp.Text(`section.card:last-of-type tbody tr td:nth-child(4)`, &outcome, chromedp.ByQuery))
		require.Equal(t, "running", badge)
		require.Equal(t, "running", outcome, "the attempt history shows it")
		screenshot(t, ctx, dir, "model-running")
	})

	t.Run("scheduled model shows its timeline", func(t *testing.T) {
		var charts int
		step(t, ctx, "open the table",
			chromedp.Navigate(ui+"/models/bigtable-1"),
			chromedp.WaitVisible(`svg.chart`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll("svg.chart").length`, &charts))
		require.Equal(t, 2, charts, "if it fails, if it succeeds")
		screenshot(t, ctx, dir, "model-scheduled")
	})

	t.Run("policy preview shows the aligned retry", func(t *testing.T) {
		var decisions []string
		var summary string
		step(t, ctx, "simulate the example",
			chromedp.Navigate(ui+"/preview"),
			chromedp.WaitVisible(`#policy`, chromedp.ByQuery),
			chromedp.SetValue(`#start`, "2026-03-02T08:50:00Z", chromedp.ByQuery),
			chromedp.Click(`.preview button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#result svg.chart`, chromedp.ByQuery),
			chromedp.Text(`#result .summary`, &summary, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("#result svg text.decision")].map(t => t.textContent.trim())`, &decisions))
		// Every two hours in Paris from 10:00 (09:00 UTC); three failures
		// after 5m; the third retry (50m, 10:45 + 50m + 30m timeout) would
		// run past 12:00, so the retry is the 12:00 run.
		require.Equal(t, []string{"retry in 10m", "retry in 20m", "aligned: 12:00"}, decisions)
		require.Equal(t, "Succeeds Mon 2 Mar 2026, 12:05 CET after 3 failures; then runs Mon 2 Mar 14:00, Mon 2 Mar 16:00, Mon 2 Mar 18:00.", summary)
		screenshot(t, ctx, dir, "preview")

		var errText string
		step(t, ctx, "a broken multiplier",
			chromedp.SetValue(`#policy`, `{"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`, chromedp.ByQuery),
			chromedp.Click(`.preview button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#policy + .field-error`, chromedp.ByQuery),
			chromedp.Text(`#policy + .field-error`, &errText, chromedp.ByQuery))
		require.Equal(t, "policy.retry.backoff.multiplier: must be >= 1, got 0.5", errText)
		screenshot(t, ctx, dir, "preview-error")
	})

	t.Run("dead letters", func(t *testing.T) {
		var path string
		step(t, ctx, "oncall has no admin scope",
			chromedp.Navigate(ui+"/dead"),
			chromedp.WaitVisible(`main h1`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("main").innerText`, &path))
		require.Contains(t, path, "this needs scope admin")

		signIn(t, ctx, ui, "ops-secret")
		var reason, flash string
		step(t, ctx, "list and drop",
			chromedp.Navigate(ui+"/dead"),
			chromedp.WaitVisible(`table.dead`, chromedp.ByQuery),
			chromedp.Text(`table.dead tbody td:nth-child(3)`, &reason, chromedp.ByQuery))
		require.Contains(t, reason, "attempt_uid: missing", "the message has no attempt_uid")
		screenshot(t, ctx, dir, "dead")
		step(t, ctx, "drop",
			chromedp.Click(`table.dead input[name=ids]`, chromedp.ByQuery),
			chromedp.Click(`button[value=drop]`, chromedp.ByQuery),
			chromedp.WaitVisible(`.flash`, chromedp.ByQuery),
			chromedp.Text(`.flash`, &flash, chromedp.ByQuery))
		require.Equal(t, "Dropped 1 dead letter.", flash)
	})

	t.Run("limits", func(t *testing.T) {
		// Signed in as ops (admin): the navigation leads to the page; the
		// form sets a rate limit, refuses a burst over 10,000 naming it,
		// and a row's button deletes the limit.
		var rows []string
		var flash string
		step(t, ctx, "set a queue's limit and a rate limit",
			chromedp.Navigate(ui+"/"),
			chromedp.WaitVisible(`header nav a[href="/ui/limits"]`, chromedp.ByQuery),
			chromedp.Click(`header nav a[href="/ui/limits"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`form.limit-form`, chromedp.ByQuery),
			chromedp.SetValue(`#kind`, "queue", chromedp.ByQuery),
			chromedp.SetValue(`#key`, "exports", chromedp.ByQuery),
			chromedp.SetValue(`#max_running`, "5", chromedp.ByQuery),
			chromedp.Click(`form.limit-form button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`.flash.ok`, chromedp.ByQuery),
			chromedp.SetValue(`#kind`, "rate_key", chromedp.ByQuery),
			chromedp.SetValue(`#key`, "api.example.com", chromedp.ByQuery),
			chromedp.SetValue(`#max_starts`, "10", chromedp.ByQuery),
			chromedp.SetValue(`#per`, "1m", chromedp.ByQuery),
			chromedp.SetValue(`#burst`, "2", chromedp.ByQuery),
			// The first flash would stay until the page after this post
			// loads: it goes, so that the wait below finds the new one.
			chromedp.Evaluate(`document.querySelector(".flash.ok").remove()`, nil),
			chromedp.Click(`form.limit-form button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`.flash.ok`, chromedp.ByQuery),
			chromedp.Text(`.flash.ok`, &flash, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("table.limits tbody tr")].map(r => [...r.cells].slice(0, 6).map(c => c.textContent.trim()).join(" "))`, &rows))
		require.Equal(t, `Set rate_key "api.example.com" (max_starts 10 per 1m, burst 2).`, flash)
		require.Equal(t, []string{"queue exports 5 – – –", "rate_key api.example.com – 10 1m 2"}, rows)
		screenshot(t, ctx, dir, "limits")

		var errText string
		step(t, ctx, "a burst over 10,000",
			chromedp.SetValue(`#kind`, "rate_key", chromedp.ByQuery),
			chromedp.SetValue(`#key`, "api.example.com", chromedp.ByQuery),
			chromedp.SetValue(`#max_starts`, "10", chromedp.ByQuery),
			chromedp.SetValue(`#per`, "1m", chromedp.ByQuery),
			chromedp.SetValue(`#burst`, "20000", chromedp.ByQuery),
			chromedp.Click(`form.limit-form button.primary`, chromedp.ByQuery),
			chromedp.WaitVisible(`#burst + .field-error`, chromedp.ByQuery),
			chromedp.Text(`#burst + .field-error`, &errText, chromedp.ByQuery))
		require.Equal(t, "must be from 1 to 10000, got 20000", errText)
		screenshot(t, ctx, dir, "limits-error")

		step(t, ctx, "delete the rate limit",
			chromedp.Navigate(ui+"/limits"),
			chromedp.WaitVisible(`table.limits`, chromedp.ByQuery),
			chromedp.Click(`table.limits tbody tr:nth-child(2) button[value=delete]`, chromedp.ByQuery),
			chromedp.WaitVisible(`.flash.ok`, chromedp.ByQuery),
			chromedp.Text(`.flash.ok`, &flash, chromedp.ByQuery))
		require.True(t, strings.HasPrefix(flash, "Deleted the limit rate_key:api.example.com;"), flash)
		limits, err := s.admin.Limits(context.Background())
		require.NoError(t, err)
		require.Equal(t, []refresh.Limit{{Kind: refresh.LimitQueue, Key: "exports", MaxRunning: 5}}, limits.Limits, "the API lists what the page set")
		require.NoError(t, s.admin.DeleteLimit(context.Background(), refresh.LimitQueue, "exports"))
	})

	t.Run("read scope sees no buttons", func(t *testing.T) {
		signIn(t, ctx, ui, "support-secret")
		var buttons int
		step(t, ctx, "open a model",
			chromedp.Navigate(ui+"/models/bigtable-1"),
			chromedp.WaitVisible(`svg.chart`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll(".actions button").length`, &buttons))
		require.Zero(t, buttons)
	})
}

// signIn signs out and in again with token.
func signIn(t *testing.T, ctx context.Context, ui, token string) {
	t.Helper()
	step(t, ctx, fmt.Sprintf("sign in with %s", token),
		chromedp.Navigate(ui+"/"),
		chromedp.WaitVisible(`header .who button`, chromedp.ByQuery),
		chromedp.Click(`header .who button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, token, chromedp.ByQuery),
		chromedp.Submit(`#token`, chromedp.ByQuery),
		chromedp.WaitVisible(`.tiles`, chromedp.ByQuery))
}
