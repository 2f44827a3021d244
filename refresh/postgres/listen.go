package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the PostgreSQL notification channel on which Modify and
// ClaimDue announce, when they commit, that a model they wrote can become
// due earlier than before: it was created, its RefreshAt moved earlier, or
// it was resumed. The payload is the schema the store writes to, so stores
// on different schemas of one database do not wake each other.
const NotifyChannel = "freshen_due"

// Listen opens a dedicated connection (not taken from the pool), listens
// on NotifyChannel, and returns a channel that receives a value after a
// notification for the store's schema arrives. Notifications that come
// while a value is already pending are merged into it, so a receiver should
// look at the store again (NextDue) rather than count them.
//
// The channel is closed, and the connection with it, when ctx is done or
// the connection fails. Notifications sent while nobody listens are lost:
// a caller that wants to go on listening calls Listen again, then looks at
// the store once.
func (s *Store) Listen(ctx context.Context) (<-chan struct{}, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, storeError("listen for due models", err)
	}
	var schema *string
	err = conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	if err == nil {
		_, err = conn.Exec(ctx, `LISTEN `+pgx.Identifier{NotifyChannel}.Sanitize())
	}
	if err != nil {
		conn.Close(ctx)
		return nil, storeError("listen for due models", err)
	}
	mine := ""
	if schema != nil {
		mine = *schema
	}
	wake := make(chan struct{}, 1)
	go func() {
		defer close(wake)
		// Close also works on a done ctx: it then just drops the socket.
		defer conn.Close(ctx)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if n.Channel != NotifyChannel || n.Payload != mine {
				continue
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return wake, nil
}
