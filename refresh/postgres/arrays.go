package postgres

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// arrayText builds an array parameter of one dimension in PostgreSQL's
// text form ({"a","b",NULL}), element by element, for the statements that
// send a batch column by column (`unnest($1::text[], ...)`). Its value is
// one string, sent as it is in every exec mode: the statement's cast gives
// its type. A batch's arrays are written straight into their text rather
// than kept as Go values that pgx would encode element by element, by
// reflection, into buffers it grows as it goes: the writes of a busy
// instance send a few hundred kilobytes of arrays each.
type arrayText struct {
	b strings.Builder
	n int
}

// newArrayText returns an arrayText with room for n elements of about
// size bytes each.
func newArrayText(n, size int) *arrayText {
	a := &arrayText{}
	a.b.Grow(2 + n*(size+1))
	return a
}

// next starts an element.
func (a *arrayText) next() {
	if a.n == 0 {
		a.b.WriteByte('{')
	} else {
		a.b.WriteByte(',')
	}
	a.n++
}

// null appends NULL.
func (a *arrayText) null() {
	a.next()
	a.b.WriteString("NULL")
}

// text appends s, quoted: quotes and backslashes escaped, as every
// element is quoted whatever it holds ("", "NULL", spaces, commas).
func (a *arrayText) text(s string) {
	a.next()
	a.b.WriteByte('"')
	for {
		i := strings.IndexAny(s, `"\`)
		if i < 0 {
			break
		}
		a.b.WriteString(s[:i])
		a.b.WriteByte('\\')
		a.b.WriteByte(s[i])
		s = s[i+1:]
	}
	a.b.WriteString(s)
	a.b.WriteByte('"')
}

// textOrNull appends s, or NULL if it is empty.
func (a *arrayText) textOrNull(s string) {
	if s == "" {
		a.null()
		return
	}
	a.text(s)
}

// timestamptzFormat is how a time is written: in UTC, to the microsecond
// (pgx's own text form, which a time read back from a column equals).
const timestamptzFormat = "2006-01-02 15:04:05.999999Z07:00"

// time appends t, or NULL if it is zero.
func (a *arrayText) time(t time.Time) {
	if t.IsZero() {
		a.null()
		return
	}
	a.timeNotNull(t)
}

// timeNotNull appends t, truncated to the microsecond, even the zero time.
// A year before 1 is written as a year BC, as PostgreSQL counts them (year
// 0 is 1 BC), with its month and day as they are.
func (a *arrayText) timeNotNull(t time.Time) {
	t = t.UTC().Truncate(time.Microsecond)
	a.next()
	var buf [48]byte
	b := append(buf[:0], '"')
	if year := t.Year(); year <= 0 {
		bc := strconv.Itoa(1 - year)
		b = append(b, "0000"[min(len(bc), 4):]...)
		b = append(b, bc...)
		b = t.AppendFormat(b, timestamptzFormat[len("2006"):])
		b = append(b, " BC"...)
	} else {
		b = t.AppendFormat(b, timestamptzFormat)
	}
	a.b.Write(append(b, '"'))
}

// int appends i.
func (a *arrayText) int(i int64) {
	a.next()
	var buf [20]byte
	a.b.Write(strconv.AppendInt(buf[:0], i, 10))
}

// bool appends v.
func (a *arrayText) bool(v bool) {
	a.next()
	if v {
		a.b.WriteByte('t')
	} else {
		a.b.WriteByte('f')
	}
}

// tid appends t, a row's ctid.
func (a *arrayText) tid(t pgtype.TID) {
	a.next()
	var buf [32]byte
	b := append(buf[:0], '"', '(')
	b = strconv.AppendUint(b, uint64(t.BlockNumber), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(t.OffsetNumber), 10)
	a.b.Write(append(b, ')', '"'))
}

// count returns the number of elements appended.
func (a *arrayText) count() int { return a.n }

// value ends the array and returns its text ({} for no element); nothing
// is appended after it.
func (a *arrayText) value() string {
	if a.n == 0 {
		return "{}"
	}
	a.b.WriteByte('}')
	return a.b.String()
}
