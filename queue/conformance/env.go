//go:build unix

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// caseEnv is what one case works with: a queue of its own, its workers
// and its models.
type caseEnv struct {
	k       *kit
	ctx     context.Context
	name    string
	queue   string
	workers []*worker
}

// runCase runs c with a queue of its own, stops its workers and returns
// its result.
func (k *kit) runCase(ctx context.Context, c kitCase) Result {
	ctx, cancel := context.WithTimeout(ctx, caseBound)
	defer cancel()
	env := &caseEnv{k: k, ctx: ctx, name: c.name, queue: k.run + "-" + c.name}
	start := k.clock.Now()
	note, err := c.run(env)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("took longer than %s", caseBound)
	}
	var logs []string
	for _, w := range env.workers {
		w.stop(k.clock.After, 5*time.Second)
		if err != nil {
			logs = append(logs, "worker "+w.id+":\n"+w.out.tail(20))
		}
	}
	return Result{Name: c.name, Took: k.clock.Now().Sub(start), Err: err, Note: note, Log: strings.Join(logs, "\n")}
}

// start starts a worker of the case's queue with the id name.
func (c *caseEnv) start(name string) (*worker, error) {
	w, err := c.k.startWorker(c.queue, c.queue+"-"+name)
	if err != nil {
		return nil, err
	}
	c.workers = append(c.workers, w)
	return w, nil
}

// put creates the model c.queue-suffix on the case's queue, with the
// conformance payload conf and the policy given ("" for a timeout of 30s
// and no retries), triggered at once.
func (c *caseEnv) put(suffix string, conf map[string]any, policy string) (string, error) {
	id := c.queue + "-" + suffix
	payload, err := json.Marshal(map[string]any{"conformance": conf})
	if err != nil {
		return "", err
	}
	if policy == "" {
		policy = `{"timeout": "30s", "retry": {"delays": []}}`
	}
	c.k.tee.created(id)
	_, _, err = c.k.svc.Put(c.ctx, refresh.PutRequest{ID: id, Queue: c.queue, Payload: payload, Policy: json.RawMessage(policy), Trigger: true})
	if err != nil {
		return "", fmt.Errorf("create model %s: %w", id, err)
	}
	return id, nil
}

// poll calls cond every 20ms until it returns true, and fails with what
// if that takes longer than timeout.
func (c *caseEnv) poll(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := c.k.clock.After(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-deadline:
			return fmt.Errorf("no %s within %s", what, timeout)
		case <-c.ctx.Done():
			return fmt.Errorf("no %s: %w", what, c.ctx.Err())
		case <-c.k.clock.After(20 * time.Millisecond):
		}
	}
}

// model waits until model id satisfies cond and returns it.
func (c *caseEnv) model(id string, timeout time.Duration, what string, cond func(refresh.Model) bool) (refresh.Model, error) {
	var m refresh.Model
	err := c.poll(timeout, what, func() (bool, error) {
		var err error
		m, err = c.k.store.Get(c.ctx, id)
		return err == nil && cond(m), err
	})
	return m, err
}

// outcome waits for the first outcome of model id received that satisfies
// cond and returns it.
func (c *caseEnv) outcome(id string, timeout time.Duration, what string, cond func(refresh.Outcome) bool) (refresh.Outcome, error) {
	deadline := c.k.clock.After(timeout)
	for {
		outs, _, changed := c.k.tee.snapshot(id, "")
		for _, o := range outs {
			if cond(o) {
				return o, nil
			}
		}
		select {
		case <-changed:
		case <-deadline:
			return refresh.Outcome{}, fmt.Errorf("no %s within %s (outcomes received: %s)", what, timeout, describe(outs))
		case <-c.ctx.Done():
			return refresh.Outcome{}, fmt.Errorf("no %s: %w", what, c.ctx.Err())
		}
	}
}

// running waits for the status "running" of model id that follows after
// others, and returns it.
func (c *caseEnv) running(id string, after int) (refresh.Outcome, error) {
	deadline := c.k.clock.After(15 * time.Second)
	for {
		outs, _, changed := c.k.tee.snapshot(id, "")
		seen := 0
		for _, o := range outs {
			if o.Type == refresh.OutcomeStatus && o.Message == "running" {
				if seen == after {
					return o, nil
				}
				seen++
			}
		}
		select {
		case <-changed:
		case <-deadline:
			return refresh.Outcome{}, fmt.Errorf(`no status "running" (number %d) within 15s (outcomes received: %s)`, after+1, describe(outs))
		case <-c.ctx.Done():
			return refresh.Outcome{}, fmt.Errorf(`no status "running": %w`, c.ctx.Err())
		}
	}
}

// ended reports whether o ends an attempt (it is not a status).
func ended(o refresh.Outcome) bool { return o.Type != refresh.OutcomeStatus }

// describe lists outcomes for an error.
func describe(outs []refresh.Outcome) string {
	if len(outs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(outs))
	for _, o := range outs {
		s := o.Type
		if o.Kind != "" {
			s += " " + o.Kind
		}
		if o.Message != "" {
			s += fmt.Sprintf(" %q", truncate(o.Message, 60))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sleeper starts a worker "a" and a model whose job posts the status
// "running" and sleeps that many seconds, and returns the model once the
// job runs.
func (c *caseEnv) sleeper(seconds float64) (refresh.Model, *worker, error) {
	w, err := c.start("a")
	if err != nil {
		return refresh.Model{}, nil, err
	}
	id, err := c.put("m", map[string]any{"status": []string{"running"}, "sleep": seconds}, "")
	if err != nil {
		return refresh.Model{}, nil, err
	}
	o, err := c.running(id, 0)
	if err != nil {
		return refresh.Model{}, nil, err
	}
	m, err := c.k.store.Get(c.ctx, id)
	if err == nil && m.AttemptUID != o.AttemptUID {
		err = fmt.Errorf("the job of attempt %s runs, the model's attempt is %s", o.AttemptUID, m.AttemptUID)
	}
	return m, w, err
}
