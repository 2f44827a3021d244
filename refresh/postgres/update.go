package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/freshen-dev/freshen/refresh"
)

// An update writes only the columns that the batch changes: a start changes
// five of them, an outcome six to nine, out of thirty. Sending fewer
// arrays costs less to encode here and to read in the database, and most
// writes never send the policy or the payload.

// column is a column (or, for the last error, a group of columns) of models
// that an update may set.
type column uint

const (
	colQueue column = iota
	colPayload
	colPolicy
	colCreatedAt
	colRefreshAt
	colDeadlineAt
	colAttemptNo
	colAttemptUID
	colStartedAt
	colConsecutiveFailures
	colFailingSince
	colLastSuccessAt
	colLastError // last_error_kind, last_error_message, last_error_at
	colDisabledAt
	colDisabledReason
	colPaused
	colStatusMessage
	colUpstreams
	colUpstreamsMode
	colLastChangedAt
	colDebounce // debounce_at, debounce_since, debounce_cause
	colOverdueSince
	colOverdueAt
	colSnoozedSince
	colWaitingForSlot // waiting_for_slot, waiting_limit, waiting_until, waiting_tenant, wait_too_long
	colOffSchedule
	colRateKey
	numColumns
)

// columnSQL gives, for each column, the types and names of the arrays it
// adds to the unnest, and what it sets.
var columnSQL = [numColumns]struct {
	types, names, set []string
}{
	colQueue:               {[]string{"text[]"}, []string{"queue"}, []string{"queue = u.queue"}},
	colPayload:             {[]string{"text[]"}, []string{"payload"}, []string{"payload = u.payload::json"}},
	colPolicy:              {[]string{"text[]"}, []string{"policy"}, []string{"policy_id = freshen_policy_id(u.policy::jsonb)"}},
	colCreatedAt:           {[]string{"timestamptz[]"}, []string{"created_at"}, []string{"created_at = u.created_at"}},
	colRefreshAt:           {[]string{"timestamptz[]"}, []string{"refresh_at"}, []string{"refresh_at = u.refresh_at"}},
	colDeadlineAt:          {[]string{"timestamptz[]"}, []string{"deadline_at"}, []string{"deadline_at = u.deadline_at"}},
	colAttemptNo:           {[]string{"int[]"}, []string{"attempt_no"}, []string{"attempt_no = u.attempt_no"}},
	colAttemptUID:          {[]string{"text[]"}, []string{"attempt_uid"}, []string{"attempt_uid = u.attempt_uid"}},
	colStartedAt:           {[]string{"timestamptz[]"}, []string{"started_at"}, []string{"started_at = u.started_at"}},
	colConsecutiveFailures: {[]string{"int[]"}, []string{"consecutive_failures"}, []string{"consecutive_failures = u.consecutive_failures"}},
	colFailingSince:        {[]string{"timestamptz[]"}, []string{"failing_since"}, []string{"failing_since = u.failing_since"}},
	colLastSuccessAt:       {[]string{"timestamptz[]"}, []string{"last_success_at"}, []string{"last_success_at = u.last_success_at"}},
	colLastError: {[]string{"text[]", "text[]", "timestamptz[]"}, []string{"last_error_kind", "last_error_message", "last_error_at"},
		[]string{"last_error_kind = u.last_error_kind", "last_error_message = u.last_error_message", "last_error_at = u.last_error_at"}},
	colDisabledAt:     {[]string{"timestamptz[]"}, []string{"disabled_at"}, []string{"disabled_at = u.disabled_at"}},
	colDisabledReason: {[]string{"text[]"}, []string{"disabled_reason"}, []string{"disabled_reason = u.disabled_reason"}},
	colPaused:         {[]string{"bool[]"}, []string{"paused"}, []string{"paused = u.paused"}},
	colStatusMessage:  {[]string{"text[]"}, []string{"status_message"}, []string{"status_message = u.status_message"}},
	colUpstreams:      {[]string{"text[]"}, []string{"upstreams"}, []string{"upstreams = " + upstreamsSQL}},
	colUpstreamsMode:  {[]string{"text[]"}, []string{"upstreams_mode"}, []string{"upstreams_mode = u.upstreams_mode"}},
	colLastChangedAt:  {[]string{"timestamptz[]"}, []string{"last_changed_at"}, []string{"last_changed_at = u.last_changed_at"}},
	colDebounce: {[]string{"timestamptz[]", "timestamptz[]", "text[]"}, []string{"debounce_at", "debounce_since", "debounce_cause"},
		[]string{"debounce_at = u.debounce_at", "debounce_since = u.debounce_since", "debounce_cause = u.debounce_cause"}},
	colOverdueSince: {[]string{"timestamptz[]"}, []string{"overdue_since"}, []string{"overdue_since = u.overdue_since"}},
	colOverdueAt:    {[]string{"timestamptz[]"}, []string{"overdue_at"}, []string{"overdue_at = u.overdue_at"}},
	colSnoozedSince: {[]string{"timestamptz[]"}, []string{"snoozed_since"}, []string{"snoozed_since = u.snoozed_since"}},
	colWaitingForSlot: {[]string{"bool[]", "text[]", "timestamptz[]", "text[]", "bool[]"},
		[]string{"waiting_for_slot", "waiting_limit", "waiting_until", "waiting_tenant", "wait_too_long"},
		[]string{"waiting_for_slot = u.waiting_for_slot", "waiting_limit = u.waiting_limit",
			"waiting_until = u.waiting_until", "waiting_tenant = u.waiting_tenant", "wait_too_long = u.wait_too_long"}},
	colOffSchedule: {[]string{"bool[]"}, []string{"off_schedule"}, []string{"off_schedule = u.off_schedule"}},
	colRateKey:     {[]string{"text[]"}, []string{"rate_key"}, []string{"rate_key = u.rate_key"}},
}

// allColumns is the mask of every column: an insert writes them all.
const allColumns = uint32(1)<<numColumns - 1

// unnestOf returns the unnest of the columns of mask, after the
// parameters args named names (the arrays of updateArrays.args, in their
// order), and what each of those columns is set to ("column = value").
func unnestOf(mask uint32, args, names []string) (unnest string, sets []string) {
	for c := range numColumns {
		if mask&(1<<c) == 0 {
			continue
		}
		sql := columnSQL[c]
		for i, typ := range sql.types {
			args = append(args, "$"+strconv.Itoa(len(args)+1)+"::"+typ)
			names = append(names, sql.names[i])
		}
		sets = append(sets, sql.set...)
	}
	return "unnest(" + strings.Join(args, ", ") + ") AS u(" + strings.Join(names, ", ") + ")", sets
}

// updateStatements caches the statement of each set of columns.
var updateStatements sync.Map // uint32 -> string

// updateStatement returns the UPDATE that sets the columns of mask (and
// updated_at) of the rows held by the transaction, from the arrays of
// updateArrays.args.
func updateStatement(mask uint32) string {
	if s, ok := updateStatements.Load(mask); ok {
		return s.(string)
	}
	unnest, sets := unnestOf(mask, []string{"$1::tid[]", "$2::text[]"}, []string{"tid", "id"})
	sets = append(sets, "updated_at = now()")
	// The rows are found by ctid (the transaction holds them, so it is
	// theirs); the id is checked too. One scan of the whole array of
	// ctids, joined to the rows of the unnest, rather than one scan per
	// ctid: PostgreSQL reads the size of the table at each of those
	// (a system call per row).
	s := "UPDATE models AS m SET " + strings.Join(sets, ", ") + " FROM " + unnest +
		" WHERE m.ctid = ANY($1::tid[]) AND m.ctid = u.tid AND m.id = u.id"
	updateStatements.Store(mask, s)
	return s
}

// insertModels inserts models, leaving those whose id exists, from the
// arrays of an updateArrays of allColumns (made without ctids): the
// columns an update may set are every column of models.
var insertModels = func() string {
	unnest, sets := unnestOf(allColumns, []string{"$1::text[]"}, []string{"id"})
	cols, values := []string{"id"}, []string{"u.id"}
	for _, set := range sets {
		col, value, _ := strings.Cut(set, " = ")
		cols, values = append(cols, col), append(values, value)
	}
	return "INSERT INTO models (" + strings.Join(cols, ", ") + ", updated_at) SELECT " +
		strings.Join(values, ", ") + ", now() FROM " + unnest + " ON CONFLICT (id) DO NOTHING"
}()

// samePolicy reports whether policies a and b are equal. Every transition
// but an edit leaves the policy it read: a copy, equal bit for bit, which
// is checked first, with one comparison of memory rather than a walk by
// reflection; other pairs are compared in depth.
func samePolicy(a, b *refresh.Policy) bool {
	n := unsafe.Sizeof(*a)
	if bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), n), unsafe.Slice((*byte)(unsafe.Pointer(b)), n)) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// changedColumns returns the mask of the columns that differ between the
// stored model old and m.
func changedColumns(old, m *refresh.Model) uint32 {
	changed := [numColumns]bool{
		colQueue:               old.Queue != m.Queue,
		colPayload:             !bytes.Equal(old.Payload, m.Payload),
		colPolicy:              !samePolicy(&old.Policy, &m.Policy),
		colCreatedAt:           !old.CreatedAt.Equal(m.CreatedAt),
		colRefreshAt:           !old.RefreshAt.Equal(m.RefreshAt),
		colDeadlineAt:          !old.DeadlineAt.Equal(m.DeadlineAt),
		colAttemptNo:           old.AttemptNo != m.AttemptNo,
		colAttemptUID:          old.AttemptUID != m.AttemptUID,
		colStartedAt:           !old.StartedAt.Equal(m.StartedAt),
		colConsecutiveFailures: old.ConsecutiveFailures != m.ConsecutiveFailures,
		colFailingSince:        !old.FailingSince.Equal(m.FailingSince),
		colLastSuccessAt:       !old.LastSuccessAt.Equal(m.LastSuccessAt),
		colLastError:           !sameLastError(old.LastError, m.LastError),
		colDisabledAt:          !old.DisabledAt.Equal(m.DisabledAt),
		colDisabledReason:      old.DisabledReason != m.DisabledReason,
		colPaused:              old.Paused != m.Paused,
		colStatusMessage:       old.StatusMessage != m.StatusMessage,
		colUpstreams:           !slices.Equal(old.Upstreams, m.Upstreams),
		colUpstreamsMode:       old.UpstreamsMode != m.UpstreamsMode,
		colLastChangedAt:       !old.LastChangedAt.Equal(m.LastChangedAt),
		colDebounce:            !old.DebounceAt.Equal(m.DebounceAt) || !old.DebounceSince.Equal(m.DebounceSince) || old.DebounceCause != m.DebounceCause,
		colOverdueSince:        !old.OverdueSince.Equal(m.OverdueSince),
		colSnoozedSince:        !old.SnoozedSince.Equal(m.SnoozedSince),
		colWaitingForSlot:      !waitOf(old).equal(waitOf(m)),
		colOffSchedule:         old.OffSchedule != m.OffSchedule,
		colRateKey:             old.RateKey != m.RateKey,
	}
	// overdue_at follows the policy's max_age, last_success_at, created_at
	// and overdue_since: it is compared only when one of them changed (a
	// row written by this version holds what overdueAt computes).
	if (changed[colPolicy] && old.Policy.MaxAge != m.Policy.MaxAge) || changed[colLastSuccessAt] || changed[colCreatedAt] || changed[colOverdueSince] {
		changed[colOverdueAt] = !overdueAt(old).Equal(overdueAt(m))
	}
	var mask uint32
	for c, ch := range changed {
		if ch {
			mask |= 1 << c
		}
	}
	return mask
}

func sameLastError(a, b *refresh.LastError) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Message == b.Message && a.At.Equal(b.At)
}

// updateArrays holds the columns of mask of a batch of models, column by
// column, the shape that updateStatement reads (and insertModels, with
// allColumns): each column's array in its text form.
type updateArrays struct {
	mask uint32
	// tid holds the rows' ctids (updates only).
	tid, id                                        *arrayText
	queue, payload, policy                         *arrayText
	createdAt                                      *arrayText
	refreshAt, deadlineAt, startedAt, failingSince *arrayText
	lastSuccessAt, lastErrorAt, disabledAt         *arrayText
	attemptNo, consecutiveFailures                 *arrayText
	attemptUID, lastErrorKind, lastErrorMessage    *arrayText
	disabledReason, statusMessage                  *arrayText
	paused                                         *arrayText
	upstreams, upstreamsMode, debounceCause        *arrayText
	lastChangedAt, debounceAt, debounceSince       *arrayText
	overdueSince, overdueAt, snoozedSince          *arrayText
	waitingForSlot, offSchedule, waitTooLong       *arrayText
	waitingLimit, waitingTenant, rateKey           *arrayText
	waitingUntil                                   *arrayText
}

// The sizes an element of each kind of column takes, about, in its text.
const (
	idSize   = 24
	timeSize = 30
	intSize  = 4
	boolSize = 1
	tidSize  = 12
)

// newUpdateArrays returns the arrays of the columns of mask for n models,
// with their ctids if withTID (an update's).
func newUpdateArrays(mask uint32, n int, withTID bool) *updateArrays {
	a := &updateArrays{mask: mask, id: newArrayText(n, idSize)}
	if withTID {
		a.tid = newArrayText(n, tidSize)
	}
	col := func(c column, size int) *arrayText {
		if mask&(1<<c) != 0 {
			return newArrayText(n, size)
		}
		return nil
	}
	a.queue, a.payload, a.policy = col(colQueue, idSize), col(colPayload, 0), col(colPolicy, 0)
	a.createdAt = col(colCreatedAt, timeSize)
	a.refreshAt, a.deadlineAt, a.startedAt = col(colRefreshAt, timeSize), col(colDeadlineAt, timeSize), col(colStartedAt, timeSize)
	a.failingSince, a.lastSuccessAt, a.disabledAt = col(colFailingSince, timeSize), col(colLastSuccessAt, timeSize), col(colDisabledAt, timeSize)
	a.attemptNo, a.consecutiveFailures = col(colAttemptNo, intSize), col(colConsecutiveFailures, intSize)
	a.attemptUID, a.disabledReason, a.statusMessage = col(colAttemptUID, idSize), col(colDisabledReason, 0), col(colStatusMessage, 0)
	a.lastErrorKind, a.lastErrorMessage, a.lastErrorAt = col(colLastError, idSize), col(colLastError, 0), col(colLastError, timeSize)
	a.paused = col(colPaused, boolSize)
	a.upstreams, a.upstreamsMode = col(colUpstreams, 0), col(colUpstreamsMode, 0)
	a.lastChangedAt, a.overdueSince = col(colLastChangedAt, timeSize), col(colOverdueSince, timeSize)
	a.overdueAt, a.snoozedSince = col(colOverdueAt, timeSize), col(colSnoozedSince, timeSize)
	a.debounceAt, a.debounceSince, a.debounceCause = col(colDebounce, timeSize), col(colDebounce, timeSize), col(colDebounce, 0)
	a.waitingForSlot, a.waitingLimit = col(colWaitingForSlot, boolSize), col(colWaitingForSlot, 0)
	a.waitingUntil, a.waitingTenant = col(colWaitingForSlot, timeSize), col(colWaitingForSlot, 0)
	a.waitTooLong = col(colWaitingForSlot, boolSize)
	a.offSchedule, a.rateKey = col(colOffSchedule, boolSize), col(colRateKey, 0)
	return a
}

// count returns the number of models added.
func (a *updateArrays) count() int { return a.id.count() }

// add appends m's columns of the mask, and tid, its row's ctid, to an
// update's arrays.
func (a *updateArrays) add(m *refresh.Model, tid pgtype.TID) error {
	has := func(c column) bool { return a.mask&(1<<c) != 0 }
	if a.tid != nil {
		a.tid.tid(tid)
	}
	a.id.text(m.ID)
	if has(colQueue) {
		a.queue.text(m.Queue)
	}
	if has(colPayload) {
		if len(m.Payload) > 0 {
			a.payload.text(string(m.Payload))
		} else {
			a.payload.null()
		}
	}
	if has(colPolicy) {
		b, err := json.Marshal(m.Policy)
		if err != nil {
			return fmt.Errorf("model %q: encode policy: %w", m.ID, err)
		}
		a.policy.text(string(b))
	}
	if has(colCreatedAt) {
		a.createdAt.timeNotNull(m.CreatedAt)
	}
	if has(colRefreshAt) {
		a.refreshAt.time(m.RefreshAt)
	}
	if has(colDeadlineAt) {
		a.deadlineAt.time(m.DeadlineAt)
	}
	if has(colAttemptNo) {
		a.attemptNo.int(int64(int32(m.AttemptNo)))
	}
	if has(colAttemptUID) {
		a.attemptUID.textOrNull(m.AttemptUID)
	}
	if has(colStartedAt) {
		a.startedAt.time(m.StartedAt)
	}
	if has(colConsecutiveFailures) {
		a.consecutiveFailures.int(int64(int32(m.ConsecutiveFailures)))
	}
	if has(colFailingSince) {
		a.failingSince.time(m.FailingSince)
	}
	if has(colLastSuccessAt) {
		a.lastSuccessAt.time(m.LastSuccessAt)
	}
	if has(colLastError) {
		if e := m.LastError; e != nil {
			a.lastErrorKind.text(e.Kind)
			a.lastErrorMessage.text(e.Message)
			a.lastErrorAt.time(e.At)
		} else {
			a.lastErrorKind.null()
			a.lastErrorMessage.null()
			a.lastErrorAt.null()
		}
	}
	if has(colDisabledAt) {
		a.disabledAt.time(m.DisabledAt)
	}
	if has(colDisabledReason) {
		a.disabledReason.textOrNull(m.DisabledReason)
	}
	if has(colPaused) {
		a.paused.bool(m.Paused)
	}
	if has(colStatusMessage) {
		a.statusMessage.textOrNull(m.StatusMessage)
	}
	if has(colUpstreams) {
		a.upstreams.textOrNull(strings.Join(m.Upstreams, " "))
	}
	if has(colUpstreamsMode) {
		a.upstreamsMode.textOrNull(m.UpstreamsMode)
	}
	if has(colLastChangedAt) {
		a.lastChangedAt.time(m.LastChangedAt)
	}
	if has(colDebounce) {
		a.debounceAt.time(m.DebounceAt)
		a.debounceSince.time(m.DebounceSince)
		a.debounceCause.textOrNull(m.DebounceCause)
	}
	if has(colOverdueSince) {
		a.overdueSince.time(m.OverdueSince)
	}
	if has(colOverdueAt) {
		a.overdueAt.time(overdueAt(m))
	}
	if has(colSnoozedSince) {
		a.snoozedSince.time(m.SnoozedSince)
	}
	if has(colWaitingForSlot) {
		w := waitOf(m)
		a.waitingForSlot.bool(w.waiting)
		a.waitingLimit.textOrNull(w.limit)
		a.waitingUntil.time(w.until)
		a.waitingTenant.text(w.tenant)
		a.waitTooLong.bool(w.tooLong)
	}
	if has(colOffSchedule) {
		a.offSchedule.bool(m.OffSchedule)
	}
	if has(colRateKey) {
		a.rateKey.textOrNull(m.RateKey)
	}
	return nil
}

// args ends the arrays and returns them in the order of updateStatement's
// parameters (of insertModels' without the ctids).
func (a *updateArrays) args() []any {
	var out []any
	if a.tid != nil {
		out = append(out, a.tid.value())
	}
	out = append(out, a.id.value())
	for c := range numColumns {
		if a.mask&(1<<c) == 0 {
			continue
		}
		switch c {
		case colQueue:
			out = append(out, a.queue.value())
		case colPayload:
			out = append(out, a.payload.value())
		case colPolicy:
			out = append(out, a.policy.value())
		case colCreatedAt:
			out = append(out, a.createdAt.value())
		case colRefreshAt:
			out = append(out, a.refreshAt.value())
		case colDeadlineAt:
			out = append(out, a.deadlineAt.value())
		case colAttemptNo:
			out = append(out, a.attemptNo.value())
		case colAttemptUID:
			out = append(out, a.attemptUID.value())
		case colStartedAt:
			out = append(out, a.startedAt.value())
		case colConsecutiveFailures:
			out = append(out, a.consecutiveFailures.value())
		case colFailingSince:
			out = append(out, a.failingSince.value())
		case colLastSuccessAt:
			out = append(out, a.lastSuccessAt.value())
		case colLastError:
			out = append(out, a.lastErrorKind.value(), a.lastErrorMessage.value(), a.lastErrorAt.value())
		case colDisabledAt:
			out = append(out, a.disabledAt.value())
		case colDisabledReason:
			out = append(out, a.disabledReason.value())
		case colPaused:
			out = append(out, a.paused.value())
		case colStatusMessage:
			out = append(out, a.statusMessage.value())
		case colUpstreams:
			out = append(out, a.upstreams.value())
		case colUpstreamsMode:
			out = append(out, a.upstreamsMode.value())
		case colLastChangedAt:
			out = append(out, a.lastChangedAt.value())
		case colDebounce:
			out = append(out, a.debounceAt.value(), a.debounceSince.value(), a.debounceCause.value())
		case colOverdueSince:
			out = append(out, a.overdueSince.value())
		case colOverdueAt:
			out = append(out, a.overdueAt.value())
		case colSnoozedSince:
			out = append(out, a.snoozedSince.value())
		case colWaitingForSlot:
			out = append(out, a.waitingForSlot.value(), a.waitingLimit.value(), a.waitingUntil.value(),
				a.waitingTenant.value(), a.waitTooLong.value())
		case colOffSchedule:
			out = append(out, a.offSchedule.value())
		case colRateKey:
			out = append(out, a.rateKey.value())
		}
	}
	return out
}
