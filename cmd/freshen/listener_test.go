package main

import (
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeConn is a connection that only records that it was closed.
type fakeConn struct {
	net.Conn
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

// When every slot is held, the listener closes the connection idle the
// longest, never a busy one nor one idle for less time.
func TestLimitListenerClosesLongestIdle(t *testing.T) {
	t.Parallel()
	l := newLimitListener(nil, 3)
	a, b, c := &fakeConn{}, &fakeConn{}, &fakeConn{}
	for _, conn := range []*fakeConn{a, b, c} {
		l.track(conn, http.StateNew)
		l.track(conn, http.StateActive)
	}
	l.track(b, http.StateIdle) // b idle first
	l.track(a, http.StateIdle)
	// c stays busy.
	l.closeLongestWaiting()
	require.True(t, b.closed, "the one idle the longest")
	require.False(t, a.closed)
	require.False(t, c.closed, "a busy connection is never closed")

	// a takes a request and goes idle again: it is now the only idle one.
	l.track(a, http.StateActive)
	l.track(a, http.StateIdle)
	l.closeLongestWaiting()
	require.True(t, a.closed)
	l.closeLongestWaiting() // none idle: nothing to close
	require.False(t, c.closed)
}
