package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/freshen-dev/freshen/refresh"
)

// storeError returns err, from the database while doing what, as the error
// a caller can act on:
//
//   - a passing condition (a lock or statement timeout, a serialization
//     failure or deadlock, a lost or refused connection, a server shutting
//     down or out of connections, the caller's deadline) becomes an
//     *refresh.Error with code EUNAVAILABLE: the same call may succeed
//     later;
//   - data the database refuses for its content (SQLSTATE class 22, e.g.
//     "invalid byte sequence for encoding \"UTF8\": 0x00", and class 54,
//     program limits such as an index row too large) becomes an
//     *refresh.Error with code EINVALID: retrying it cannot help;
//   - pgx.ErrNoRows is left for the caller to name the missing model
//     (ENOTFOUND), and so are errors that already carry a code;
//   - anything else is wrapped as it is, with what as context.
func storeError(what string, err error) error {
	if err == nil {
		return nil
	}
	var re *refresh.Error
	if errors.As(err, &re) || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch code := errorCode(err); code {
	case refresh.EUNAVAILABLE:
		return refresh.Errorf(code, "%s: database unavailable, try again: %v", what, err)
	case refresh.EINVALID:
		return refresh.Errorf(code, "%s: the database refused the data: %v", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errorCode returns the refresh error code of a database error: EUNAVAILABLE,
// EINVALID, or "" when neither applies.
func errorCode(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return sqlStateCode(pg.Code)
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connect),
		errors.Is(err, context.DeadlineExceeded),
		pgconn.Timeout(err),
		pgconn.SafeToRetry(err),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &netErr):
		return refresh.EUNAVAILABLE
	}
	// pgx reports a connection that broke mid-statement as a plain error
	// whose text names it.
	if msg := err.Error(); strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") {
		return refresh.EUNAVAILABLE
	}
	return ""
}

// sqlStateCode maps a SQLSTATE to a refresh error code, or "".
func sqlStateCode(state string) string {
	switch state {
	case "55P03", // lock_not_available (lock_timeout, NOWAIT)
		"57014", // query_canceled (statement_timeout)
		"25P03", // idle_in_transaction_session_timeout
		"57P05", // idle_session_timeout
		"57P01", // admin_shutdown (also pg_terminate_backend)
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now (starting up, recovering)
		"40001", // serialization_failure
		"40P01", // deadlock_detected
		"40003": // statement_completion_unknown
		return refresh.EUNAVAILABLE
	}
	switch state[:min(2, len(state))] {
	case "08", // connection exception
		"53": // insufficient resources (too many connections, out of memory, disk full)
		return refresh.EUNAVAILABLE
	case "22", // data exception: bad encoding, values out of range
		"54": // program limit exceeded: rows, arrays or index entries too large
		return refresh.EINVALID
	}
	return ""
}
