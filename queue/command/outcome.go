package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// ended is how a command ended, as its worker saw it.
type ended struct {
	exitKind   string // exit_<code> or signal_<NAME>; "" for exit status 0
	exitText   string // "exit status 3", "killed by signal SIGTERM"
	stopped    error  // why the worker stopped the command; nil if it did not
	stderr     string // the last lines of stderr
	result     []byte // the last JSON line; nil if none
	unreadable bool   // a line starting with { after it was too long to read
}

// outcomeUnchanged is the outcome of a last JSON line that means a success
// with "unchanged": true, as the wire says it.
const outcomeUnchanged = "unchanged"

// outcome returns what the worker reports for the command at now: nil for
// a success, a *queue.Result for an unchanged success (queue.Unchanged) or
// a snooze (queue.Snooze, queue.SnoozeUntil), else a failure built with
// queue.Fail.
//
// The last JSON line is read as an outcome message without model_id and
// attempt_uid (queue.DecodeResult and refresh.CheckOutcome: the rules the
// scheduler applies to a message), with three differences: outcome may be
// absent (the exit status says success or failure), it may be "unchanged"
// (a success with "unchanged": true), and failure fields (kind, message,
// retryable, user_message) go with a failure only.
func (e ended) outcome(now time.Time) error {
	if e.unreadable {
		return e.badOutput(fmt.Sprintf("a line that starts with { is longer than %d bytes and cannot be read", MaxLine))
	}
	if e.result == nil {
		if e.exitKind == "" {
			return nil
		}
		return queue.Fail(e.exitKind, e.exitMessage())
	}
	o, reason := queue.DecodeResult(string(e.result), queue.DefaultLimits())
	if reason != "" {
		return e.badOutput(reason)
	}
	said := o.Type
	switch said {
	case "":
		o.Type = refresh.OutcomeSuccess
		if e.exitKind != "" {
			o.Type = refresh.OutcomeFailure
		}
	case outcomeUnchanged:
		o.Type, o.Unchanged = refresh.OutcomeSuccess, true
	case refresh.OutcomeSuccess, refresh.OutcomeFailure, refresh.OutcomeSnooze:
	default:
		return e.badOutput(fmt.Sprintf("outcome: must be success, failure, snooze or unchanged, got %q", cutText(said, 40, false)))
	}
	if o.Type != refresh.OutcomeFailure {
		if name := failureField(o); name != "" {
			if said == "" {
				return e.badOutput(name + ": only with a failure, and the command exited with status 0 and gave no outcome")
			}
			return e.badOutput(fmt.Sprintf("%s: only with outcome failure, got outcome %q", name, said))
		}
	}
	if reason := refresh.CheckOutcome(o, now); reason != "" {
		return e.badOutput(reason)
	}
	switch o.Type {
	case refresh.OutcomeSuccess:
		if o.Unchanged {
			return queue.Unchanged()
		}
		return nil
	case refresh.OutcomeSnooze:
		if !o.Until.IsZero() {
			return queue.SnoozeUntil(o.Until)
		}
		return queue.Snooze(time.Duration(o.For))
	}
	kind, message := e.exitKind, e.exitMessage()
	if kind == "" {
		kind, message = queue.KindError, e.stderr
		if message == "" {
			message = "the command reported a failure"
		}
	}
	if o.Kind != "" {
		kind = o.Kind
	}
	if o.Message != "" {
		message = o.Message
	}
	err := queue.Fail(kind, message)
	if o.Retryable != nil && !*o.Retryable {
		err = queue.Permanent(err)
	}
	if o.UserMessage != "" {
		err = queue.UserMessage(err, o.UserMessage)
	}
	return err
}

// failureField returns the name of the first member of o that only goes
// with a failure, or "".
func failureField(o refresh.Outcome) string {
	switch {
	case o.Kind != "":
		return "kind"
	case o.Message != "":
		return "message"
	case o.Retryable != nil:
		return "retryable"
	case o.UserMessage != "":
		return "user_message"
	}
	return ""
}

// exitMessage is the message of a failure said by the exit status.
func (e ended) exitMessage() string {
	msg := e.exitText
	switch {
	case errors.Is(e.stopped, context.DeadlineExceeded):
		msg += " (stopped at the job's deadline)"
	case e.stopped != nil:
		msg += " (stopped: " + e.stopped.Error() + ")"
	}
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// badOutput is a failure of kind bad_output about the last JSON line.
func (e ended) badOutput(why string) error {
	return queue.Fail(KindBadOutput, "stdout: last JSON line: "+why+" ("+e.exitText+")")
}
