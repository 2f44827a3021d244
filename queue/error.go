package queue

import "errors"

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
