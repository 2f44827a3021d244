package migrations

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// ApplyThese is Apply with the migrations ms instead of Freshen's.
func ApplyThese(ctx context.Context, conn *pgx.Conn, ms []*migrate.Migration) (int, error) {
	table, _, err := load(ctx, conn)
	if err != nil {
		return 0, err
	}
	return run(ctx, conn, table, ms)
}
