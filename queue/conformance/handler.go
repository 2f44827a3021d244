package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// Payload is what the handler of a worker under test is asked to do: the
// member "conformance" of a job's payload (docs/workers.md,
// "Conformance").
type Payload struct {
	// Status lists statuses to post, in order, first.
	Status []string `json:"status"`
	// Sleep is how many seconds to wait then, stopping early if the job
	// is revoked or its deadline passes.
	Sleep float64 `json:"sleep"`
	// Do is succeed (default), fail or snooze.
	Do string `json:"do"`
	// Unchanged, with succeed: a success with "unchanged": true.
	Unchanged bool `json:"unchanged"`
	// Kind, Message, Retryable and UserMessage, with fail: the failure.
	Kind        string `json:"kind"`
	Message     string `json:"message"`
	Retryable   *bool  `json:"retryable"`
	UserMessage string `json:"user_message"`
	// SnoozeFor, with snooze: how many seconds.
	SnoozeFor float64 `json:"snooze_for"`
}

// Handler is the conformance handler for the Go SDK: a queue.Handler that
// does what the job's payload asks (Payload). A worker that runs it can be
// checked with `freshen conformance`.
func Handler(ctx context.Context, job queue.Job) error {
	var p struct {
		Conformance Payload `json:"conformance"`
	}
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return queue.Permanent(queue.Fail("validation", "payload: "+err.Error()))
	}
	c := p.Conformance
	for _, s := range c.Status {
		if err := job.Status(ctx, s); err != nil {
			return err
		}
	}
	if c.Sleep > 0 {
		select {
		case <-ctx.Done():
			return queue.Fail("interrupted", context.Cause(ctx).Error())
		case <-refresh.SystemClock{}.After(time.Duration(c.Sleep * float64(time.Second))):
		}
	}
	switch c.Do {
	case "fail":
		err := queue.Fail(c.Kind, c.Message)
		if c.Retryable != nil && !*c.Retryable {
			err = queue.Permanent(err)
		}
		if c.UserMessage != "" {
			err = queue.UserMessage(err, c.UserMessage)
		}
		return err
	case "snooze":
		return queue.Snooze(time.Duration(c.SnoozeFor * float64(time.Second)))
	case "", "succeed":
		if c.Unchanged {
			return queue.Unchanged()
		}
		return nil
	}
	return queue.Permanent(queue.Fail("validation", fmt.Sprintf("conformance.do: must be succeed, fail or snooze, got %q", c.Do)))
}
