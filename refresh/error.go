package refresh

import (
	"errors"
	"fmt"
)

// Error codes, in the manner of WTF Dial: a transport maps them to its own
// status codes in one place.
//
// EINVALID also marks an input that a store cannot take (bytes its database
// refuses): a consumer sets such an outcome aside instead of retrying it.
// EUNAVAILABLE is a passing condition (a model locked too long, a database
// that does not answer): the same request may succeed later.
const (
	ECONFLICT     = "conflict"
	EINTERNAL     = "internal"
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EPRECONDITION = "precondition_failed"
	EUNAVAILABLE  = "unavailable"
)

// Error is an error a caller can act on: a code and a human message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error or *ValidationError in
// err's chain, EINTERNAL for any other error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var v *ValidationError
	if errors.As(err, &v) {
		return EINVALID
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error or *ValidationError
// in err's chain, and "internal error" for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Error()
	}
	return "internal error"
}

// FieldError is one broken rule of an input, named by its field path, e.g.
// {"retry.backoff.multiplier", "must be >= 1, got 0.5"}.
type FieldError struct {
	Field string `json:"field"`
	Rule  string `json:"rule"`
}

func (e FieldError) String() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// ValidationError lists every broken rule of an input (a policy, a
// simulation spec). Its code is EINVALID.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	s := ""
	for i, f := range e.Fields {
		if i > 0 {
			s += "; "
		}
		s += f.String()
	}
	return s
}
