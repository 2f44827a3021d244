package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/freshen-dev/freshen/refresh"
)

// How long a child may take to start, and to stop once asked.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
)

// child is a freshen child process whose output is kept for error
// messages.
type child struct {
	name  string
	cmd   *exec.Cmd
	out   *output
	clock refresh.Clock
	done  chan struct{} // closed once the process has exited
	addr  string        // the HTTP address of freshen serve
}

// start starts the child; done is closed once it exits.
func (c *child) start() error {
	c.done = make(chan struct{})
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.done)
	}()
	return nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited returns the error to report when the child exited on its own.
func (c *child) exited() error {
	return fmt.Errorf("%s exited: %s\n%s", c.name, c.cmd.ProcessState, c.out.String())
}

// kill kills the child, if it still runs, and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// stop asks the child to shut down (SIGTERM), waits for it, and reports
// whether it exited cleanly.
func (c *child) stop() error {
	select {
	case <-c.done:
		return c.exited()
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop %s: %w", c.name, err)
	}
	select {
	case <-c.done:
	case <-c.clock.After(stopTimeout):
		c.kill()
		return fmt.Errorf("%s did not stop within %s", c.name, stopTimeout)
	}
	if !c.cmd.ProcessState.Success() {
		return fmt.Errorf("%s: %s\n%s", c.name, c.cmd.ProcessState, c.out.String())
	}
	return nil
}

// startServe runs `freshen serve` on the schema of cfg, under the Redis
// prefix of b, with the extra flags given, and waits until it answers
// /healthz.
func (b *Bench) startServe(ctx context.Context, cfg *pgxpool.Config, extra ...string) (*child, error) {
	return b.startServeURL(ctx, serveURLs{database: schemaURL(cfg)}, extra...)
}

// serveURLs are the database URLs a freshen serve of the harness gets:
// listen is its --listen-database-url ("" for none).
type serveURLs struct {
	database, listen string
}

// startServeURL is startServe on the databases of urls. The URLs reach
// serve in its environment, never on its command line.
func (b *Bench) startServeURL(ctx context.Context, urls serveURLs, extra ...string) (*child, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	c := &child{
		name: "freshen serve",
		cmd: exec.Command(b.cfg.Executable, append([]string{"serve",
			"--redis-prefix", b.prefix, "--addr", addr, "--instance-id", "bench-serve",
			"--batch-size", strconv.Itoa(b.cfg.BatchSize), "--log-level", "warn"}, extra...)...),
		out:   &output{},
		clock: b.clock,
		addr:  addr,
	}
	c.cmd.Env = childEnv("FRESHEN_DATABASE_URL", urls.database, "FRESHEN_REDIS_URL", b.cfg.RedisURL,
		"FRESHEN_LISTEN_DATABASE_URL", urls.listen)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.start(); err != nil {
		return nil, err
	}
	timeout := b.clock.After(startTimeout)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case <-c.done:
			return nil, c.exited()
		case <-timeout:
			c.kill()
			return nil, fmt.Errorf("freshen serve did not answer within %s\n%s", startTimeout, c.out.String())
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-b.clock.After(20 * time.Millisecond):
		}
	}
}

// startWorker runs `freshen bench worker` on the queue of the harness with
// the given concurrency and waits until it is ready to take jobs.
func (b *Bench) startWorker(ctx context.Context, concurrency int) (*child, error) {
	return b.startWorkerWith(ctx, concurrency, nil)
}

// startWorkerWith is startWorker with extra flags of freshen bench worker,
// and line, if set, called with each line of its output.
func (b *Bench) startWorkerWith(ctx context.Context, concurrency int, line func(string), extra ...string) (*child, error) {
	c := &child{
		name: "freshen bench worker",
		cmd: exec.Command(b.cfg.Executable, append([]string{"bench", "worker",
			"--redis-prefix", b.prefix, "--queue", Queue, "--concurrency", strconv.Itoa(concurrency),
			"--id", "bench-worker"}, extra...)...),
		out:   &output{watch: WorkerReady + "\n", seen: make(chan struct{}), line: line},
		clock: b.clock,
	}
	c.cmd.Env = childEnv("FRESHEN_REDIS_URL", b.cfg.RedisURL)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.start(); err != nil {
		return nil, err
	}
	select {
	case <-c.out.seen:
		return c, nil
	case <-c.done:
		return nil, c.exited()
	case <-b.clock.After(startTimeout):
		c.kill()
		return nil, fmt.Errorf("freshen bench worker was not ready within %s\n%s", startTimeout, c.out.String())
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// childEnv returns the harness's environment for a child, with each key of
// kv (key, value, key, value...) set to its value, or left out where the
// value is "": secrets such as database URLs go to children this way, never
// on their command lines. DATABASE_URL and REDIS_URL are left out too, so
// that only the URLs given here are read.
func childEnv(kv ...string) []string {
	set := map[string]bool{"DATABASE_URL": true, "REDIS_URL": true}
	for i := 0; i < len(kv); i += 2 {
		set[kv[i]] = true
	}
	var env []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !set[k] {
			env = append(env, e)
		}
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			env = append(env, kv[i]+"="+kv[i+1])
		}
	}
	return env
}

// output is a buffer safe for concurrent writers, for a child's output.
// If watch is set, seen is closed once the output contains it. If line is
// set, it is called with each whole line, whose text is then not kept.
type output struct {
	mu      sync.Mutex
	buf     strings.Builder
	watch   string
	seen    chan struct{}
	line    func(string)
	partial string // the end of the output after its last newline, if line is set
}

func (w *output) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.line != nil {
		text := w.partial + string(p)
		for {
			l, rest, ok := strings.Cut(text, "\n")
			if !ok {
				break
			}
			if !strings.HasPrefix(l, TookLine+" ") {
				w.buf.WriteString(l + "\n")
			}
			w.line(l)
			text = rest
		}
		w.partial = text
		w.watchFor()
		return len(p), nil
	}
	n, err := w.buf.Write(p)
	w.watchFor()
	return n, err
}

// watchFor closes seen once the output kept contains watch; w.mu is held.
func (w *output) watchFor() {
	if w.watch != "" && strings.Contains(w.buf.String(), w.watch) {
		close(w.seen)
		w.watch = ""
	}
}

func (w *output) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
