//go:build unix

package conformance

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// worker is a worker process the kit started, in a process group of its
// own: the kit's signals go to the whole group, so that a worker started
// through a wrapper (a shell, an interpreter's launcher) is stopped or
// killed whole.
type worker struct {
	id   string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{} // closed once it has exited
}

// startWorker starts the worker command with the contract's environment:
// queue q, worker id id.
func (k *kit) startWorker(q, id string) (*worker, error) {
	cmd := exec.Command(k.cfg.Command[0], k.cfg.Command[1:]...)
	cmd.Env = append(append([]string(nil), k.cfg.Environ...),
		"REDIS_URL="+k.cfg.RedisURL,
		"FRESHEN_QUEUE="+q,
		"FRESHEN_REDIS_PREFIX="+k.prefix,
		"FRESHEN_ID="+id,
		"FRESHEN_LEASE="+strconv.Itoa(int(Lease/time.Second))+"s",
		"FRESHEN_CONCURRENCY="+strconv.Itoa(Concurrency),
	)
	w := &worker{id: id, cmd: cmd, out: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the worker %s: %w", k.cfg.Command[0], err)
	}
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	return w, nil
}

// signal sends sig to the worker's process group.
func (w *worker) signal(sig syscall.Signal) {
	_ = syscall.Kill(-w.cmd.Process.Pid, sig)
}

// exited reports whether the worker has exited.
func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop stops the worker: SIGCONT (it may be stopped) and SIGTERM, then
// SIGKILL if it has not exited within wait, and returns once it has.
func (w *worker) stop(after func(time.Duration) <-chan time.Time, wait time.Duration) {
	w.signal(syscall.SIGCONT)
	w.signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-after(wait):
		w.signal(syscall.SIGKILL)
		<-w.done
	}
	w.signal(syscall.SIGKILL) // what it left in its group
}

// cpu returns the CPU time (user and system) used by the processes of the
// worker's group and the children they have waited for.
func (w *worker) cpu() (time.Duration, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	var ticks uint64
	for _, p := range procs {
		s, err := p.Stat()
		if err != nil || s.PGRP != w.cmd.Process.Pid {
			continue
		}
		ticks += uint64(s.UTime+s.STime) + uint64(s.CUTime+s.CSTime)
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// tail returns the last n lines.
func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(string(bytes.TrimRight(b.buf, "\n")), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
