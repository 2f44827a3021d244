package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the PostgreSQL notification channel on which Modify and
// ClaimDue announce, when they commit, that a model they wrote can become
// due earlier than before: it was created, its RefreshAt moved earlier, or
// it was resumed. They send two notifications: the schema the store writes
// to, so stores on different schemas of one database do not wake each
// other, and the schema followed by a space and the earliest due time they
// wrote, in microseconds since 1970, which lowers the claim floor of the
// stores that listen (see claimFloor).
const NotifyChannel = "freshen_due"

// SetListenURL makes Listen connect to url, with the settings of sess,
// rather than to the store's own database URL. LISTEN needs a session of
// its own for as long as it listens: give the URL of a direct connection
// (or of a pooler in session mode) when the store's URL is a pooler in
// transaction mode, through which notifications never arrive. Call it
// before use.
func (s *Store) SetListenURL(url string, sess Session) error {
	cfg, err := ParseConfig(url, sess)
	if err != nil {
		return err
	}
	s.listen = cfg.ConnConfig
	return nil
}

// Listening is a connection listening on NotifyChannel (see Listen).
type Listening struct {
	// Wake receives a value after a notification for the store's schema
	// arrives. Notifications that come while a value is already pending
	// are merged into it, so a receiver should look at the store again
	// (NextDue) rather than count them. It is closed, and the connection
	// with it, when Listen's ctx is done or the connection fails.
	Wake <-chan struct{}
	// Heard is closed when the notification that Listen sent itself, as
	// every other store does, through the store's pool, has arrived: the
	// notifications of the other instances reach this one. Through a
	// pooler in transaction mode it never is.
	Heard <-chan struct{}
}

// Listen opens a dedicated connection (not taken from the pool; to the
// URL of SetListenURL if set), listens on NotifyChannel, and sends itself a
// notification through the pool, which Heard reports.
//
// Notifications sent while nobody listens are lost: a caller that wants to
// go on listening calls Listen again, then looks at the store once.
func (s *Store) Listen(ctx context.Context) (*Listening, error) {
	cfg := s.listen
	if cfg == nil {
		cfg = s.pool.Config().ConnConfig
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, storeError("listen for due models", err)
	}
	var schema *string
	err = conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	if err == nil {
		_, err = conn.Exec(ctx, `LISTEN `+pgx.Identifier{NotifyChannel}.Sanitize())
	}
	mine := ""
	if schema != nil {
		mine = *schema
	}
	// Other stores ignore the probe: its payload is not a schema of theirs.
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	probe := mine + " probe " + hex.EncodeToString(token)
	if err == nil {
		_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, probe)
	}
	if err != nil {
		conn.Close(ctx)
		return nil, storeError("listen for due models", err)
	}
	// The notifications sent while nobody listened are lost: the next
	// claim scans from the start.
	s.floor.drop()
	wake, heard := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(wake)
		// Close also works on a done ctx: it then just drops the socket.
		defer conn.Close(ctx)
		probed := false
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if n.Channel != NotifyChannel {
				continue
			}
			if !probed && n.Payload == probe {
				probed = true
				close(heard)
				continue
			}
			if due, ok := parseDuePayload(n.Payload, mine); ok {
				s.floor.lower(due)
			} else if n.Payload != mine {
				continue
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	return &Listening{Wake: wake, Heard: heard}, nil
}
