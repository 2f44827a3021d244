package queue

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/refresh"
)

// Jobs and outcomes are encoded by hand, to the same bytes as json.Marshal
// writes (tested), which spent most of its time in reflection: every job
// and every outcome goes through here.

// appendJob appends the JSON of j to b, as json.Marshal encodes it.
func appendJob(b []byte, j *refresh.Job) ([]byte, error) {
	if !encodable(j.StartedAt) || !encodable(j.DeadlineAt) || (len(j.Payload) > 0 && !json.Valid(j.Payload)) {
		// json.Marshal refuses it, with its own error.
		raw, err := json.Marshal(j)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	b = append(b, `{"model_id":`...)
	b = appendString(b, j.ModelID)
	b = append(b, `,"attempt_uid":`...)
	b = appendString(b, j.AttemptUID)
	b = append(b, `,"attempt_no":`...)
	b = strconv.AppendInt(b, int64(j.AttemptNo), 10)
	b = append(b, `,"queue":`...)
	b = appendString(b, j.Queue)
	if len(j.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = appendCompact(b, j.Payload)
	}
	b = append(b, `,"started_at":`...)
	b = appendTime(b, j.StartedAt)
	b = append(b, `,"deadline_at":`...)
	b = appendTime(b, j.DeadlineAt)
	return append(b, '}'), nil
}

// appendCompact appends the valid JSON p to b as json.Marshal copies a
// json.RawMessage: without insignificant space, with <, >, &, U+2028 and
// U+2029 escaped.
func appendCompact(b []byte, p json.RawMessage) []byte {
	inString := false
	start := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, p[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(p) && p[i+1] == 0x80 && p[i+2]&^1 == 0xA8:
			b = append(b, p[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[p[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			switch c {
			case '\\':
				i++ // the escaped character is none of the above
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			b = append(b, p[start:i]...)
			start = i + 1
		}
	}
	return append(b, p[start:]...)
}

// appendOutcome appends the JSON of o to b, as json.Marshal encodes it.
func appendOutcome(b []byte, o *refresh.Outcome) []byte {
	b = append(b, `{"model_id":`...)
	b = appendString(b, o.ModelID)
	b = append(b, `,"attempt_uid":`...)
	b = appendString(b, o.AttemptUID)
	b = append(b, `,"outcome":`...)
	b = appendString(b, o.Type)
	if o.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, o.Kind)
	}
	if o.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, o.Message)
	}
	if o.Retryable != nil {
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, *o.Retryable)
	}
	if o.UserMessage != "" {
		b = append(b, `,"user_message":`...)
		b = appendString(b, o.UserMessage)
	}
	if !o.Until.IsZero() && encodable(o.Until) {
		// A time json.Marshal refuses cannot have come from a worker's
		// JSON; it is left out rather than sent unreadable.
		b = append(b, `,"until":`...)
		b = appendTime(b, o.Until)
	}
	if o.For != 0 {
		b = append(b, `,"for":`...)
		b = appendString(b, o.For.String())
	}
	if o.Unchanged {
		b = append(b, `,"unchanged":true`...)
	}
	return append(b, '}')
}

// encodable reports whether time.Time.MarshalJSON accepts t: its year is
// within [0, 9999].
func encodable(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendTime appends t as time.Time.MarshalJSON does.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as json.Marshal escapes
// it: quotes, backslashes, control characters and <, > and & (HTML), U+2028
// and U+2029; invalid UTF-8 becomes \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
