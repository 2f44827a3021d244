package refresh

import (
	"time"

	"github.com/freshen-dev/freshen/rrule"
)

// Limits are the global bounds every input must stay within: policies,
// payloads, messages. They are configurable (freshen serve has a flag for
// each); a zero field stands for its value in DefaultLimits. Each bound is
// checked when a model is written, with an error that names the field and
// the limit, so that a model that was accepted costs little at every later
// step.
type Limits struct {
	// MaxRetries bounds len(retry.delays) and retry.backoff.max_retries.
	MaxRetries int
	// MaxDelay bounds every retry delay, retry.backoff.base and
	// retry.backoff.max_delay, and the final delay after jitter: Delay
	// never returns more.
	MaxDelay time.Duration
	// MaxTimeout bounds timeout.
	MaxTimeout time.Duration
	// MinTimeout is the least timeout a policy may set.
	MinTimeout time.Duration
	// MaxGiveUpAfter bounds give_up_after.
	MaxGiveUpAfter time.Duration
	// MinInterval is the least distance between two consecutive
	// occurrences of a schedule (among the first 1,000 after the write).
	MinInterval time.Duration
	// MaxMessageBytes bounds the disabled_message template.
	MaxMessageBytes int
	// MaxReasonBytes bounds a disabled reason once its placeholders are
	// expanded. The template, expanded with the longest {attempts} and
	// {since}, must fit in it; the error text is cut to fit what is left
	// (Policy.DisabledReason), and so is a worker's user_message.
	MaxReasonBytes int
	// MaxKinds bounds the length of retry.retry_on and of
	// retry.non_retryable.
	MaxKinds int
	// MaxKindBytes bounds each error kind of those lists.
	MaxKindBytes int
	// MaxPayloadBytes bounds a model's payload.
	MaxPayloadBytes int
	// MaxPayloadDepth bounds the nesting of arrays and objects in a
	// payload.
	MaxPayloadDepth int
	// MaxFieldErrors bounds how many broken rules an error lists; the
	// error says how many more it left out.
	MaxFieldErrors int
	// Schedule bounds a schedule's text, rules, dates, COUNT and the work
	// to find one occurrence; a zero field stands for its value in
	// rrule.DefaultLimits.
	Schedule rrule.Limits
}

// DefaultLimits returns the default bounds: 100 retries, 30 days of delay,
// a timeout from 1 second to 7 days, a give_up_after of at most 365 days,
// schedules no denser than one occurrence a minute, a disabled_message of
// 1,000 bytes expanding to at most 4,096, 100 error kinds of at most 64
// bytes per list, payloads of 64 KiB nested at most 32 deep, and 20 errors
// per answer.
func DefaultLimits() Limits {
	return Limits{
		MaxRetries:      100,
		MaxDelay:        defaultMaxDelay,
		MaxTimeout:      7 * 24 * time.Hour,
		MinTimeout:      time.Second,
		MaxGiveUpAfter:  365 * 24 * time.Hour,
		MinInterval:     time.Minute,
		MaxMessageBytes: 1000,
		MaxReasonBytes:  defaultMaxReasonBytes,
		MaxKinds:        100,
		MaxKindBytes:    64,
		MaxPayloadBytes: 64 << 10,
		MaxPayloadDepth: 32,
		MaxFieldErrors:  20,
	}
}

// Defaults that policies read at every failure.
const (
	defaultMaxDelay       = 30 * 24 * time.Hour
	defaultMaxReasonBytes = 4096
)

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
	setD(&l.MaxGiveUpAfter, d.MaxGiveUpAfter)
	setD(&l.MinInterval, d.MinInterval)
	set(&l.MaxMessageBytes, d.MaxMessageBytes)
	set(&l.MaxReasonBytes, d.MaxReasonBytes)
	set(&l.MaxKinds, d.MaxKinds)
	set(&l.MaxKindBytes, d.MaxKindBytes)
	set(&l.MaxPayloadBytes, d.MaxPayloadBytes)
	set(&l.MaxPayloadDepth, d.MaxPayloadDepth)
	set(&l.MaxFieldErrors, d.MaxFieldErrors)
	return l
}
