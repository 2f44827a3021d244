package main

// Tests of what an operator meets: help, secrets, the schema check,
// readiness, and the HTTP server's limits.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every command, and freshen itself, prints its usage on stderr and exits
// 0 on -h and --help.
func TestHelpExitsZero(t *testing.T) {
	names := []string{""}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for _, name := range names {
		for _, flag := range []string{"-h", "--help"} {
			t.Run(strings.TrimSpace(name+" "+flag), func(t *testing.T) {
				args := []string{flag}
				if name != "" {
					args = []string{name, flag}
				}
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
				require.Equal(t, 0, code, stderr.String())
				require.Contains(t, stderr.String(), "usage: freshen")
				require.Empty(t, stdout.String())
			})
		}
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, nil, &stdout, &stderr), "no command is a usage error")
	require.Contains(t, stderr.String(), "usage: freshen")
}

func TestRedactor(t *testing.T) {
	tests := []struct {
		url, text, want string
	}{
		{"postgres://u:s3cret@db:5432/x", "dial postgres://u:s3cret@db:5432/x: refused", "dial postgres://u:xxxxx@db:5432/x: refused"},
		{"postgres://u:p%40ss@db/x", "url postgres://u:p%40ss@db/x, password p@ss", "url postgres://u:xxxxx@db/x, password xxxxx"},
		{"postgres://u@db/x?password=s3cret&sslmode=disable", "postgres://u@db/x?password=s3cret&sslmode=disable", "postgres://u@db/x?password=xxxxx&sslmode=disable"},
		{"host=db user=u password='se cret' dbname=x", "password='se cret' dbname=x", "password='xxxxx' dbname=x"},
		{"redis://:s3cret@ho st:6379/0", `parse "redis://:s3cret@ho st:6379/0": invalid character`, `parse "redis://:xxxxx@ho st:6379/0": invalid character`},
		{"postgres://u@db/x", "nothing to hide", "nothing to hide"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, newRedactor(tt.url).String(tt.text), tt.url)
	}
	require.Equal(t, "postgres://u:xxxxx@db:5432/x", redactURL("postgres://u:s3cret@db:5432/x"))
}

// No command prints the password of a database or Redis URL: not in help
// (flags take no default from the environment), not in logs, not in
// errors, whether the URL is well-formed or not.
func TestNoSecretPrinted(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-s3cret-pw"
	closed := freeAddr(t) // nothing listens there
	dbURL := "postgres://freshen:" + secret + "@" + closed + "/freshen?sslmode=disable&connect_timeout=1"
	redisURL := "redis://:" + secret + "@" + closed + "/0"
	bin := freshenBinary(t)
	tests := []struct {
		name string
		args []string
		env  []string
		code int
	}{
		{"migrate help", []string{"migrate", "-h"}, nil, 0},
		{"serve help", []string{"serve", "--help"}, nil, 0},
		{"bench help", []string{"bench", "-h"}, nil, 0},
		{"migrate, no server", []string{"migrate"}, nil, 1},
		{"migrate, malformed URL", []string{"migrate", "--database-url", "postgres://u:" + secret + "@ho st/db"}, nil, 1},
		{"serve, malformed Redis URL", []string{"serve", "--redis-url", "redis://u:" + secret + "@host:xx/0"}, nil, 1},
		{"serve, bad flag", []string{"serve", "--batch-size", "0"}, nil, 2},
		{"serve, no server", []string{"serve", "--addr", "127.0.0.1:0", "--connect-timeout", "2s", "--log-level", "debug"}, nil, 1},
		{"bench, no server", []string{"bench"}, nil, 1},
		{"URLs from FRESHEN_ variables", []string{"migrate", "-h"},
			[]string{"FRESHEN_DATABASE_URL=" + dbURL, "FRESHEN_REDIS_URL=" + redisURL}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+redisURL)
			cmd.Env = append(cmd.Env, tt.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if tt.code == 0 {
				require.NoError(t, err, out.String())
			} else {
				require.ErrorAs(t, err, &exit, out.String())
				require.Equal(t, tt.code, exit.ExitCode(), out.String())
			}
			require.NotEmpty(t, out.String())
			require.NotContains(t, out.String(), secret)
			if tt.name == "serve, no server" {
				// It says what it tried, with the password masked.
				require.Contains(t, out.String(), "postgres://freshen:xxxxx@"+closed)
				require.Contains(t, out.String(), "redis://:xxxxx@"+closed)
			}
		})
	}
}

// serve refuses a database whose schema is not this build's, and says what
// to do; --migrate migrates first.
func TestServeSchemaVersion(t *testing.T) {
	t.Parallel()
	e := newUnmigratedEnv(t)

	p := e.start("unmigrated")
	p.wait(t, 30*time.Second)
	require.Equal(t, 1, p.cmd.ProcessState.ExitCode())
	require.Regexp(t, `freshen serve: database schema is at version 0, this build needs \d+: run freshen migrate`, p.log.String())
	require.NotContains(t, p.log.String(), `"msg":"serving"`)

	p = e.serve("migrating", "--migrate")
	code, body := request(t, "PUT", p.base+"/models/m1", `{"queue": "q"}`)
	require.Equal(t, http.StatusCreated, code, body)
	p.stop()

	_, err := e.db.Exec(context.Background(), `UPDATE schema_version SET version = version + 1`)
	require.NoError(t, err)
	p = e.start("newer-schema")
	p.wait(t, 30*time.Second)
	require.Equal(t, 1, p.cmd.ProcessState.ExitCode())
	require.Regexp(t, `freshen serve: database schema is at version (\d+), newer than this build \(\d+\): upgrade freshen`, p.log.String())
}

// The HTTP port opens before Redis answers: /healthz says the process
// lives, /readyz names Redis until it answers, the API answers 503 with
// Retry-After meanwhile; once Redis is reachable, serve starts and /readyz
// answers 200.
func TestServeReadiness(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redisAddr := freeAddr(t) // Redis will appear here
	p := e.start("readiness", "--redis-url", "redis://"+redisAddr+"/0")

	// /healthz answers at once; /readyz names Redis, and only Redis once
	// PostgreSQL is connected.
	var ready readiness // without tokens, every caller sees the detail
	waitFor(t, 30*time.Second, "/readyz to name Redis alone", func() bool {
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp, err = http.Get(p.base + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		ready.Detail = nil
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&ready))
		require.Equal(t, "unavailable", ready.Status)
		require.NotEmpty(t, ready.Detail)
		return len(ready.Detail) == 1 && strings.HasPrefix(ready.Detail[0], "redis: ")
	})
	require.Contains(t, ready.Detail[0], redisAddr)

	req, err := http.NewRequest("PUT", p.base+"/models/m1", strings.NewReader(`{"queue": "q"}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	// Redis appears (a proxy to the real one, on the address serve uses).
	proxy(t, redisAddr, strings.TrimPrefix(e.redisURL, "redis://"))
	waitFor(t, 30*time.Second, "/readyz to answer 200", func() bool {
		resp, err := http.Get(p.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	code, body := request(t, "PUT", p.base+"/models/m1", `{"queue": "q"}`)
	require.Equal(t, http.StatusCreated, code, body)
	p.stop()
}

// proxy forwards the TCP connections made to addr to target until the test
// ends.
func proxy(t *testing.T, addr, target string) {
	t.Helper()
	target, _, _ = strings.Cut(target, "/")
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// The HTTP server holds at most --http-max-conns connections. When they are
// all open and idle, a new client gets the place of the one idle longest;
// while all are busy with requests, the new client waits (its request is
// answered once one ends) and /healthz still answers on a connection
// already open. A request body sent slowly is cut at --http-read-timeout.
func TestServeHTTPLimits(t *testing.T) {
	t.Parallel()
	const maxConns = 20
	e := newEnv(t)
	p := e.serve("limits", "--http-max-conns", fmt.Sprint(maxConns), "--http-read-timeout", "1s", "--http-read-header-timeout", "1s",
		"--http-idle-timeout", "1m")
	addr := strings.TrimPrefix(p.base, "http://")
	http.DefaultClient.CloseIdleConnections() // those that waited for /readyz

	// maxConns keep-alive connections, each used once, then idle.
	conns := make([]*httpConn, maxConns)
	for i := range conns {
		conns[i] = dialHTTP(t, addr)
		require.Equal(t, http.StatusOK, conns[i].get(t, "/healthz", 5*time.Second))
	}
	// One more is answered at once: an idle connection makes room (which
	// one, the idle longest, is TestLimitListenerClosesLongestIdle's; here
	// the /readyz connections closed above may still count until the
	// server reads their end).
	extra := dialHTTP(t, addr)
	extras := []*httpConn{extra}
	require.Equal(t, http.StatusOK, extra.get(t, "/healthz", 5*time.Second))
	require.Equal(t, http.StatusOK, conns[maxConns-1].get(t, "/healthz", 5*time.Second), "the last used stays")
	for _, c := range append(conns, extras...) {
		c.conn.Close()
	}

	// maxConns connections in the middle of a request (headers not ended):
	// one more client waits, since none of them is idle.
	busy := make([]*httpConn, maxConns)
	for i := range busy {
		busy[i] = dialHTTP(t, addr)
		_, err := fmt.Fprintf(busy[i].conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
	}
	waiting := dialHTTP(t, addr)
	waiting.send(t, "/healthz")
	_, err := waiting.read(300 * time.Millisecond)
	var netErr net.Error
	require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "the connection over the limit waits; got %v", err)
	// The busy ones are cut at the header timeout (1s); the waiting client
	// is served then.
	code, err := waiting.read(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	for _, c := range append(busy, waiting) {
		c.conn.Close()
	}

	// A body sent a byte every 100ms is cut after the read timeout (1s),
	// not read for the 10s it would take.
	slow := dialHTTP(t, addr)
	start := time.Now()
	_, err = fmt.Fprintf(slow.conn, "PUT /models/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, slow.conn) // until serve closes it
		close(closed)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for cut := false; !cut; {
		select {
		case <-closed:
			cut = true
		case <-tick.C:
			require.Less(t, sent, 100, "serve read the whole slow body")
			_, _ = slow.conn.Write([]byte(" "))
			sent++
		}
	}
	elapsed := time.Since(start)
	require.Less(t, elapsed, 5*time.Second, "the slow request was cut after %s (%d bytes sent)", elapsed, sent)
	t.Logf("slow body cut after %s, %d bytes sent", elapsed.Round(time.Millisecond), sent)
	p.stop()
}

// httpConn is a raw HTTP/1.1 keep-alive connection.
type httpConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialHTTP(t *testing.T, addr string) *httpConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &httpConn{conn: c, r: bufio.NewReader(c)}
}

func (c *httpConn) send(t *testing.T, path string) {
	t.Helper()
	_, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	require.NoError(t, err)
}

// read reads one response within timeout and returns its status code.
func (c *httpConn) read(timeout time.Duration) (int, error) {
	if err := c.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func (c *httpConn) get(t *testing.T, path string, timeout time.Duration) int {
	t.Helper()
	c.send(t, path)
	code, err := c.read(timeout)
	require.NoError(t, err)
	return code
}

// wait waits up to timeout for the process to exit by itself.
func (p *proc) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("serve %s did not exit within %s:\n%s", p.id, timeout, p.log.tail(20))
	}
}
