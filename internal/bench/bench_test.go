package bench

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := Config{DatabaseURL: "postgres://db", RedisURL: "redis://r", Executable: "/bin/freshen"}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultBatchSize, c.BatchSize)
	require.Equal(t, "/bin/freshen", c.Executable)
	require.NotNil(t, c.Progress)

	c, err = Config{DatabaseURL: "postgres://db", RedisURL: "redis://r"}.withDefaults()
	require.NoError(t, err)
	require.NotEmpty(t, c.Executable, "this process's executable")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"no database", Config{RedisURL: "redis://r"}, "bench: DatabaseURL: must be set"},
		{"no redis", Config{DatabaseURL: "postgres://db"}, "bench: RedisURL: must be set"},
		{"negative batch", Config{DatabaseURL: "postgres://db", RedisURL: "redis://r", BatchSize: -1}, "bench: BatchSize: must be >= 1, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.cfg.withDefaults()
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestRunConfigDefaults(t *testing.T) {
	t.Parallel()
	tp, err := ThroughputConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, ThroughputConfig{Models: DefaultThroughputModels}, tp)

	lt, err := LatenessConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, LatenessConfig{Models: DefaultLatenessModels, Rate: DefaultLatenessRate, Window: DefaultLatenessWindow}, lt)

	e2e, err := E2EConfig{Models: 100_000}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, E2EConfig{Models: 100_000, Concurrency: DefaultWorkerConcurrency, Lead: 6 * time.Second, Timeout: DefaultE2ETimeout}, e2e)
}

func TestRunConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    func() error
		err  string
	}{
		{"throughput models", func() error { _, err := (ThroughputConfig{Models: -1}).withDefaults(); return err },
			"bench: throughput: Models: must be >= 1, got -1"},
		{"lateness rate", func() error { _, err := (LatenessConfig{Rate: -5}).withDefaults(); return err },
			"bench: lateness: Rate: must be >= 1, got -5"},
		{"lateness window", func() error { _, err := (LatenessConfig{Window: time.Millisecond}).withDefaults(); return err },
			"bench: lateness: Window: must be >= 1s, got 1ms"},
		{"e2e concurrency", func() error { _, err := (E2EConfig{Concurrency: -2}).withDefaults(); return err },
			"bench: e2e: Concurrency: must be >= 1, got -2"},
		{"e2e timeout", func() error { _, err := (E2EConfig{Timeout: -time.Second}).withDefaults(); return err },
			"bench: e2e: Timeout: must be > 0, got -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.EqualError(t, tc.f(), tc.err)
		})
	}
}

func TestSchemaURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"postgres://u@h:5432/db", "postgres://u@h:5432/db?search_path=s1"},
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?sslmode=disable&search_path=s1"},
		{"host=h dbname=db", "host=h dbname=db search_path=s1"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			cfg, err := pgxpool.ParseConfig(tc.url)
			require.NoError(t, err)
			cfg.ConnConfig.RuntimeParams["search_path"] = "s1"
			require.Equal(t, tc.want, schemaURL(cfg))
		})
	}
}

func TestDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"postgres://u@h:6432/freshen?sslmode=disable", "postgres://u@h:6432/run1?sslmode=disable"},
		{"postgres://u:secret@h/freshen", "postgres://u:secret@h/run1"},
		{"postgres://u@h", "postgres://u@h/run1"},
		{"host=h dbname=freshen", "host=h dbname=freshen dbname=run1"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			got, err := databaseURL(tc.url, "run1")
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			cfg, err := pgxpool.ParseConfig(got)
			require.NoError(t, err)
			require.Equal(t, "run1", cfg.ConnConfig.Database)
		})
	}
	_, err := databaseURL("postgres://u:secret@h:port/db", "run1")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

func TestRunWorkerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  WorkerConfig
		err  string
	}{
		{"no redis", WorkerConfig{Prefix: "p"}, "bench: worker: RedisURL: must be set"},
		{"no prefix", WorkerConfig{RedisURL: "redis://r"}, "bench: worker: Prefix: must be set"},
		{"negative concurrency", WorkerConfig{RedisURL: "redis://r", Prefix: "p", Concurrency: -1}, "bench: worker: Concurrency: must be >= 1, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.EqualError(t, RunWorker(t.Context(), tc.cfg, nil), tc.err)
		})
	}
}
