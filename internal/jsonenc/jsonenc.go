// Package jsonenc appends JSON values to byte slices exactly as
// encoding/json encodes them, without reflection: the hot paths that encode
// jobs, outcomes and events by hand share it.
package jsonenc

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Encodable reports whether time.Time.MarshalJSON accepts t: its year is
// within [0, 9999].
func Encodable(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// AppendTime appends t as time.Time.MarshalJSON does.
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as json.Marshal escapes
// it: quotes, backslashes, control characters and <, > and & (HTML), U+2028
// and U+2029; invalid UTF-8 becomes \ufffd.
func AppendString(b []byte, s string) []byte {
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

// AppendCompact appends the valid JSON p to b as json.Marshal copies a
// json.RawMessage: without insignificant space, with <, >, &, U+2028 and
// U+2029 escaped.
func AppendCompact(b []byte, p json.RawMessage) []byte {
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
