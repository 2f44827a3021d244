package queue

import (
	"fmt"
	"unicode/utf8"
)

// Limits bound what one message may carry (WIRE.md, "Limits"). A zero field
// stands for its default (DefaultLimits). The scheduler (Options.Limits) and
// the workers (WorkerOptions.Limits) should use the same ones.
type Limits struct {
	// MaxBytes bounds a whole message. A larger one is dead-lettered
	// without being decoded (default 1 MiB).
	MaxBytes int
	// MaxIDBytes bounds model_id and attempt_uid; an outcome or job with a
	// longer one is dead-lettered (default 200, the longest model id).
	MaxIDBytes int
	// MaxKindBytes bounds a failure's kind; an outcome with a longer one is
	// dead-lettered (default 64).
	MaxKindBytes int
	// MaxMessageBytes bounds message and user_message. A longer one is cut
	// on a UTF-8 character boundary and ends with TruncatedMarker, so that
	// it is at most MaxMessageBytes long (default 4096; at least 64).
	MaxMessageBytes int
}

// Defaults of Limits.
const (
	DefaultMaxBytes        = 1 << 20
	DefaultMaxIDBytes      = 200
	DefaultMaxKindBytes    = 64
	DefaultMaxMessageBytes = 4096
)

// batchBytes is how many bytes of messages one receive of outcomes, or
// one take of jobs, moves at most (see lua/move.lua): those of 8 messages at
// the size limit. A crowd of large messages then costs a consumer or a
// worker no more memory than that, however many messages it may take at
// once.
func (l Limits) batchBytes() int { return 8 * l.MaxBytes }

// pageBytes is how many bytes of entries one page of dead letters reads at
// most: those of 2 messages at the size limit, so that a page, which is
// hashed, decoded and encoded again for a reader, costs a request little.
func (l Limits) pageBytes() int { return 2 * l.MaxBytes }

// keepBytes is the longest message a dead-letter entry keeps whole, so
// that it can be requeued: an eighth of MaxBytes (128 KiB by default, more
// than any job at the default payload limit), and at least
// MaxMessageBytes. A longer one keeps only its first MaxMessageBytes. The
// dead-letter list, bounded in entries, then holds at most about that
// many times keepBytes, whatever the messages workers send.
func (l Limits) keepBytes() int { return max(l.MaxBytes/8, l.MaxMessageBytes) }

// minMessageBytes is the least MaxMessageBytes: the marker and some text.
const minMessageBytes = 64

// TruncatedMarker ends a message that was cut to its limit.
const TruncatedMarker = "… [truncated]"

// DefaultLimits returns the default limits: messages of 1 MiB, ids of 200
// bytes, kinds of 64 bytes, message texts of 4 KiB.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:        DefaultMaxBytes,
		MaxIDBytes:      DefaultMaxIDBytes,
		MaxKindBytes:    DefaultMaxKindBytes,
		MaxMessageBytes: DefaultMaxMessageBytes,
	}
}

// orDefault returns l with its zero fields set to their defaults, or an
// error naming a field out of range.
func (l Limits) orDefault() (Limits, error) {
	d := DefaultLimits()
	for _, f := range []struct {
		name string
		v    *int
		def  int
		min  int
	}{
		{"MaxBytes", &l.MaxBytes, d.MaxBytes, 1024},
		{"MaxIDBytes", &l.MaxIDBytes, d.MaxIDBytes, 1},
		{"MaxKindBytes", &l.MaxKindBytes, d.MaxKindBytes, 1},
		{"MaxMessageBytes", &l.MaxMessageBytes, d.MaxMessageBytes, minMessageBytes},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < f.min {
			return l, fmt.Errorf("queue: limits.%s: must be >= %d, got %d", f.name, f.min, *f.v)
		}
	}
	return l, nil
}

// truncateText cuts s to at most max bytes, on a character boundary, ending
// it with TruncatedMarker. A string that fits is returned as it is.
func truncateText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(TruncatedMarker)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + TruncatedMarker
}
