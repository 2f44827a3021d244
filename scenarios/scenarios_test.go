package scenarios_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden timelines")

// specs returns the scenario files: every *.json beside this file that is
// not a golden timeline.
func specs(t *testing.T) []string {
	all, err := filepath.Glob("*.json")
	require.NoError(t, err)
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".timeline.json") {
			out = append(out, f)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// golden returns the golden timeline file of a scenario file.
func golden(spec string) string { return strings.TrimSuffix(spec, ".json") + ".timeline.json" }

func TestScenarios(t *testing.T) {
	for _, file := range specs(t) {
		t.Run(strings.TrimSuffix(file, ".json"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			lim := refresh.DefaultLimits()
			spec, err := scenarios.ParseSpec(data, lim)
			require.NoError(t, err)
			timeline, err := scenarios.Run(context.Background(), spec, lim)
			require.NoError(t, err)
			var got bytes.Buffer
			require.NoError(t, scenarios.WriteJSON(&got, timeline))
			if *update {
				require.NoError(t, os.WriteFile(golden(file), got.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden(file))
			require.NoError(t, err, "no golden timeline; run go test ./scenarios -update and review it")
			require.Equal(t, string(want), got.String())
		})
	}
}
