package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// runMigrate is `freshen migrate [--database-url URL]`: it brings the
// database schema up to the latest version and prints the version reached.
// Several instances may run it at once.
func runMigrate(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("database-url", "", "PostgreSQL URL (env FRESHEN_DATABASE_URL or DATABASE_URL)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: freshen migrate [--database-url URL]\n\nApplies the database migrations that are missing and prints the schema version reached.\nThe tables go to the first schema of the connection's search_path.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "freshen migrate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *url == "" {
		*url = databaseURLFromEnv()
	}
	if *url == "" {
		fmt.Fprintln(stderr, "freshen migrate: no database: set --database-url or DATABASE_URL")
		return 2
	}
	if err := migrateDatabase(ctx, *url, stdout); err != nil {
		fmt.Fprintf(stderr, "freshen migrate: %v\n", newRedactor(*url).Error(err))
		return 1
	}
	return 0
}

// databaseURLFromEnv returns FRESHEN_DATABASE_URL, or else DATABASE_URL.
func databaseURLFromEnv() string {
	if url := os.Getenv("FRESHEN_DATABASE_URL"); url != "" {
		return url
	}
	return os.Getenv("DATABASE_URL")
}

// migrateDatabase applies the missing migrations and says what it did: a
// run that found another applying them waits for it and then finds the
// schema up to date.
func migrateDatabase(ctx context.Context, url string, stdout io.Writer) error {
	// The pool's parsing: no setting sent at connection and no named
	// prepared statement, so that migrate also runs through a pooler.
	cfg, err := postgres.ParseConfig(url, postgres.Session{})
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	applied, err := migrations.Apply(ctx, conn)
	if err != nil {
		return err
	}
	after, _, err := migrations.Version(ctx, conn)
	if err != nil {
		return err
	}
	if applied == 0 {
		fmt.Fprintf(stdout, "schema at version %d, up to date\n", after)
	} else {
		fmt.Fprintf(stdout, "schema at version %d, migrated from version %d\n", after, after-int32(applied))
	}
	return nil
}
