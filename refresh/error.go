package refresh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// ValidationError lists the broken rules of an input (a policy, a
// simulation spec). Its code is EINVALID. An input with more broken rules
// than an answer may list (Limits.MaxFieldErrors) lists the first ones in
// Fields and counts the others it found in More; a decoder that reached
// the cap stops checking, so More is a lower bound.
type ValidationError struct {
	Fields []FieldError
	// More counts broken rules found and left out of Fields.
	More int
}

// Error lists the rules separated by "; ", followed by "... and N more"
// when some were left out.
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		if f.Field != "" {
			b.WriteString(f.Field)
			b.WriteString(": ")
		}
		b.WriteString(f.Rule)
	}
	if e.More > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("... and ")
		b.WriteString(strconv.Itoa(e.More))
		b.WriteString(" more")
	}
	return b.String()
}

// errorList collects broken rules up to a cap and counts the rest. The
// zero value has no cap.
type errorList struct {
	max  int // 0: no cap
	errs []FieldError
	more int
}

// full reports whether the cap is reached: a further rule is only counted.
func (l *errorList) full() bool { return l.max > 0 && len(l.errs) >= l.max }

// add records a broken rule, or counts it when the list is full. The rule
// is formatted only if it is recorded.
func (l *errorList) add(field, format string, args ...any) {
	if l.full() {
		l.more++
		return
	}
	rule := format
	if len(args) > 0 {
		rule = fmt.Sprintf(format, args...)
	}
	l.errs = append(l.errs, FieldError{Field: field, Rule: rule})
}

// err returns the *ValidationError of the rules collected, or nil.
func (l *errorList) err() error {
	if len(l.errs) == 0 && l.more == 0 {
		return nil
	}
	return &ValidationError{Fields: l.errs, More: l.more}
}
