package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// A pass that starts while another holds a full batch scans from past that
// batch: it neither visits the rows held nor claims a model made due below
// them since. Once the batch is let go (here by a rollback), the passes
// scan from the floor again and claim them all.
func TestClaimStartsPastTheBatchesHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	put(t, b.store, model("a", at(time.Second)), model("b", at(2*time.Second)), model("c", at(3*time.Second)))

	holding, release, done := make(chan []string), make(chan struct{}), make(chan error, 1)
	var let sync.Once
	letGo := func() { let.Do(func() { close(release) }) }
	// A failure lets the batch go too, before the schema is dropped.
	t.Cleanup(letGo)
	go func() {
		_, err := b.store.ClaimDue(ctx, at(10*time.Second), 2, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			var ids []string
			for _, m := range due {
				ids = append(ids, m.ID)
			}
			holding <- ids
			<-release
			return refresh.Batch{}, errors.New("let go")
		})
		done <- err
	}()
	require.Equal(t, []string{"a", "b"}, <-holding)

	put(t, b.store, model("z", at(500*time.Millisecond)))
	require.Equal(t, []string{"c"}, claimAll(t, b.store, at(11*time.Second), 100), "past b, the last row held: not z")

	letGo()
	require.EqualError(t, <-done, "let go")
	require.Equal(t, []string{"z", "a", "b"}, claimAll(t, b.store, at(12*time.Second), 100), "from the floor again")
}

// Passes that start while other claims are under way, and so have no batch
// to start past, each scan past the rows the claims under way take: rows
// of their own. A pass past every model due claims none; once no claim is
// under way, the passes scan from the floor again.
func TestClaimStartsPastTheClaimsUnderWay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	put(t, b.store, model("a", at(time.Second)), model("b", at(2*time.Second)), model("c", at(3*time.Second)),
		model("d", at(4*time.Second)), model("e", at(5*time.Second)), model("f", at(6*time.Second)))
	// Before any is due, a pass sets the floor: for ten seconds, no pass
	// scans from the start for the floor's sake.
	require.Empty(t, claimAll(t, b.store, at(500*time.Millisecond), 2))
	now := at(9 * time.Second)

	first, err := postgres.StartClaim(b.store, now, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, claimAll(t, b.store, now, 2), "past a, the first claim's")
	second, err := postgres.StartClaim(b.store, now, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"f"}, claimAll(t, b.store, now, 2), "past a, and d and e, the second's")
	require.Empty(t, claimAll(t, b.store, now, 2), "a, d and e are theirs")

	first()
	second()
	require.Equal(t, []string{"a", "d"}, claimAll(t, b.store, now, 2), "from the floor again")
}
