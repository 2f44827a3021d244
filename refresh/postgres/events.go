package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/internal/jsonenc"
	"github.com/freshen-dev/freshen/refresh"
)

// The outbox keeps each batch's events as a JSON array, exactly as
// json.Marshal encodes a []refresh.Event (earlier versions wrote it so, and
// read it back with json.Unmarshal). Encoding and decoding by reflection
// were a large part of the cost of an event, so both are done here by
// hand: appendEvents writes the same bytes as json.Marshal, and
// parseEvents reads what it wrote (or anything else json.Unmarshal reads,
// by falling back to it for an event it does not expect). Each event read
// keeps its own JSON as Raw, which the queue publishes as it is.

// appendEvents appends the JSON array of events to b, as json.Marshal
// encodes it.
func appendEvents(b []byte, events []refresh.Event) ([]byte, error) {
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendEvent(b, &events[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// insertEvents writes one outbox row.
const insertEvents = `INSERT INTO outbox (events) VALUES ($1)`

// insertPropagated writes the outbox row of successes that only the
// upstream triggers need, if one of their models ($2) has dependents:
// through the index models_upstreams, which holds nothing when no model
// has upstreams.
const insertPropagated = `INSERT INTO outbox (events) SELECT $1 WHERE EXISTS (SELECT FROM models WHERE upstreams && $2::text[])`

// queueEvents queues on b the writes of events to the outbox under names,
// and returns how many statements it queued (0 to 2). The events a
// subscriber or the Publisher needs (refresh.EventNames.Keeps) go in one
// row; the successes kept only for their upstream triggers
// (refresh.Event.Propagates) in another, written only if one of their
// models has dependents. Any other event costs nothing: it is not encoded.
func queueEvents(b *pgx.Batch, events []refresh.Event, names refresh.EventNames) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	if names == (refresh.EventNames{}) {
		row, err := appendEvents(make([]byte, 0, 256*len(events)), events)
		if err != nil {
			return 0, fmt.Errorf("encode %d events: %w", len(events), err)
		}
		b.Queue(insertEvents, row)
		return 1, nil
	}
	var kept, propagated []byte
	var ids []string
	for i := range events {
		e := &events[i]
		var err error
		switch {
		case names.Keeps(*e):
			kept, err = appendElem(kept, e)
		case e.Propagates():
			propagated, err = appendElem(propagated, e)
			ids = append(ids, e.ModelID)
		}
		if err != nil {
			return 0, fmt.Errorf("encode the event of model %s: %w", e.ModelID, err)
		}
	}
	n := 0
	if kept != nil {
		b.Queue(insertEvents, append(kept, ']'))
		n++
	}
	if propagated != nil {
		b.Queue(insertPropagated, append(propagated, ']'), ids)
		n++
	}
	return n, nil
}

// appendElem appends e to the JSON array being written in b: b is nil
// before its first element, and lacks the closing bracket.
func appendElem(b []byte, e *refresh.Event) ([]byte, error) {
	if b == nil {
		b = append(make([]byte, 0, 1024), '[')
	} else {
		b = append(b, ',')
	}
	return appendEvent(b, e)
}

// appendEvent appends the JSON of e to b, as json.Marshal encodes it.
func appendEvent(b []byte, e *refresh.Event) ([]byte, error) {
	if !jsonenc.Encodable(e.At) || !jsonenc.Encodable(e.AttemptDeadlineAt) || !jsonenc.Encodable(e.RefreshAt) || !jsonenc.Encodable(e.DeadlineAt) || extended(e) {
		// json.Marshal refuses the time, with its own error, or encodes
		// the fields of the extensions, which are rare.
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	b = append(b, `{"at":`...)
	b = jsonenc.AppendTime(b, e.At)
	b = append(b, `,"model_id":`...)
	b = jsonenc.AppendString(b, e.ModelID)
	b = append(b, `,"event":`...)
	b = jsonenc.AppendString(b, e.Type)
	if e.Decision != "" {
		b = append(b, `,"decision":`...)
		b = jsonenc.AppendString(b, e.Decision)
	}
	if e.Kind != "" {
		b = append(b, `,"kind":`...)
		b = jsonenc.AppendString(b, e.Kind)
	}
	if e.Message != "" {
		b = append(b, `,"message":`...)
		b = jsonenc.AppendString(b, e.Message)
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonenc.AppendString(b, e.Reason)
	}
	if e.Delay != 0 {
		b = append(b, `,"delay":`...)
		b = strconv.AppendInt(b, int64(e.Delay), 10)
	}
	b = append(b, `,"attempt_no":`...)
	b = strconv.AppendInt(b, int64(e.AttemptNo), 10)
	if e.AttemptUID != "" {
		b = append(b, `,"attempt_uid":`...)
		b = jsonenc.AppendString(b, e.AttemptUID)
	}
	if !e.AttemptDeadlineAt.IsZero() {
		b = append(b, `,"attempt_deadline_at":`...)
		b = jsonenc.AppendTime(b, e.AttemptDeadlineAt)
	}
	if !e.RefreshAt.IsZero() {
		b = append(b, `,"refresh_at":`...)
		b = jsonenc.AppendTime(b, e.RefreshAt)
	}
	if !e.DeadlineAt.IsZero() {
		b = append(b, `,"deadline_at":`...)
		b = jsonenc.AppendTime(b, e.DeadlineAt)
	}
	b = append(b, `,"disabled":`...)
	b = strconv.AppendBool(b, e.Disabled)
	return append(b, '}'), nil
}

// extended reports whether e has any of the extensions' fields, which
// appendEvent leaves to json.Marshal.
func extended(e *refresh.Event) bool {
	return e.Cause != "" || e.Upstream != "" || e.Unchanged || !e.Until.IsZero() || !e.OverdueSince.IsZero() ||
		e.OverdueFor != 0 || e.State != "" || e.Missed != 0 || !e.DebounceAt.IsZero() || e.WaitingForSlot || e.Recovered
}

// errUnexpected makes parseEvent leave an event to json.Unmarshal.
var errUnexpected = errors.New("unexpected JSON")

// parseEvents reads the JSON array of events text and appends them to out.
// text may be the driver's buffer: what the events keep is copied, once.
// Each event's Raw is its JSON within that copy, which nothing writes.
func parseEvents(text []byte, out []refresh.Event) ([]refresh.Event, error) {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '[' {
		return nil, errors.New("outbox events: not a JSON array")
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == ']' {
		return out, nil
	}
	// The strings of the events, and their Raw, share one copy of the text.
	str := string(text)
	for {
		end, err := valueEnd(text, i)
		if err != nil {
			return nil, err
		}
		raw := unsafe.Slice(unsafe.StringData(str[i:end]), end-i)
		var e refresh.Event
		if err := parseEvent(str[i:end], &e); err != nil {
			e = refresh.Event{}
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, err
			}
		}
		e.Raw = raw
		out = append(out, e)
		i = skipSpace(text, end)
		if i >= len(text) {
			return nil, errors.New("outbox events: unexpected end of the array")
		}
		switch text[i] {
		case ',':
			i = skipSpace(text, i+1)
		case ']':
			if skipSpace(text, i+1) != len(text) {
				return nil, errors.New("outbox events: text after the array")
			}
			return out, nil
		default:
			return nil, errors.New("outbox events: expected , or ]")
		}
	}
}

// parseEvent reads the JSON object raw into e as json.Unmarshal would, or
// returns errUnexpected for what it does not handle (null, other numbers,
// unknown or differently cased names...), leaving e partly set.
func parseEvent(raw string, e *refresh.Event) error {
	if len(raw) < 2 || raw[0] != '{' {
		return errUnexpected
	}
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return nil
	}
	for {
		if raw[i] != '"' {
			return errUnexpected
		}
		name, next, ok := simpleString(raw, i)
		if !ok {
			return errUnexpected
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return errUnexpected
		}
		i = skipSpace(raw, i+1)
		var err error
		switch name {
		case "at":
			i, err = parseTime(raw, i, &e.At)
		case "model_id":
			i, err = parseString(raw, i, &e.ModelID)
		case "event":
			i, err = parseString(raw, i, &e.Type)
		case "decision":
			i, err = parseString(raw, i, &e.Decision)
		case "kind":
			i, err = parseString(raw, i, &e.Kind)
		case "message":
			i, err = parseString(raw, i, &e.Message)
		case "reason":
			i, err = parseString(raw, i, &e.Reason)
		case "delay":
			var n int64
			i, n, err = parseInt(raw, i)
			e.Delay = time.Duration(n)
		case "attempt_no":
			var n int64
			i, n, err = parseInt(raw, i)
			e.AttemptNo = int(n)
			if int64(e.AttemptNo) != n {
				err = errUnexpected
			}
		case "attempt_uid":
			i, err = parseString(raw, i, &e.AttemptUID)
		case "attempt_deadline_at":
			i, err = parseTime(raw, i, &e.AttemptDeadlineAt)
		case "refresh_at":
			i, err = parseTime(raw, i, &e.RefreshAt)
		case "deadline_at":
			i, err = parseTime(raw, i, &e.DeadlineAt)
		case "disabled":
			switch {
			case hasPrefixAt(raw, i, "true"):
				e.Disabled, i = true, i+4
			case hasPrefixAt(raw, i, "false"):
				e.Disabled, i = false, i+5
			default:
				err = errUnexpected
			}
		default:
			err = errUnexpected
		}
		if err != nil {
			return err
		}
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return errUnexpected
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
			if i >= len(raw) {
				return errUnexpected
			}
		case '}':
			if i != len(raw)-1 {
				return errUnexpected
			}
			return nil
		default:
			return errUnexpected
		}
	}
}

func hasPrefixAt(b string, i int, s string) bool {
	return len(b)-i >= len(s) && b[i:i+len(s)] == s
}

// simpleString returns the string starting at b[i] (a quote) and the index
// after it, if it has no escape and is valid UTF-8.
func simpleString(b string, i int) (string, int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			if !utf8.ValidString(s) {
				return "", 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// parseString reads the JSON string at b[i] into s and returns the index
// after it.
func parseString(b string, i int, s *string) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errUnexpected
	}
	if v, next, ok := simpleString(b, i); ok {
		*s = v
		return next, nil
	}
	end, err := valueEnd(b, i)
	if err != nil {
		return 0, errUnexpected
	}
	if err := json.Unmarshal([]byte(b[i:end]), s); err != nil {
		return 0, errUnexpected
	}
	return end, nil
}

// parseTime reads the JSON string at b[i] as time.Time.UnmarshalJSON does
// and returns the index after it.
func parseTime(b string, i int, t *time.Time) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errUnexpected
	}
	for j := i + 1; j < len(b); j++ {
		if b[j] == '"' {
			if err := t.UnmarshalText([]byte(b[i+1 : j])); err != nil {
				return 0, errUnexpected
			}
			return j + 1, nil
		}
		if b[j] == '\\' {
			return 0, errUnexpected
		}
	}
	return 0, errUnexpected
}

// parseInt reads the JSON integer at b[i] and returns the index after it.
func parseInt(b string, i int) (int, int64, error) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0, errUnexpected
	}
	n, err := strconv.ParseInt(b[i:j], 10, 64)
	if err != nil {
		return 0, 0, errUnexpected
	}
	return j, n, nil
}

func skipSpace[T string | []byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just after the JSON value (an object, an
// array, a string or a scalar) that starts at b[i]. It checks only what it
// needs to find the end: json.Unmarshal checks the value.
func valueEnd[T string | []byte](b T, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("outbox events: unexpected end")
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errors.New("outbox events: unterminated string")
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := valueEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("outbox events: unterminated value")
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return 0, errors.New("outbox events: expected a value")
	}
	return j, nil
}
