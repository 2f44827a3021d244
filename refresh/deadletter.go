package refresh

import "time"

// DeadLetter is a message set aside on the dead-letter list because it
// could not be taken (section 3, Malformed outcome), as the queue lists it
// for people to inspect, requeue or drop.
type DeadLetter struct {
	// ID names the entry as it is stored: the same entry always has the
	// same id, and an id names no other entry.
	ID string
	// At is when the message was set aside.
	At time.Time
	// Reason names the field at fault and the rule it breaks.
	Reason string
	// Message is the message as it was refused (see WIRE.md for what is
	// kept of a message that is not UTF-8 or too large).
	Message string
	// List is the list a requeue puts Message back on ("outcomes",
	// "jobs:<queue>"), or "" when the entry cannot be requeued (its message
	// was cut, or does not tell its queue); Refusal then says why.
	List    string
	Refusal string
}

// DeadResult is what a requeue or a drop of dead letters did.
type DeadResult struct {
	// Done counts the entries requeued or dropped.
	Done int
	// Missing are the ids asked for that the list does not hold (never
	// there, or requeued or dropped meanwhile by another caller).
	Missing []string
	// Refused are the entries that cannot be requeued, with why.
	Refused []DeadRefusal
}

// DeadRefusal is a dead letter that cannot be requeued, and why.
type DeadRefusal struct {
	ID     string
	Reason string
}
