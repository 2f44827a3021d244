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
	"time"
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
	// theirs); the id is checked too.
	s := "UPDATE models AS m SET " + strings.Join(sets, ", ") + " FROM " + unnest +
		" WHERE m.ctid = u.tid AND m.id = u.id"
	updateStatements.Store(mask, s)
	return s
}

// insertModels inserts models, leaving those whose id exists, from the
// arrays of an updateArrays of allColumns (args without the tids): the
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

// array is a parameter of one dimension whose elements pgx encodes
// through pointers to them: a slice of pgtype values would have each
// element copied into an interface, by reflection.
type array[T any] []T

func (a array[T]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

func (a array[T]) Index(i int) any { return &a[i] }

func (a array[T]) IndexType() any { return new(T) }

// updateArrays holds the columns of mask of a batch of models, column by
// column, the shape that updateStatement reads (and insertModels, with
// allColumns).
type updateArrays struct {
	mask                                           uint32
	tid                                            array[pgtype.TID]
	id, queue                                      array[pgtype.Text]
	payload, policy                                array[pgtype.Text]
	createdAt                                      array[pgtype.Timestamptz]
	refreshAt, deadlineAt, startedAt, failingSince array[pgtype.Timestamptz]
	lastSuccessAt, lastErrorAt, disabledAt         array[pgtype.Timestamptz]
	attemptNo, consecutiveFailures                 []int32
	attemptUID, lastErrorKind, lastErrorMessage    array[pgtype.Text]
	disabledReason, statusMessage                  array[pgtype.Text]
	paused                                         []bool
	upstreams, upstreamsMode, debounceCause        array[pgtype.Text]
	lastChangedAt, debounceAt, debounceSince       array[pgtype.Timestamptz]
	overdueSince, overdueAt, snoozedSince          array[pgtype.Timestamptz]
	waitingForSlot, offSchedule, waitTooLong       []bool
	waitingLimit, waitingTenant, rateKey           array[pgtype.Text]
	waitingUntil                                   array[pgtype.Timestamptz]
}

func newUpdateArrays(mask uint32, n int) *updateArrays {
	a := &updateArrays{mask: mask, id: make(array[pgtype.Text], 0, n)}
	has := func(c column) bool { return mask&(1<<c) != 0 }
	texts := func(c column) array[pgtype.Text] {
		if has(c) {
			return make(array[pgtype.Text], 0, n)
		}
		return nil
	}
	times := func(c column) array[pgtype.Timestamptz] {
		if has(c) {
			return make(array[pgtype.Timestamptz], 0, n)
		}
		return nil
	}
	a.queue, a.payload, a.policy = texts(colQueue), texts(colPayload), texts(colPolicy)
	a.createdAt = times(colCreatedAt)
	a.refreshAt, a.deadlineAt, a.startedAt = times(colRefreshAt), times(colDeadlineAt), times(colStartedAt)
	a.failingSince, a.lastSuccessAt, a.disabledAt = times(colFailingSince), times(colLastSuccessAt), times(colDisabledAt)
	if has(colAttemptNo) {
		a.attemptNo = make([]int32, 0, n)
	}
	if has(colConsecutiveFailures) {
		a.consecutiveFailures = make([]int32, 0, n)
	}
	a.attemptUID, a.disabledReason, a.statusMessage = texts(colAttemptUID), texts(colDisabledReason), texts(colStatusMessage)
	a.lastErrorKind, a.lastErrorMessage, a.lastErrorAt = texts(colLastError), texts(colLastError), times(colLastError)
	if has(colPaused) {
		a.paused = make([]bool, 0, n)
	}
	a.upstreams, a.upstreamsMode = texts(colUpstreams), texts(colUpstreamsMode)
	a.lastChangedAt, a.overdueSince, a.overdueAt, a.snoozedSince = times(colLastChangedAt), times(colOverdueSince), times(colOverdueAt), times(colSnoozedSince)
	a.debounceAt, a.debounceSince, a.debounceCause = times(colDebounce), times(colDebounce), texts(colDebounce)
	if has(colWaitingForSlot) {
		a.waitingForSlot, a.waitingLimit = make([]bool, 0, n), texts(colWaitingForSlot)
		a.waitingUntil, a.waitingTenant = times(colWaitingForSlot), texts(colWaitingForSlot)
		a.waitTooLong = make([]bool, 0, n)
	}
	a.rateKey = texts(colRateKey)
	if has(colOffSchedule) {
		a.offSchedule = make([]bool, 0, n)
	}
	return a
}

// text is s, NULL if empty; textNotNull is s.
func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

func textNotNull(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }

func timestamptz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// add appends m's columns of the mask.
func (a *updateArrays) add(m *refresh.Model) error {
	has := func(c column) bool { return a.mask&(1<<c) != 0 }
	a.id = append(a.id, textNotNull(m.ID))
	if has(colQueue) {
		a.queue = append(a.queue, textNotNull(m.Queue))
	}
	if has(colPayload) {
		a.payload = append(a.payload, pgtype.Text{String: string(m.Payload), Valid: len(m.Payload) > 0})
	}
	if has(colPolicy) {
		b, err := json.Marshal(m.Policy)
		if err != nil {
			return fmt.Errorf("model %q: encode policy: %w", m.ID, err)
		}
		a.policy = append(a.policy, textNotNull(string(b)))
	}
	if has(colCreatedAt) {
		a.createdAt = append(a.createdAt, pgtype.Timestamptz{Time: m.CreatedAt, Valid: true})
	}
	if has(colRefreshAt) {
		a.refreshAt = append(a.refreshAt, timestamptz(m.RefreshAt))
	}
	if has(colDeadlineAt) {
		a.deadlineAt = append(a.deadlineAt, timestamptz(m.DeadlineAt))
	}
	if has(colAttemptNo) {
		a.attemptNo = append(a.attemptNo, int32(m.AttemptNo))
	}
	if has(colAttemptUID) {
		a.attemptUID = append(a.attemptUID, text(m.AttemptUID))
	}
	if has(colStartedAt) {
		a.startedAt = append(a.startedAt, timestamptz(m.StartedAt))
	}
	if has(colConsecutiveFailures) {
		a.consecutiveFailures = append(a.consecutiveFailures, int32(m.ConsecutiveFailures))
	}
	if has(colFailingSince) {
		a.failingSince = append(a.failingSince, timestamptz(m.FailingSince))
	}
	if has(colLastSuccessAt) {
		a.lastSuccessAt = append(a.lastSuccessAt, timestamptz(m.LastSuccessAt))
	}
	if has(colLastError) {
		var kind, message pgtype.Text
		var at pgtype.Timestamptz
		if e := m.LastError; e != nil {
			kind, message, at = textNotNull(e.Kind), textNotNull(e.Message), timestamptz(e.At)
		}
		a.lastErrorKind = append(a.lastErrorKind, kind)
		a.lastErrorMessage = append(a.lastErrorMessage, message)
		a.lastErrorAt = append(a.lastErrorAt, at)
	}
	if has(colDisabledAt) {
		a.disabledAt = append(a.disabledAt, timestamptz(m.DisabledAt))
	}
	if has(colDisabledReason) {
		a.disabledReason = append(a.disabledReason, text(m.DisabledReason))
	}
	if has(colPaused) {
		a.paused = append(a.paused, m.Paused)
	}
	if has(colStatusMessage) {
		a.statusMessage = append(a.statusMessage, text(m.StatusMessage))
	}
	if has(colUpstreams) {
		a.upstreams = append(a.upstreams, upstreamsText(m.Upstreams))
	}
	if has(colUpstreamsMode) {
		a.upstreamsMode = append(a.upstreamsMode, text(m.UpstreamsMode))
	}
	if has(colLastChangedAt) {
		a.lastChangedAt = append(a.lastChangedAt, timestamptz(m.LastChangedAt))
	}
	if has(colDebounce) {
		a.debounceAt = append(a.debounceAt, timestamptz(m.DebounceAt))
		a.debounceSince = append(a.debounceSince, timestamptz(m.DebounceSince))
		a.debounceCause = append(a.debounceCause, text(m.DebounceCause))
	}
	if has(colOverdueSince) {
		a.overdueSince = append(a.overdueSince, timestamptz(m.OverdueSince))
	}
	if has(colOverdueAt) {
		a.overdueAt = append(a.overdueAt, timestamptz(overdueAt(m)))
	}
	if has(colSnoozedSince) {
		a.snoozedSince = append(a.snoozedSince, timestamptz(m.SnoozedSince))
	}
	if has(colWaitingForSlot) {
		w := waitOf(m)
		a.waitingForSlot = append(a.waitingForSlot, w.waiting)
		a.waitingLimit = append(a.waitingLimit, text(w.limit))
		a.waitingUntil = append(a.waitingUntil, timestamptz(w.until))
		a.waitingTenant = append(a.waitingTenant, textNotNull(w.tenant))
		a.waitTooLong = append(a.waitTooLong, w.tooLong)
	}
	if has(colOffSchedule) {
		a.offSchedule = append(a.offSchedule, m.OffSchedule)
	}
	if has(colRateKey) {
		a.rateKey = append(a.rateKey, text(m.RateKey))
	}
	return nil
}

// args returns the arrays in the order of updateStatement's parameters.
func (a *updateArrays) args() []any {
	out := []any{a.tid, a.id}
	for c := range numColumns {
		if a.mask&(1<<c) == 0 {
			continue
		}
		switch c {
		case colQueue:
			out = append(out, a.queue)
		case colPayload:
			out = append(out, a.payload)
		case colPolicy:
			out = append(out, a.policy)
		case colCreatedAt:
			out = append(out, a.createdAt)
		case colRefreshAt:
			out = append(out, a.refreshAt)
		case colDeadlineAt:
			out = append(out, a.deadlineAt)
		case colAttemptNo:
			out = append(out, a.attemptNo)
		case colAttemptUID:
			out = append(out, a.attemptUID)
		case colStartedAt:
			out = append(out, a.startedAt)
		case colConsecutiveFailures:
			out = append(out, a.consecutiveFailures)
		case colFailingSince:
			out = append(out, a.failingSince)
		case colLastSuccessAt:
			out = append(out, a.lastSuccessAt)
		case colLastError:
			out = append(out, a.lastErrorKind, a.lastErrorMessage, a.lastErrorAt)
		case colDisabledAt:
			out = append(out, a.disabledAt)
		case colDisabledReason:
			out = append(out, a.disabledReason)
		case colPaused:
			out = append(out, a.paused)
		case colStatusMessage:
			out = append(out, a.statusMessage)
		case colUpstreams:
			out = append(out, a.upstreams)
		case colUpstreamsMode:
			out = append(out, a.upstreamsMode)
		case colLastChangedAt:
			out = append(out, a.lastChangedAt)
		case colDebounce:
			out = append(out, a.debounceAt, a.debounceSince, a.debounceCause)
		case colOverdueSince:
			out = append(out, a.overdueSince)
		case colOverdueAt:
			out = append(out, a.overdueAt)
		case colSnoozedSince:
			out = append(out, a.snoozedSince)
		case colWaitingForSlot:
			out = append(out, a.waitingForSlot, a.waitingLimit, a.waitingUntil, a.waitingTenant, a.waitTooLong)
		case colOffSchedule:
			out = append(out, a.offSchedule)
		case colRateKey:
			out = append(out, a.rateKey)
		}
	}
	return out
}
