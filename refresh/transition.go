package refresh

import "time"

// Event types: what happened to a model.
const (
	EventCreate  = "create"
	EventStart   = "start"
	EventSuccess = "success"
	EventFailure = "failure"
	EventTimeout = "timeout"
	EventStale   = "stale"
	EventStatus  = "status"
	EventTrigger = "trigger"
	EventEnable  = "enable"
	EventPause   = "pause"
	EventResume  = "resume"
	EventCancel  = "cancel"
)

// Failure decisions (DESIGN.md section 3, Failure).
const (
	DecisionRetry        = "retry"
	DecisionRetryAligned = "retry_aligned"
	DecisionWaitNext     = "wait_next"
	DecisionDisable      = "disable"
)

// Decision explains a transition: which event, which rule decided, and why.
// It feeds logs, history and the simulator.
type Decision struct {
	Event string
	// Outcome is the failure decision (retry, retry_aligned, wait_next,
	// disable) for failure and timeout events, else "".
	Outcome string
	// Rule names the rule of DESIGN.md section 3 that decided, e.g.
	// "failure.1 not retryable".
	Rule string
	// Why is a human sentence with the figures that decided.
	Why     string
	Delay   time.Duration
	Kind    string
	Message string
	// Reason is the disabled reason when Outcome is disable.
	Reason string
}
