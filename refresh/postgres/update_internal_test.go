package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestSamePolicy(t *testing.T) {
	p, err := refresh.ParsePolicy([]byte(`{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris",
		"timeout": "10m", "retry": {"delays": ["1m", "5m"], "non_retryable": ["validation"]}}`), refresh.Limits{})
	require.NoError(t, err)
	cp := p
	require.True(t, samePolicy(&p, &cp), "a copy")

	again, err := refresh.ParsePolicy([]byte(`{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timezone": "Europe/Paris",
		"timeout": "10m", "retry": {"delays": ["1m", "5m"], "non_retryable": ["validation"]}}`), refresh.Limits{})
	require.NoError(t, err)
	require.True(t, samePolicy(&p, &again), "equal, in other memory")

	other := p
	other.Retry.Delays = []refresh.Duration{refresh.Duration(time.Minute), refresh.Duration(6 * time.Minute)}
	require.False(t, samePolicy(&p, &other), "another delay")
	other = p
	other.Timeout = refresh.Duration(11 * time.Minute)
	require.False(t, samePolicy(&p, &other), "another timeout")
	other = p
	other.Retry.NonRetryable = []string{"validatio" + "n", "auth"}
	require.False(t, samePolicy(&p, &other), "another list")
}
