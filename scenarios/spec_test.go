package scenarios_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

// TestParseSpecNamesEveryRule: a spec is refused with every broken rule
// named, whether or not it has a model.
func TestParseSpecNamesEveryRule(t *testing.T) {
	t.Parallel()
	fields := func(spec string) []string {
		_, err := scenarios.ParseSpec([]byte(spec), refresh.DefaultLimits())
		var v *refresh.ValidationError
		require.ErrorAs(t, err, &v)
		var out []string
		for _, f := range v.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	const times = `"start": "2026-03-02T05:30:00Z", "until": "2026-03-03T00:00:00Z"`
	require.Equal(t, []string{"model", "attempts[0].outcome", "default.outcome"},
		fields(`{`+times+`, "attempts": [{"outcome": "sucess"}], "default": {"outcome": "maybe"}}`))
	require.Equal(t, []string{"model.id", "attempts[0].outcome"},
		fields(`{`+times+`, "model": {}, "attempts": [{"outcome": "sucess"}]}`))
}
