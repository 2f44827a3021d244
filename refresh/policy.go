package refresh

import "time"

// Policy is a model's refresh policy (DESIGN.md section 2). Build one with
// ParsePolicy, which applies defaults and validates it.
type Policy struct {
	// Schedule is RFC 5545 text or a bare RRULE body; "" means on demand.
	Schedule string `json:"schedule,omitempty"`
	// Timezone names the zone of a bare RRULE or floating DTSTART.
	Timezone string   `json:"timezone,omitempty"`
	Timeout  Duration `json:"timeout"`
	Retry    Retry    `json:"retry"`
	// OnExhausted is "disable" or "wait_next".
	OnExhausted string `json:"on_exhausted"`
	// GiveUpAfter bounds the failure streak; 0 means unbounded.
	GiveUpAfter     Duration `json:"give_up_after,omitzero"`
	DisabledMessage string   `json:"disabled_message"`
}

// Retry says how long to wait before each retry, and which failures retry.
type Retry struct {
	// Delays is an explicit list: retry n waits Delays[n-1].
	Delays []Duration `json:"delays,omitempty"`
	// Backoff computes the delays; exactly one of Delays and Backoff is set.
	Backoff *Backoff `json:"backoff,omitempty"`
	Jitter  float64  `json:"jitter"`
	// Align is nil when not given: true when a schedule exists.
	Align        *bool    `json:"align,omitempty"`
	RetryOn      []string `json:"retry_on,omitempty"`
	NonRetryable []string `json:"non_retryable,omitempty"`
}

// Backoff strategies.
const (
	BackoffImmediate   = "immediate"
	BackoffFixed       = "fixed"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"
	BackoffFibonacci   = "fibonacci"
)

// Backoff computes retry n's delay (n >= 1) from a strategy, then caps it.
type Backoff struct {
	Strategy   string   `json:"strategy"`
	Base       Duration `json:"base,omitzero"`
	Multiplier float64  `json:"multiplier,omitempty"`
	MaxDelay   Duration `json:"max_delay,omitzero"`
	MaxRetries int      `json:"max_retries"`
}

// On-exhausted behaviours.
const (
	ExhaustedDisable  = "disable"
	ExhaustedWaitNext = "wait_next"
)

// Duration is a time.Duration that reads Go syntax ("90s", "1h30m") and
// ISO 8601 ("PT5M", "P7D") from JSON and writes Go syntax.
type Duration time.Duration
