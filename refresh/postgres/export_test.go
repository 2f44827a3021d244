package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// WithExecMode returns url choosing the exec mode mode, as a deployment
// chooses it: default_query_exec_mode in the URL.
func WithExecMode(url, mode string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "default_query_exec_mode=" + mode
}

// StoreError is storeError, for the tests of the classification of errors
// that the store's own statements cannot provoke.
var StoreError = storeError

// CurrentSetting returns setting name as the store's statements see it:
// alone (Query) and inside a transaction of beginQuery.
func CurrentSetting(ctx context.Context, s *Store, name string) (alone, inTx string, err error) {
	if err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&alone); err != nil {
		return "", "", err
	}
	t, err := s.beginQuery(ctx, nil, func(rows pgx.Rows) error {
		inTx, err = pgx.CollectOneRow(rows, pgx.RowTo[string])
		return err
	}, "SELECT current_setting($1)", name)
	if err != nil {
		return "", "", err
	}
	defer t.rollback() // releases the connection after the commit
	return alone, inTx, t.commit(ctx)
}

// CachedPolicies returns how many policies s holds decoded.
func CachedPolicies(s *Store) int {
	s.policies.mu.Lock()
	defer s.policies.mu.Unlock()
	return len(s.policies.m)
}

// MaxCachedPolicies is maxCachedPolicies.
const MaxCachedPolicies = maxCachedPolicies

// Floor returns s's claim floor (zero: none).
func Floor(s *Store) time.Time { return s.floor.next() }

// StartClaim notes a claim of limit models under way in s at now, as
// ClaimDue does while it scans, until end is called.
func StartClaim(s *Store, now time.Time, limit int) (end func(), err error) {
	_, _, end, err = s.cursor.start(limit, func(k *claimKey, n int) (*claimKey, bool, error) {
		return s.rowPast(context.Background(), now, s.floor.next(), k, n)
	})
	return end, err
}
