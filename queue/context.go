package queue

import (
	"context"
	"sync"
	"time"
)

// handlerContext is the context a handler runs in: cancelled, with a cause,
// when its attempt is revoked, when its deadline passes or when the handler
// has returned. The cancellable context it stands for is made only when the
// handler first looks at it (Done, Value, hence context.Cause); until then
// cancelling it only records the cause. A handler that never looks at its
// context, as many quick ones do not, costs no context of its own.
type handlerContext struct {
	parent context.Context
	mu     sync.Mutex
	ctx    context.Context // made by get
	cancel context.CancelCauseFunc
	cause  error // the cause given before ctx was made
}

// get returns the cancellable context, made (and cancelled, if c was)
// the first time.
func (c *handlerContext) get() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancelCause(c.parent)
		if c.cause != nil {
			c.cancel(c.cause)
		}
	}
	return c.ctx
}

func (c *handlerContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *handlerContext) Done() <-chan struct{} { return c.get().Done() }

func (c *handlerContext) Err() error {
	c.mu.Lock()
	ctx, cause := c.ctx, c.cause
	c.mu.Unlock()
	switch {
	case ctx != nil:
		return ctx.Err()
	case cause != nil:
		return context.Canceled
	}
	return c.parent.Err()
}

func (c *handlerContext) Value(key any) any { return c.get().Value(key) }

// cancelWith cancels c with cause (context.Canceled if nil), as the
// function of context.WithCancelCause does: the first cause stays.
func (c *handlerContext) cancelWith(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ctx != nil:
		c.cancel(cause)
	case c.cause == nil:
		c.cause = cause
	}
}
