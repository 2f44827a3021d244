package queue

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// cutProxy forwards TCP connections to a server; once cut is set, it
// closes the next connection whose reply starts to come back, and the
// reply is lost: the server ran the command, the client never hears of it.
type cutProxy struct {
	ln  net.Listener
	to  string
	cut atomic.Bool
	wg  sync.WaitGroup
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, to: to}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.wg.Go(func() {
			_, _ = io.Copy(s, c)
			_ = s.Close()
		})
		p.wg.Go(func() {
			defer c.Close()
			defer s.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && p.cut.CompareAndSwap(true, false) {
					return
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// TestReceiveLostReplyOnTheWire: the reply of a move is lost on the wire.
// The client must not run the script again on its own (that second run
// would find nothing, and the outcomes the first one moved would stay in
// the processing list unseen): the next Receive delivers them.
func TestReceiveLostReplyOnTheWire(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newCutProxy(t, mr.Addr())
	client, err := NewClient(ClientConfig{URL: "redis://" + p.ln.Addr().String()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	b := newBackend(client)
	ctx := context.Background()
	r := b.newRedis(t, "s1", refresh.NewVirtualClock(t0))
	got, err := r.Receive(ctx, 10, 0) // the script is loaded, the consumer registered
	require.NoError(t, err)
	require.Empty(t, got)
	o1 := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
	b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o1))

	p.cut.Store(true) // the move's reply
	got, err = r.Receive(ctx, 10, 0)
	require.Error(t, err, "the lost reply is an error, not an empty answer")
	require.Empty(t, got)
	require.Len(t, b.lrange(t, b.keys.processingKey("s1")), 1, "the move happened")
	got, err = r.Receive(ctx, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []refresh.Outcome{o1}, bare(t, got))
	require.NoError(t, r.Ack(ctx, nil))
	require.Empty(t, b.lrange(t, b.keys.processingKey("s1")))
}
