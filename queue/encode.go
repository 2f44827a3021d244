package queue

import (
	"encoding/json"
	"github.com/freshen-dev/freshen/internal/jsonenc"
	"strconv"

	"github.com/freshen-dev/freshen/refresh"
)

// Jobs and outcomes are encoded by hand, to the same bytes as json.Marshal
// writes (tested), which spent most of its time in reflection: every job
// and every outcome goes through here.

// appendJob appends the JSON of j to b, as json.Marshal encodes it.
func appendJob(b []byte, j *refresh.Job) ([]byte, error) {
	if !jsonenc.Encodable(j.StartedAt) || !jsonenc.Encodable(j.DeadlineAt) || (len(j.Payload) > 0 && !json.Valid(j.Payload)) {
		// json.Marshal refuses it, with its own error.
		raw, err := json.Marshal(j)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	b = append(b, `{"model_id":`...)
	b = jsonenc.AppendString(b, j.ModelID)
	b = append(b, `,"attempt_uid":`...)
	b = jsonenc.AppendString(b, j.AttemptUID)
	b = append(b, `,"attempt_no":`...)
	b = strconv.AppendInt(b, int64(j.AttemptNo), 10)
	b = append(b, `,"queue":`...)
	b = jsonenc.AppendString(b, j.Queue)
	if len(j.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = jsonenc.AppendCompact(b, j.Payload)
	}
	b = append(b, `,"started_at":`...)
	b = jsonenc.AppendTime(b, j.StartedAt)
	b = append(b, `,"deadline_at":`...)
	b = jsonenc.AppendTime(b, j.DeadlineAt)
	return append(b, '}'), nil
}

// appendOutcome appends the JSON of o to b, as json.Marshal encodes it.
func appendOutcome(b []byte, o *refresh.Outcome) []byte {
	b = append(b, `{"model_id":`...)
	b = jsonenc.AppendString(b, o.ModelID)
	b = append(b, `,"attempt_uid":`...)
	b = jsonenc.AppendString(b, o.AttemptUID)
	b = append(b, `,"outcome":`...)
	b = jsonenc.AppendString(b, o.Type)
	if o.Kind != "" {
		b = append(b, `,"kind":`...)
		b = jsonenc.AppendString(b, o.Kind)
	}
	if o.Message != "" {
		b = append(b, `,"message":`...)
		b = jsonenc.AppendString(b, o.Message)
	}
	if o.Retryable != nil {
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, *o.Retryable)
	}
	if o.UserMessage != "" {
		b = append(b, `,"user_message":`...)
		b = jsonenc.AppendString(b, o.UserMessage)
	}
	if !o.Until.IsZero() && jsonenc.Encodable(o.Until) {
		// A time json.Marshal refuses cannot have come from a worker's
		// JSON; it is left out rather than sent unreadable.
		b = append(b, `,"until":`...)
		b = jsonenc.AppendTime(b, o.Until)
	}
	if o.For != 0 {
		b = append(b, `,"for":`...)
		b = jsonenc.AppendString(b, o.For.String())
	}
	if o.Unchanged {
		b = append(b, `,"unchanged":true`...)
	}
	return append(b, '}')
}
