package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// readLines calls f with each line of rd, without its line ending, until
// the end of rd or an error, which it returns (nil at the end). A line
// longer than max is passed cut to its first max bytes, with cut set, and
// the rest of it is skipped. f must not keep line.
func readLines(rd io.Reader, max int, f func(line []byte, cut bool)) error {
	br := bufio.NewReaderSize(rd, max)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			f(trimEOL(line), false)
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			f(line, true)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
		case len(line) > 0:
			f(trimEOL(line), false)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// cutText returns s made valid UTF-8 and cut to at most max bytes on a
// character boundary, ending with queue.TruncatedMarker if it was cut or if
// cut is set (the line it comes from was cut already).
func cutText(s string, max int, cut bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max && !cut {
		return s
	}
	n := min(len(s), max-len(queue.TruncatedMarker))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + queue.TruncatedMarker
}

// jobOutput is what the worker keeps of a command's output. stdoutLine and
// stderrLine are each called from one goroutine; the fields they set are read
// once both are done.
type jobOutput struct {
	log *slog.Logger

	mu            sync.Mutex
	logged, bytes int // lines and bytes logged
	dropped       int // lines not logged, over the bounds

	// result is the last stdout line that is a JSON object without a
	// status member; unreadable is set when a longer line starting with {
	// came after it.
	result     []byte
	unreadable bool

	lines [tailLines]string // the last non-blank lines of stderr, a ring
	next  int
	total int
}

// stdoutLine reads one line of stdout: a status line is passed to status, a
// JSON object kept as the result line so far, any other line logged.
func (o *jobOutput) stdoutLine(line []byte, cut bool, status func(string)) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	if t[0] == '{' {
		if cut {
			o.unreadable = true
			o.log.Warn("stdout: a line that starts with { is too long to be read", "max_bytes", MaxLine)
			return
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(t, &members) == nil {
			raw, ok := members["status"]
			if !ok && string(members["outcome"]) == `"status"` {
				// The wire's form: {"outcome": "status", "message": "42%"}.
				raw, ok = members["message"], true
			}
			if ok {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					o.log.Warn("stdout: a status line's status must be a string", "got", cutText(string(raw), 100, false))
					return
				}
				o.log.Debug("status", "status", cutText(s, logLine, false))
				status(s)
				return
			}
			o.result = append(o.result[:0], t...)
			o.unreadable = false
			return
		}
	}
	o.forward("stdout", line, cut)
}

// stderrLine logs one line of stderr and keeps it among the last lines.
func (o *jobOutput) stderrLine(line []byte, cut bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	o.forward("stderr", line, cut)
	o.lines[o.next] = cutText(string(line), tailBytes, cut)
	o.next = (o.next + 1) % len(o.lines)
	o.total++
}

// forward logs a line of output if the job's log budget allows.
func (o *jobOutput) forward(stream string, line []byte, cut bool) {
	text := cutText(string(line), logLine, cut)
	o.mu.Lock()
	ok := o.logged < logLines && o.bytes+len(text) <= logBytes
	if ok {
		o.logged++
		o.bytes += len(text)
	} else {
		o.dropped++
	}
	o.mu.Unlock()
	if ok {
		o.log.Info("output", "stream", stream, "line", text)
	}
}

// readErr logs an error that ended the reading of an output.
func (o *jobOutput) readErr(err error) {
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		o.log.Warn("stopped reading the command's output: a process that left its group holds it open")
	default:
		o.log.Warn("read the command's output", "err", err)
	}
}

// tail returns the last lines of stderr, newest last, within
// tailBytes; "…" first if older lines were left out.
func (o *jobOutput) tail() string {
	n := min(o.total, len(o.lines))
	var kept []string
	size := 0
	for i := 1; i <= n; i++ {
		l := o.lines[(o.next-i+len(o.lines))%len(o.lines)]
		cost := len(l)
		if len(kept) > 0 {
			cost++ // the newline between two lines
		}
		if size+cost > tailBytes {
			break
		}
		size += cost
		kept = append(kept, l)
	}
	slices.Reverse(kept)
	if len(kept) < o.total {
		kept = append([]string{"…"}, kept...)
	}
	return strings.Join(kept, "\n")
}

// statusPoster posts the statuses put to it, at most one every interval:
// the latest put wins.
type statusPoster struct {
	post    func(string)
	clock   refresh.Clock
	every   time.Duration
	mu      sync.Mutex
	latest  string
	pending bool
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

func newStatusPoster(clock refresh.Clock, every time.Duration, post func(string)) *statusPoster {
	s := &statusPoster{post: post, clock: clock, every: every, wake: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{})}
	go s.loop()
	return s
}

func (s *statusPoster) put(msg string) {
	s.mu.Lock()
	s.latest, s.pending = msg, true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *statusPoster) loop() {
	defer close(s.stopped)
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		msg, ok := s.latest, s.pending
		s.pending = false
		s.mu.Unlock()
		if !ok {
			continue
		}
		s.post(msg)
		select {
		case <-s.clock.After(s.every):
		case <-s.done:
			return
		}
	}
}

// close stops posting, drops a status not yet posted, and returns once no
// post is under way.
func (s *statusPoster) close() {
	close(s.done)
	<-s.stopped
}
