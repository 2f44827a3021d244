package postgres_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/refresh/storetest"
)

// The store works in every exec mode a connection string may choose
// (default_query_exec_mode), the default (exec, TestStore) included: its
// own argument types are also sent in text form, which the modes that do
// not ask the server for argument types (exec, simple_protocol) need.
func TestStoreExecModes(t *testing.T) {
	t.Parallel()
	url := os.Getenv("DATABASE_URL")
	for _, mode := range []string{"simple_protocol", "cache_describe", "describe_exec", "cache_statement"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) refresh.Store {
				return setupURL(t, postgres.WithExecMode(url, mode), postgres.DefaultSession()).store
			})
		})
	}
}

// pgx's per-connection caches of statements and of their descriptions are
// made only in the modes that use them.
func TestParseConfigCaches(t *testing.T) {
	t.Parallel()
	for mode, cached := range map[string]bool{"": false, "exec": false, "simple_protocol": false,
		"cache_describe": true, "cache_statement": true} {
		url := "postgres://u@localhost/db"
		if mode != "" {
			url = postgres.WithExecMode(url, mode)
		}
		cfg, err := postgres.ParseConfig(url, postgres.Session{})
		require.NoError(t, err, mode)
		c := cfg.ConnConfig
		require.Equal(t, cached, c.StatementCacheCapacity > 0 && c.DescriptionCacheCapacity > 0, mode)
		require.Equal(t, cached, c.StatementCacheCapacity > 0 || c.DescriptionCacheCapacity > 0, mode)
	}
}
