package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

// The names the endpoints deliver, once each, which serve adds to those of
// the events stream.
func TestEventNames(t *testing.T) {
	t.Parallel()
	require.Empty(t, webhook.EventNames(nil))
	got := webhook.EventNames([]webhook.Endpoint{
		{Name: "crm", Events: []string{"disabled", "succeeded"}},
		{Name: "ops", Events: []string{"failed", "disabled"}},
	})
	require.Equal(t, []string{"succeeded", "failed", "disabled"}, got, "in the order of refresh.LifecycleNames")
	names, err := refresh.ParseEventNames("-started,-succeeded")
	require.NoError(t, err)
	require.True(t, names.With(got...).Has("succeeded"), "a webhook adds its names to --events")
	require.False(t, names.With(got...).Has("started"))
}
