package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
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
