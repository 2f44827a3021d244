package queue

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

func TestHandlerContext(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	cause := errors.New("revoked: superseded")

	t.Run("cancelled before it is looked at", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		require.NoError(t, c.Err())
		c.cancelWith(cause)
		c.cancelWith(context.Canceled) // the first cause stays
		assert.Nil(t, c.ctx, "cancelling makes no context")
		assert.ErrorIs(t, c.Err(), context.Canceled)
		select {
		case <-c.Done():
		default:
			t.Fatal("Done is not closed")
		}
		assert.Equal(t, cause, context.Cause(c))
		assert.Equal(t, "v", c.Value(ctxKey{}))
	})

	t.Run("cancelled while watched", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		done := c.Done()
		fired := make(chan struct{})
		stop := context.AfterFunc(c, func() { close(fired) })
		defer stop()
		select {
		case <-done:
			t.Fatal("Done closed before the cancel")
		default:
		}
		require.NoError(t, c.Err())
		assert.NoError(t, context.Cause(c))
		c.cancelWith(context.DeadlineExceeded)
		<-done
		<-fired
		assert.ErrorIs(t, c.Err(), context.Canceled)
		assert.ErrorIs(t, context.Cause(c), context.DeadlineExceeded)
	})

	t.Run("nil cause", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		c.cancelWith(nil)
		assert.ErrorIs(t, context.Cause(c), context.Canceled)
	})

	t.Run("a child sees the cancel", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		child, cancel := context.WithCancel(c)
		defer cancel()
		c.cancelWith(cause)
		<-child.Done()
		assert.Equal(t, cause, context.Cause(child))
	})
}
