//go:build unix

package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// kitCase is one case: run returns a note (figures) or why it failed.
type kitCase struct {
	name string
	// alone: run after the other cases, with nothing beside it (it
	// measures).
	alone bool
	run   func(c *caseEnv) (string, error)
}

// caseBound bounds every case, workers' start and stop included.
const caseBound = 60 * time.Second

// cases are the cases, in the order they are reported.
var cases = []kitCase{
	{name: "success", run: caseSuccess},
	{name: "failure", run: caseFailure},
	{name: "status", run: caseStatus},
	{name: "snooze", run: caseSnooze},
	{name: "unchanged", run: caseUnchanged},
	{name: "heartbeat", run: caseHeartbeat},
	{name: "revoke-cancel", run: func(c *caseEnv) (string, error) { return caseRevoke(c, refresh.ActionCancel) }},
	{name: "revoke-supersede", run: func(c *caseEnv) (string, error) { return caseRevoke(c, refresh.ActionTrigger) }},
	{name: "deadline", run: caseDeadline},
	{name: "crash", run: caseCrash},
	{name: "bad-jobs", run: caseBadJobs},
	{name: "long-texts", run: caseLongTexts},
	{name: "stall", run: caseStall},
	{name: "shutdown", run: caseShutdown},
	{name: "throughput", alone: true, run: caseThroughput},
}

// caseSuccess: a job is taken, run and reported a success.
func caseSuccess(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	id, err := c.put("m", map[string]any{"do": "succeed"}, "")
	if err != nil {
		return "", err
	}
	o, err := c.outcome(id, 15*time.Second, "outcome", ended)
	if err != nil {
		return "", err
	}
	if o.Type != refresh.OutcomeSuccess || o.Unchanged {
		return "", fmt.Errorf("want a success, got %s", describe([]refresh.Outcome{o}))
	}
	_, err = c.model(id, 5*time.Second, "success applied", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() && !m.Running() })
	return "", err
}

// caseFailure: failures carry kind, message, retryable and user_message.
func caseFailure(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	const user = "Row 3 of your file has no date."
	final, err := c.put("final", map[string]any{"do": "fail", "kind": "validation", "message": "row 3: no date",
		"retryable": false, "user_message": user}, `{"timeout": "30s", "retry": {"delays": ["1h"]}}`)
	if err != nil {
		return "", err
	}
	retry, err := c.put("retry", map[string]any{"do": "fail", "kind": "http_503", "message": "upstream answered 503"},
		`{"timeout": "30s", "retry": {"delays": ["1h"]}}`)
	if err != nil {
		return "", err
	}
	m, err := c.model(final, 15*time.Second, "failure applied", func(m refresh.Model) bool { return m.LastError != nil })
	if err != nil {
		return "", err
	}
	switch {
	case m.LastError.Kind != "validation" || m.LastError.Message != "row 3: no date":
		return "", fmt.Errorf("want kind validation, message %q; got kind %q, message %q", "row 3: no date", m.LastError.Kind, m.LastError.Message)
	case m.DisabledAt.IsZero():
		return "", errors.New("retryable false: want the model disabled at once, it is not")
	case m.DisabledReason != user:
		return "", fmt.Errorf("want the disabled reason to be the user_message %q, got %q", user, m.DisabledReason)
	}
	m, err = c.model(retry, 15*time.Second, "failure applied", func(m refresh.Model) bool { return m.LastError != nil })
	if err != nil {
		return "", err
	}
	switch {
	case m.LastError.Kind != "http_503" || m.LastError.Message != "upstream answered 503":
		return "", fmt.Errorf("want kind http_503, message %q; got kind %q, message %q", "upstream answered 503", m.LastError.Kind, m.LastError.Message)
	case !m.DisabledAt.IsZero():
		return "", fmt.Errorf("a retryable failure (retryable absent): want a retry, the model is disabled: %s", m.DisabledReason)
	}
	return "", nil
}

// caseStatus: statuses arrive in order, before the success; a worker may
// send only the latest of those sent close together, never an older one
// after a newer one.
func caseStatus(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	want := []string{"downloading", "importing"}
	id, err := c.put("m", map[string]any{"status": want, "sleep": 1.5}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.outcome(id, 15*time.Second, "outcome", ended); err != nil {
		return "", err
	}
	outs, _, _ := c.k.tee.snapshot(id, "")
	next := 0
	for _, o := range outs {
		if o.Type != refresh.OutcomeStatus {
			break
		}
		i := next
		for i < len(want) && want[i] != o.Message {
			i++
		}
		if i == len(want) {
			return "", fmt.Errorf("statuses out of order or unknown: want %q in order, got %s", want, describe(outs))
		}
		next = i + 1
	}
	switch {
	case next != len(want):
		return "", fmt.Errorf("want the last status %q before the success, got %s", want[len(want)-1], describe(outs))
	case outs[len(outs)-1].Type != refresh.OutcomeSuccess:
		return "", fmt.Errorf("want the statuses, then a success; got %s", describe(outs))
	}
	_, err = c.model(id, 5*time.Second, "success applied, status cleared", func(m refresh.Model) bool {
		return !m.LastSuccessAt.IsZero() && m.StatusMessage == ""
	})
	return "", err
}

// caseSnooze: a snooze ends the attempt without a failure.
func caseSnooze(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	id, err := c.put("m", map[string]any{"do": "snooze", "snooze_for": 3600}, "")
	if err != nil {
		return "", err
	}
	o, err := c.outcome(id, 15*time.Second, "outcome", ended)
	if err != nil {
		return "", err
	}
	if o.Type != refresh.OutcomeSnooze || time.Duration(o.For) != time.Hour {
		return "", fmt.Errorf(`want a snooze for 1h ("for": "3600s"), got %s for %s until %s`, o.Type, time.Duration(o.For), o.Until)
	}
	m, err := c.model(id, 5*time.Second, "snooze applied", func(m refresh.Model) bool { return !m.SnoozedSince.IsZero() })
	if err != nil {
		return "", err
	}
	if m.LastError != nil || m.AttemptNo != 0 || m.RefreshAt.Sub(m.SnoozedSince) < 59*time.Minute {
		return "", fmt.Errorf("want no failure and the next try in 1h; got last error %v, attempt_no %d, refresh_at %s", m.LastError, m.AttemptNo, m.RefreshAt)
	}
	return "", nil
}

// caseUnchanged: a success with "unchanged": true.
func caseUnchanged(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	id, err := c.put("m", map[string]any{"do": "succeed", "unchanged": true}, "")
	if err != nil {
		return "", err
	}
	o, err := c.outcome(id, 15*time.Second, "outcome", ended)
	if err != nil {
		return "", err
	}
	if o.Type != refresh.OutcomeSuccess || !o.Unchanged {
		return "", fmt.Errorf(`want a success with "unchanged": true, got %s (unchanged %t)`, describe([]refresh.Outcome{o}), o.Unchanged)
	}
	m, err := c.model(id, 5*time.Second, "success applied", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() })
	if err != nil {
		return "", err
	}
	if !m.LastChangedAt.IsZero() {
		return "", errors.New("an unchanged success set last_changed_at")
	}
	return "", nil
}

// caseHeartbeat: while a job runs longer than two leases, the worker keeps
// its lease (WIRE.md, "Heartbeats and leases") and the job stays in its
// working list until the outcome is pushed, in the same step.
func caseHeartbeat(c *caseEnv) (string, error) {
	w, err := c.start("a")
	if err != nil {
		return "", err
	}
	sleep := 2*Lease + time.Second
	id, err := c.put("m", map[string]any{"status": []string{"running"}, "sleep": sleep.Seconds()}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.running(id, 0); err != nil {
		return "", err
	}
	workers, working := c.k.key("workers:"+c.queue), c.k.key("working:"+c.queue+":"+w.id)
	var oldest time.Duration
	err = c.poll(sleep+10*time.Second, "outcome", func() (bool, error) {
		outs, _, _ := c.k.tee.snapshot(id, "")
		if len(outs) > 0 && ended(outs[len(outs)-1]) {
			return true, nil
		}
		score, err := c.k.rdb.ZScore(c.ctx, workers, w.id).Result()
		if err != nil {
			return false, fmt.Errorf("the worker is not in %s (ZSCORE: %v): FRESHEN_ID not used, or no heartbeat", workers, err)
		}
		age := c.k.clock.Now().Sub(time.UnixMilli(int64(score)))
		oldest = max(oldest, age)
		if age > Lease {
			return false, fmt.Errorf("the worker's heartbeat is %s old while its job runs, more than its lease (%s)", age.Round(time.Millisecond), Lease)
		}
		n, err := c.k.rdb.LLen(c.ctx, working).Result()
		if err != nil {
			return false, err
		}
		if n == 0 {
			// Gone: its outcome must have been pushed in the same step.
			if _, err := c.outcome(id, 5*time.Second, "outcome", ended); err != nil {
				return false, fmt.Errorf("the running job is not in the worker's list %s, and no outcome came: a crash now would lose it", working)
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	if _, err := c.model(id, 5*time.Second, "success applied", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() }); err != nil {
		return "", err
	}
	return fmt.Sprintf("oldest heartbeat seen: %s", oldest.Round(time.Millisecond)), nil
}

// caseRevoke: a cancel or a trigger revokes the running attempt; the
// handler is stopped and its outcome arrives within Config.RevokeWithin.
func caseRevoke(c *caseEnv, action string) (string, error) {
	m, _, err := c.sleeper(30)
	if err != nil {
		return "", err
	}
	id := m.ID
	uid := m.AttemptUID
	if _, _, err := c.k.svc.Act(c.ctx, id, action); err != nil {
		return "", err
	}
	o, err := c.outcome(id, 10*time.Second, "outcome of the revoked attempt", func(o refresh.Outcome) bool { return o.AttemptUID == uid && ended(o) })
	if err != nil {
		return "", err
	}
	_, at, _ := c.k.tee.snapshot(id, uid)
	if at.IsZero() {
		return "", errors.New("the attempt was not revoked (the kit's own fault)")
	}
	took := o.ArrivedAt.Sub(at)
	if took > c.k.cfg.RevokeWithin {
		return "", fmt.Errorf("the revoked job's outcome arrived %s after the revocation, want at most %s", took.Round(time.Millisecond), c.k.cfg.RevokeWithin)
	}
	if action == refresh.ActionTrigger {
		// The new attempt runs.
		if _, err := c.outcome(id, 10*time.Second, "status of the new attempt", func(o refresh.Outcome) bool {
			return o.AttemptUID != uid && o.Type == refresh.OutcomeStatus
		}); err != nil {
			return "", err
		}
		_, _, _ = c.k.svc.Act(c.ctx, id, refresh.ActionCancel)
	}
	return fmt.Sprintf("stopped %s after the revocation", took.Round(time.Millisecond)), nil
}

// caseDeadline: a job still running at its deadline is stopped: its
// outcome arrives within Config.RevokeWithin of the deadline, and the scheduler
// has recorded a timeout.
func caseDeadline(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	// The worker first runs a quick job, so that the 3s timeout below is
	// not spent on an interpreter's start.
	ready, err := c.put("ready", map[string]any{"do": "succeed"}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.model(ready, 30*time.Second, "first job done", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() }); err != nil {
		return "", err
	}
	id, err := c.put("m", map[string]any{"status": []string{"running"}, "sleep": 30}, `{"timeout": "3s", "retry": {"delays": []}}`)
	if err != nil {
		return "", err
	}
	// Not the status: a slow worker may reach the deadline first.
	m, err := c.model(id, 10*time.Second, "start", func(m refresh.Model) bool { return m.Running() })
	if err != nil {
		return "", err
	}
	uid, deadline := m.AttemptUID, m.DeadlineAt
	o, err := c.outcome(id, 10*time.Second, "outcome of the job past its deadline", func(o refresh.Outcome) bool { return o.AttemptUID == uid && ended(o) })
	if err != nil {
		return "", err
	}
	took := o.ArrivedAt.Sub(deadline)
	if took > c.k.cfg.RevokeWithin {
		return "", fmt.Errorf("the outcome arrived %s after the deadline, want at most %s", took.Round(time.Millisecond), c.k.cfg.RevokeWithin)
	}
	m, err = c.model(id, 5*time.Second, "timeout applied", func(m refresh.Model) bool { return m.LastError != nil })
	if err != nil {
		return "", err
	}
	if m.LastError.Kind != "timeout" {
		return "", fmt.Errorf("want the attempt timed out, got a failure of kind %q: the outcome arrived before the deadline", m.LastError.Kind)
	}
	return fmt.Sprintf("stopped %s after the deadline", took.Round(time.Millisecond)), nil
}

// caseCrash: a worker killed (SIGKILL) in the middle of a job and started
// again with the same id runs the job again: nothing is lost.
func caseCrash(c *caseEnv) (string, error) {
	m, w, err := c.sleeper(30)
	if err != nil {
		return "", err
	}
	id := m.ID
	w.signal(syscall.SIGKILL)
	select {
	case <-w.done:
	case <-c.k.clock.After(5 * time.Second):
		return "", errors.New("the worker did not die of SIGKILL within 5s")
	}
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	at := c.k.clock.Now()
	again, err := c.running(id, 1)
	if err != nil {
		return "", fmt.Errorf("the job of the killed worker did not run again: %w", err)
	}
	if again.AttemptUID != m.AttemptUID {
		return "", fmt.Errorf("want the same attempt run again, got attempt %s after %s", again.AttemptUID, m.AttemptUID)
	}
	_, _, _ = c.k.svc.Act(c.ctx, id, refresh.ActionCancel)
	return fmt.Sprintf("ran again %s after the restart", again.ArrivedAt.Sub(at).Round(time.Millisecond)), nil
}

// caseBadJobs: jobs that break the rules (not JSON, no attempt_uid, over
// the size limit) are dead-lettered with a reason "job: ...", and the
// worker goes on; a malformed outcome the kit pushes is dead-lettered by
// the scheduler.
func caseBadJobs(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	tag := c.queue + "-bad"
	bad := []string{
		`not json ` + tag,
		`{"model_id": "` + tag + `", "queue": "` + c.queue + `"}`,
		`{"model_id": "` + tag + `", "attempt_uid": "u1", "payload": "` + strings.Repeat("x", queue.DefaultMaxBytes) + `"}`,
	}
	for _, raw := range bad {
		if err := c.k.rdb.LPush(c.ctx, c.k.key("jobs:"+c.queue), raw).Err(); err != nil {
			return "", err
		}
	}
	// And a malformed outcome, as a worker that breaks the rules would
	// send it: the scheduler sets it aside.
	if err := c.k.rdb.LPush(c.ctx, c.k.key("outcomes"), `{"model_id": "`+tag+`", "outcome": "success"}`).Err(); err != nil {
		return "", err
	}
	var reasons []string
	err := c.poll(15*time.Second, "dead letters for the 3 bad jobs and the bad outcome", func() (bool, error) {
		entries, err := c.k.rdb.LRange(c.ctx, c.k.key("dead"), 0, -1).Result()
		if err != nil {
			return false, err
		}
		reasons = reasons[:0]
		for _, e := range entries {
			var d struct {
				Reason  string `json:"reason"`
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(e), &d) == nil && strings.Contains(d.Message, tag) {
				reasons = append(reasons, d.Reason)
			}
		}
		return len(reasons) == len(bad)+1, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w (found %q)", err, reasons)
	}
	jobs := 0
	for _, r := range reasons {
		if strings.HasPrefix(r, "job: ") {
			jobs++
		}
	}
	if jobs != len(bad) {
		return "", fmt.Errorf(`want %d dead letters of jobs, with reasons that start with "job: ", got %q`, len(bad), reasons)
	}
	id, err := c.put("m", map[string]any{"do": "succeed"}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.model(id, 15*time.Second, "success after the bad jobs", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() }); err != nil {
		return "", err
	}
	return "", nil
}

// caseLongTexts: a message and a user message longer than the wire's
// limit are sent cut, not refused.
func caseLongTexts(c *caseEnv) (string, error) {
	if _, err := c.start("a"); err != nil {
		return "", err
	}
	long := queue.DefaultMaxMessageBytes + 4000
	id, err := c.put("m", map[string]any{"do": "fail", "kind": "validation", "retryable": false,
		"message": strings.Repeat("m", long), "user_message": strings.Repeat("u", long)}, "")
	if err != nil {
		return "", err
	}
	m, err := c.model(id, 15*time.Second, "failure applied (an outcome the scheduler refuses is dead-lettered)", func(m refresh.Model) bool { return !m.DisabledAt.IsZero() })
	if err != nil {
		return "", err
	}
	for name, text := range map[string]string{"message": m.LastError.Message, "user_message": m.DisabledReason} {
		if len(text) > queue.DefaultMaxMessageBytes || !strings.HasSuffix(text, queue.TruncatedMarker) || len(text) < queue.DefaultMaxMessageBytes-8 {
			return "", fmt.Errorf("%s of %d bytes: want it cut to %d bytes with the marker %q, got %d bytes ending %q",
				name, long, queue.DefaultMaxMessageBytes, queue.TruncatedMarker, len(text), text[max(0, len(text)-20):])
		}
	}
	return "", nil
}

// caseStall: a worker stopped (SIGSTOP) longer than its lease in the
// middle of a job has its job given back and run by another worker; once
// continued (SIGCONT) it goes on working.
func caseStall(c *caseEnv) (string, error) {
	m, stalled, err := c.sleeper(5)
	if err != nil {
		return "", err
	}
	id := m.ID
	stalled.signal(syscall.SIGSTOP)
	at := c.k.clock.Now()
	other, err := c.start("b")
	if err != nil {
		stalled.signal(syscall.SIGCONT)
		return "", err
	}
	if _, err := c.running(id, 1); err != nil {
		stalled.signal(syscall.SIGCONT)
		return "", fmt.Errorf("the job of the stopped worker was not run by the other: %w", err)
	}
	took := c.k.clock.Now().Sub(at)
	_, err = c.model(id, 10*time.Second, "success by the other worker", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() })
	stalled.signal(syscall.SIGCONT)
	if err != nil {
		return "", err
	}
	// The continued worker goes on: alone, it runs a new job.
	other.signal(syscall.SIGKILL)
	next, err := c.put("next", map[string]any{"do": "succeed"}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.model(next, 15*time.Second, "success by the continued worker", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() }); err != nil {
		return "", err
	}
	if stalled.exited() {
		return "", errors.New("the continued worker exited")
	}
	return fmt.Sprintf("given back and run again %s after the stop", took.Round(time.Millisecond)), nil
}

// caseShutdown: on SIGTERM a worker finishes its running job and posts its
// outcome, runs no job pushed after the signal, leaves nothing in its
// working list and exits 0.
func caseShutdown(c *caseEnv) (string, error) {
	m, w, err := c.sleeper(2)
	if err != nil {
		return "", err
	}
	id := m.ID
	w.signal(syscall.SIGTERM)
	at := c.k.clock.Now()
	// Give the worker a moment to stop taking before the next job comes.
	<-c.k.clock.After(200 * time.Millisecond)
	later, err := c.put("later", map[string]any{"do": "succeed"}, "")
	if err != nil {
		return "", err
	}
	select {
	case <-w.done:
	case <-c.k.clock.After(20 * time.Second):
		return "", errors.New("the worker did not exit within 20s of SIGTERM")
	}
	took := c.k.clock.Now().Sub(at)
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		return "", fmt.Errorf("the worker exited with status %d after SIGTERM, want 0", code)
	}
	if _, err := c.outcome(id, 5*time.Second, "outcome of the job running at SIGTERM", ended); err != nil {
		return "", err
	}
	outs, _, _ := c.k.tee.snapshot(later, "")
	if len(outs) > 0 {
		return "", fmt.Errorf("the job pushed after SIGTERM was run: %s", describe(outs))
	}
	n, err := c.k.rdb.LLen(c.ctx, c.k.key("working:"+c.queue+":"+w.id)).Result()
	if err != nil {
		return "", err
	}
	if n > 0 {
		return "", fmt.Errorf("the worker exited with %d job(s) in its working list: give back what you took and did not run", n)
	}
	if n, err = c.k.rdb.LLen(c.ctx, c.k.key("jobs:"+c.queue)).Result(); err != nil || n != 1 {
		return "", fmt.Errorf("want the job pushed after SIGTERM back on the queue, the queue holds %d (%v)", n, err)
	}
	return fmt.Sprintf("exited %s after SIGTERM", took.Round(time.Millisecond)), nil
}

// caseThroughput: n jobs with a no-op handler, run by one worker.
func caseThroughput(c *caseEnv) (string, error) {
	w, err := c.start("a")
	if err != nil {
		return "", err
	}
	// The worker is up once it has run a first job.
	warm, err := c.put("warm", map[string]any{}, "")
	if err != nil {
		return "", err
	}
	if _, err := c.model(warm, 15*time.Second, "the first success", func(m refresh.Model) bool { return !m.LastSuccessAt.IsZero() }); err != nil {
		return "", err
	}
	n := c.k.cfg.Bench
	cpu0, err := w.cpu()
	if err != nil {
		return "", err
	}
	start := c.k.clock.Now()
	ids := make([]string, n)
	for i := range ids {
		if ids[i], err = c.put(fmt.Sprintf("b%d", i), map[string]any{}, `{"timeout": "10m", "retry": {"delays": []}}`); err != nil {
			return "", err
		}
	}
	err = c.poll(caseBound-15*time.Second, fmt.Sprintf("%d successes", n), func() (bool, error) { return c.k.tee.count(ids) == n, nil })
	took := c.k.clock.Now().Sub(start)
	if err != nil {
		return "", fmt.Errorf("%w (%d received)", err, c.k.tee.count(ids))
	}
	cpu1, err := w.cpu()
	if err != nil {
		return "", err
	}
	perK := (cpu1 - cpu0) * 1000 / time.Duration(n)
	return fmt.Sprintf("%d jobs in %s: %.0f cycles/s, worker CPU %s per 1,000 jobs",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), perK.Round(time.Millisecond)), nil
}
