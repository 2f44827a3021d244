package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most n connections at a time. When n are open
// and a new client connects, the connection idle the longest between two
// keep-alive requests is closed to make room, so that idle connections
// cannot keep the server from answering; only while none is idle does the
// new client wait (and the ones after it in the kernel's backlog), at most
// until a request ends or a connection that sends nothing is cut by the
// server's ReadHeaderTimeout. A connection's state comes from the
// http.Server's ConnState hook (track).
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
	// idle is signalled when a connection becomes idle, so that a client
	// waiting for room can take its place.
	idle chan struct{}

	mu      sync.Mutex
	waiting map[net.Conn]time.Time // idle connections, since when
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}),
		idle: make(chan struct{}, 1), waiting: map[net.Conn]time.Time{}}
}

// Accept waits for a client, then for room for it: a free slot, or one
// freed by closing the connection idle the longest.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return l.admit(c), nil
		default:
		}
		l.closeLongestWaiting()
		select {
		case l.slots <- struct{}{}:
			return l.admit(c), nil
		case <-l.idle: // look again for one to close
		case <-l.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// admit wraps c, which holds a slot, so that closing it frees the slot.
func (l *limitListener) admit(c net.Conn) net.Conn {
	return &limitConn{Conn: c, release: func() { <-l.slots }}
}

// closeLongestWaiting closes the connection idle the longest, if any.
func (l *limitListener) closeLongestWaiting() {
	l.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range l.waiting {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.waiting, oldest)
	l.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

// track follows a connection's state; it is the http.Server's ConnState.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		l.waiting[c] = time.Now()
		select {
		case l.idle <- struct{}{}:
		default:
		}
	default: // new, active, hijacked, closed
		delete(l.waiting, c)
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when it is first closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
