package queue

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/freshen-dev/freshen/refresh"
)

// Messages are decoded strictly (WIRE.md, "Decoding"): a message is one
// JSON object in UTF-8 whose member names are unique; the fields the
// receiver knows have the documented types, and their strings hold no NUL
// character and no lone surrogate. Whatever breaks a rule is dead-lettered
// with a reason that names the field. Unknown members are ignored.
//
// encoding/json cannot be used as it is: it takes the last of duplicated
// names, matches names without regard to case and replaces invalid UTF-8
// silently. The message is checked with json.Valid, then its top-level
// members are cut out of it here.

// member is one member of a JSON object: its name, decoded, and its value
// as it is written.
type member struct {
	name  string
	value string
}

// objectMembers returns the members of the JSON object raw, in order, or
// the reason raw is not an object whose names are unique and whose text is
// UTF-8. buf is reused for the result.
func objectMembers(raw string, buf []member) ([]member, string) {
	if !json.Valid([]byte(raw)) {
		var v json.RawMessage
		err := json.Unmarshal([]byte(raw), &v)
		if err == nil { // not reached: json.Valid and Unmarshal agree
			return nil, "invalid json"
		}
		return nil, "invalid json: " + err.Error()
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, "must be a JSON object, got " + jsonKind(raw[i:])
	}
	valid := utf8.ValidString(raw)
	members := buf[:0]
	// names holds the names seen once there are too many to compare with
	// each in turn: an object may have hundreds of thousands of members.
	var names map[string]bool
	i++
	for {
		i = skipSpace(raw, i)
		if raw[i] == '}' {
			break
		}
		end := stringEnd(raw, i)
		tok := raw[i:end]
		i = skipSpace(raw, end) + 1 // ':'
		i = skipSpace(raw, i)
		vend := valueEnd(raw, i)
		m := member{value: raw[i:vend]}
		i = skipSpace(raw, vend)
		if raw[i] == ',' {
			i++
		}
		if !valid && !utf8.ValidString(tok) {
			return nil, "field name: must be valid UTF-8"
		}
		name, reason := unquote(tok)
		if reason != "" {
			return nil, "field name " + shortJSON(tok) + ": " + reason
		}
		m.name = name
		if !valid && !utf8.ValidString(m.value) {
			return nil, fieldName(name) + ": must be valid UTF-8"
		}
		if names == nil && len(members) == smallObject {
			names = make(map[string]bool, 2*smallObject)
			for _, seen := range members {
				names[seen.name] = true
			}
		}
		if names != nil {
			if names[name] {
				return nil, fieldName(name) + ": duplicate field"
			}
			names[name] = true
		} else {
			for _, seen := range members {
				if seen.name == name {
					return nil, fieldName(name) + ": duplicate field"
				}
			}
		}
		members = append(members, m)
	}
	return members, ""
}

// smallObject is how many members objectMembers compares one by one before
// it keeps their names in a set.
const smallObject = 16

// skipSpace returns the index of the first byte of s at or after i that is
// not JSON white space.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just after the JSON string that starts at i.
func stringEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// valueEnd returns the index just after the JSON value that starts at i.
func valueEnd(s string, i int) int {
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = stringEnd(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(s) && !strings.ContainsRune(",}] \t\r\n", rune(s[i])) {
		i++
	}
	return i
}

// unquote decodes the JSON string tok, or says why its text is not one
// Freshen stores: a NUL character or a lone UTF-16 surrogate.
func unquote(tok string) (string, string) {
	body := tok[1 : len(tok)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, "" // json.Valid refused raw control characters
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		i++
		if body[i] != 'u' {
			continue
		}
		r, _ := strconv.ParseUint(body[i+1:i+5], 16, 16)
		i += 4
		switch {
		case r == 0:
			return "", "must not contain NUL (\\u0000)"
		case r >= 0xDC00 && r <= 0xDFFF:
			return "", "must be valid UTF-8 (lone surrogate \\u" + body[i-3:i+1] + ")"
		case r >= 0xD800 && r <= 0xDBFF:
			var lo uint64 = 0
			if i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				lo, _ = strconv.ParseUint(body[i+3:i+7], 16, 16)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return "", "must be valid UTF-8 (lone surrogate \\u" + body[i-3:i+1] + ")"
			}
			i += 6
		}
	}
	var s string
	if err := json.Unmarshal([]byte(tok), &s); err != nil { // not reached: tok is a valid string
		return "", "invalid string: " + err.Error()
	}
	return s, ""
}

// jsonKind names the kind of the JSON value that v starts with.
func jsonKind(v string) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// fieldName is name for a reason: as it is if it is a plain word, quoted
// and cut to 64 bytes otherwise.
func fieldName(name string) string {
	plain := name != "" && len(name) <= 64
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	if plain {
		return name
	}
	return shortText(name)
}

// shortText quotes s for a reason, cut to 64 bytes.
func shortText(s string) string {
	return strconv.Quote(truncateText(s, 64))
}

// shortJSON is v for a reason, cut to 64 bytes.
func shortJSON(v string) string {
	return truncateText(v, 64)
}

// wrongType is the reason for a member of the wrong JSON type.
func wrongType(name, want, v string) string {
	return name + ": must be " + want + ", got " + shortJSON(v)
}

// stringField decodes the string member m (null counts as absent) or says
// why it is not one.
func stringField(m member) (string, string) {
	switch m.value[0] {
	case 'n':
		return "", ""
	case '"':
		s, reason := unquote(m.value)
		if reason != "" {
			return "", m.name + ": " + reason
		}
		return s, ""
	}
	return "", wrongType(m.name, "a string", m.value)
}

// checkID says why id, the value of field, is not a valid id.
func checkID(field, id string, max int) string {
	switch {
	case id == "":
		return field + ": missing"
	case len(id) > max:
		return fmt.Sprintf("%s: must be at most %d bytes, got %d", field, max, len(id))
	}
	return ""
}

// tooLarge says why raw is too large to decode, if it is.
func tooLarge(raw string, max int) string {
	if len(raw) <= max {
		return ""
	}
	return fmt.Sprintf("too large: must be at most %d bytes, got %d", max, len(raw))
}

// decodeOutcome decodes the outcome raw, or says why it is not a valid
// one. It cuts message and user_message to their limit and reports whether
// it did.
func decodeOutcome(raw string, lim Limits) (refresh.Outcome, bool, string) {
	o, reason := decodeOutcomeFields(raw, lim)
	if reason != "" {
		return o, false, reason
	}
	truncated := len(o.Message) > lim.MaxMessageBytes || len(o.UserMessage) > lim.MaxMessageBytes
	o.Message = truncateText(o.Message, lim.MaxMessageBytes)
	o.UserMessage = truncateText(o.UserMessage, lim.MaxMessageBytes)
	return o, truncated, ""
}

// decodeOutcomeFields decodes and checks the fields of the outcome raw.
func decodeOutcomeFields(raw string, lim Limits) (refresh.Outcome, string) {
	o, reason := decodeOutcomeMembers(raw, lim)
	if reason != "" {
		return o, reason
	}
	if reason := checkID("model_id", o.ModelID, lim.MaxIDBytes); reason != "" {
		return o, reason
	}
	if reason := checkID("attempt_uid", o.AttemptUID, lim.MaxIDBytes); reason != "" {
		return o, reason
	}
	switch o.Type {
	case refresh.OutcomeSuccess, refresh.OutcomeFailure, refresh.OutcomeStatus, refresh.OutcomeSnooze:
	case "":
		return o, "outcome: missing"
	default:
		return o, fmt.Sprintf("outcome: must be success, failure, status or snooze, got %s", shortText(o.Type))
	}
	return o, checkKind(o.Kind, lim)
}

// DecodeResult decodes raw, an outcome without model_id and attempt_uid
// (the last JSON line of a command that freshen work runs), by the rules of
// an outcome message (WIRE.md, "Messages"): one JSON object in UTF-8 with
// unique member names, the members of an outcome with their types, no NUL
// and no lone surrogate in their strings, a kind of at most
// lim.MaxKindBytes; message and user_message are cut to
// lim.MaxMessageBytes. Unlike a message, it may lack outcome, model_id and
// attempt_uid, and its outcome may be any string: the caller decides.
// It returns the rule raw breaks, named by its field, or "". The rules of
// refresh.CheckOutcome are the caller's to apply.
func DecodeResult(raw string, lim Limits) (refresh.Outcome, string) {
	o, reason := decodeOutcomeMembers(raw, lim)
	if reason == "" {
		reason = checkKind(o.Kind, lim)
	}
	o.Message = truncateText(o.Message, lim.MaxMessageBytes)
	o.UserMessage = truncateText(o.UserMessage, lim.MaxMessageBytes)
	return o, reason
}

// checkKind says why kind is too long, if it is.
func checkKind(kind string, lim Limits) string {
	if len(kind) > lim.MaxKindBytes {
		return fmt.Sprintf("kind: must be at most %d bytes, got %d", lim.MaxKindBytes, len(kind))
	}
	return ""
}

// decodeOutcomeMembers decodes the members of the outcome raw and checks
// their types.
func decodeOutcomeMembers(raw string, lim Limits) (refresh.Outcome, string) {
	var o refresh.Outcome
	if reason := tooLarge(raw, lim.MaxBytes); reason != "" {
		return o, reason
	}
	var buf [8]member
	members, reason := objectMembers(raw, buf[:0])
	if reason != "" {
		return o, reason
	}
	for _, m := range members {
		var dst *string
		switch m.name {
		case "model_id":
			dst = &o.ModelID
		case "attempt_uid":
			dst = &o.AttemptUID
		case "outcome":
			dst = &o.Type
		case "kind":
			dst = &o.Kind
		case "message":
			dst = &o.Message
		case "user_message":
			dst = &o.UserMessage
		case "retryable":
			switch m.value {
			case "true", "false":
				b := m.value == "true"
				o.Retryable = &b
			case "null":
			default:
				return o, wrongType(m.name, "true or false", m.value)
			}
			continue
		case "unchanged":
			switch m.value {
			case "true", "false":
				o.Unchanged = m.value == "true"
			case "null":
			default:
				return o, wrongType(m.name, "true or false", m.value)
			}
			continue
		case "until":
			if o.Until, reason = timeField(m); reason != "" {
				return o, reason
			}
			continue
		case "for":
			var text string
			if text, reason = stringField(m); reason != "" {
				return o, reason
			}
			if text != "" {
				d, err := refresh.ParseDuration(text)
				if err != nil {
					return o, m.name + ": " + err.Error()
				}
				o.For = d
			}
			continue
		default:
			continue
		}
		if *dst, reason = stringField(m); reason != "" {
			return o, reason
		}
	}
	return o, ""
}

// decodeJob decodes the job raw, or says why it is not a valid one.
func decodeJob(raw string, lim Limits) (refresh.Job, string) {
	var j refresh.Job
	if reason := tooLarge(raw, lim.MaxBytes); reason != "" {
		return j, reason
	}
	var buf [8]member
	members, reason := objectMembers(raw, buf[:0])
	if reason != "" {
		return j, reason
	}
	for _, m := range members {
		switch m.name {
		case "model_id":
			j.ModelID, reason = stringField(m)
		case "attempt_uid":
			j.AttemptUID, reason = stringField(m)
		case "queue":
			j.Queue, reason = stringField(m)
		case "attempt_no":
			if m.value != "null" {
				n, err := strconv.Atoi(m.value)
				if err != nil {
					reason = wrongType(m.name, "an integer", m.value)
				}
				j.AttemptNo = n
			}
		case "payload":
			if m.value != "null" {
				j.Payload = json.RawMessage(m.value)
			}
		case "started_at":
			j.StartedAt, reason = timeField(m)
		case "deadline_at":
			j.DeadlineAt, reason = timeField(m)
		}
		if reason != "" {
			return j, reason
		}
	}
	if reason := checkID("model_id", j.ModelID, lim.MaxIDBytes); reason != "" {
		return j, reason
	}
	if reason := checkID("attempt_uid", j.AttemptUID, lim.MaxIDBytes); reason != "" {
		return j, reason
	}
	return j, ""
}

// timeField decodes the RFC 3339 time member m (null counts as absent).
func timeField(m member) (time.Time, string) {
	s, reason := stringField(m)
	if reason != "" || s == "" {
		return time.Time{}, reason
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, wrongType(m.name, "an RFC 3339 time", m.value)
	}
	return t, ""
}
