package queue

import (
	"errors"
	"time"
)

// KindError is the failure kind of a handler error that does not say its
// own, and KindPanic the kind of a handler that panicked.
const (
	KindError = "error"
	KindPanic = "panic"
)

// JobError is a handler error that says how the failure is reported: its
// kind, whether a retry may help, and a message for the customer. Build it
// with Fail, Permanent and UserMessage, which compose:
//
//	return queue.Permanent(queue.UserMessage(
//		queue.Fail("validation", "row 3: no date"),
//		"Your file has a row without a date."))
//
// The worker finds it in the returned error's chain with errors.As, so it
// may be wrapped further. The failure's message is the returned error's
// Error().
type JobError struct {
	// Kind classifies the failure (e.g. "validation", "http_503"); empty
	// means "error", and so does a kind the wire format refuses (longer
	// than Limits.MaxKindBytes, invalid UTF-8, a NUL character).
	Kind string
	// Message is the error text; if empty, Err's. Invalid UTF-8 and NUL
	// are replaced with U+FFFD, and a text over Limits.MaxMessageBytes is
	// cut, as is UserMessage.
	Message string
	// Permanent marks the failure as not retryable (retryable: false on the
	// wire). The zero value is retryable.
	Permanent bool
	// UserMessage becomes the customer-facing disabled reason if the
	// failure disables the model.
	UserMessage string
	// Err is the wrapped error, if any.
	Err error
}

func (e *JobError) Error() string {
	if e.Message != "" || e.Err == nil {
		return e.Message
	}
	return e.Err.Error()
}

func (e *JobError) Unwrap() error { return e.Err }

// Fail returns a retryable failure of kind with message.
func Fail(kind, message string) error {
	return &JobError{Kind: kind, Message: message}
}

// Permanent returns err marked as not retryable, keeping the kind and user
// message of a JobError in its chain.
func Permanent(err error) error {
	e := derive(err)
	e.Permanent = true
	return e
}

// UserMessage returns err with a customer-facing message, keeping the kind
// and permanence of a JobError in its chain.
func UserMessage(err error, msg string) error {
	e := derive(err)
	e.UserMessage = msg
	return e
}

// derive returns a JobError that wraps err and carries the fields of the
// first JobError in err's chain.
func derive(err error) *JobError {
	e := &JobError{Err: err}
	var inner *JobError
	if errors.As(err, &inner) {
		e.Kind, e.Permanent, e.UserMessage = inner.Kind, inner.Permanent, inner.UserMessage
	}
	if err == nil {
		e.Message = "unknown error"
	}
	return e
}

// Result is what a handler returns, instead of an error, to report an
// outcome other than a plain success or a failure (DESIGN.md section 6):
// Snooze, SnoozeUntil and Unchanged build it. The worker finds it in the
// returned error's chain with errors.As, like a JobError.
type Result struct {
	// Snooze, if set, ends the attempt with a snooze: the input is not
	// ready, and the model tries again after For or at Until (one of the
	// two), or sooner at its next scheduled occurrence. It is not a
	// failure; Policy.max_snooze bounds how long a round may snooze.
	Snooze bool
	Until  time.Time
	For    time.Duration
	// Unchanged, without Snooze, reports a success whose data did not
	// change: the model's dependents are not triggered.
	Unchanged bool
}

func (r *Result) Error() string {
	switch {
	case r.Snooze && !r.Until.IsZero():
		return "snooze until " + r.Until.UTC().Format(time.RFC3339)
	case r.Snooze:
		return "snooze for " + r.For.String()
	}
	return "success, data unchanged"
}

// Snooze returns the result "the input is not ready: try again in d" (d >
// 0; the scheduler dead-letters a snooze that asks for no time).
func Snooze(d time.Duration) error { return &Result{Snooze: true, For: d} }

// SnoozeUntil returns the result "the input is not ready: try again at
// t". t must be after the time the outcome reaches the scheduler, on its
// clock; prefer Snooze when the clocks may disagree.
func SnoozeUntil(t time.Time) error { return &Result{Snooze: true, Until: t} }

// Unchanged returns the result "succeeded, and the data did not change".
func Unchanged() error { return &Result{Unchanged: true} }
