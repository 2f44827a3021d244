package queue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	k := newKeys("")
	require.Equal(t, "freshen:{freshen}:jobs:thumbs", k.jobsKey("thumbs"))
	require.Equal(t, "freshen:{freshen}:jobs:default", k.jobsKey(""))
	require.Equal(t, "freshen:{freshen}:working:thumbs:w1", k.workingKey("thumbs", "w1"))
	require.Equal(t, "freshen:{freshen}:workers:thumbs", k.workersKey("thumbs"))
	require.Equal(t, "freshen:{freshen}:outcomes", k.outcomesKey())
	require.Equal(t, "freshen:{freshen}:processing:s1", k.processingKey("s1"))
	require.Equal(t, "freshen:{freshen}:consumers", k.consumersKey())
	require.Equal(t, "freshen:{freshen}:dead", k.deadKey())
	require.Equal(t, "freshen:{freshen}:revoked:u1", k.revokedKey("u1"))
	require.Equal(t, "freshen:{freshen}:events", k.eventsKey())

	// Every key of a prefix carries the same hash tag, so they share a
	// Redis Cluster slot.
	k = newKeys("acme")
	for _, key := range []string{
		k.jobsKey("q"), k.workingKey("q", "w"), k.workersKey("q"), k.outcomesKey(),
		k.processingKey("c"), k.consumersKey(), k.deadKey(), k.revokedKey("u"), k.eventsKey(),
	} {
		require.True(t, strings.HasPrefix(key, "acme:{acme}:"), key)
	}
}
