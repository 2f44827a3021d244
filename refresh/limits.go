package refresh

import "time"

// Limits are the global bounds every input must stay within: policies,
// payloads, messages. They are configurable (freshen serve has a flag for
// each); a zero field stands for its value in DefaultLimits. Each bound is
// checked when a model is written, with an error that names the field and
// the limit, so that a model that was accepted costs little at every later
// step.
type Limits struct {
	// MaxRetries bounds len(retry.delays) and retry.backoff.max_retries.
	MaxRetries int
	// MaxDelay bounds every retry delay and retry.backoff.max_delay, and
	// the final delay after jitter.
	MaxDelay time.Duration
	// MaxTimeout bounds timeout.
	MaxTimeout time.Duration
	// MinTimeout is the least timeout a policy may set.
	MinTimeout time.Duration
	// MinInterval is the least distance between two consecutive
	// occurrences of a schedule (among the first 1,000 after the write).
	MinInterval time.Duration
	// MaxMessageBytes bounds the disabled_message template.
	MaxMessageBytes int
	// MaxReasonBytes bounds a disabled reason once its placeholders are
	// expanded; the template and the messages it takes must fit in it.
	MaxReasonBytes int
	// MaxPayloadBytes bounds a model's payload.
	MaxPayloadBytes int
	// MaxPayloadDepth bounds the nesting of arrays and objects in a
	// payload.
	MaxPayloadDepth int
	// MaxFieldErrors bounds how many broken rules an error lists.
	MaxFieldErrors int
}

// DefaultLimits returns the default bounds: 100 retries, 30 days of delay,
// a timeout from 1 second to 7 days, schedules no denser than one
// occurrence a minute, a disabled_message of 1,000 bytes expanding to at most
// 4,096, payloads of 64 KiB nested at most 32 deep, and 20 errors per answer.
func DefaultLimits() Limits {
	return Limits{
		MaxRetries:      100,
		MaxDelay:        30 * 24 * time.Hour,
		MaxTimeout:      7 * 24 * time.Hour,
		MinTimeout:      time.Second,
		MinInterval:     time.Minute,
		MaxMessageBytes: 1000,
		MaxReasonBytes:  4096,
		MaxPayloadBytes: 64 << 10,
		MaxPayloadDepth: 32,
		MaxFieldErrors:  20,
	}
}

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&l.MaxRetries, d.MaxRetries)
	setD(&l.MaxDelay, d.MaxDelay)
	setD(&l.MaxTimeout, d.MaxTimeout)
	setD(&l.MinTimeout, d.MinTimeout)
	setD(&l.MinInterval, d.MinInterval)
	set(&l.MaxMessageBytes, d.MaxMessageBytes)
	set(&l.MaxReasonBytes, d.MaxReasonBytes)
	set(&l.MaxPayloadBytes, d.MaxPayloadBytes)
	set(&l.MaxPayloadDepth, d.MaxPayloadDepth)
	set(&l.MaxFieldErrors, d.MaxFieldErrors)
	return l
}
