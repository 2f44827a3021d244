package http

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestAttemptOutcomesDocumented checks that the OpenAPI document and
// docs/api.md list every outcome a history row can record.
func TestAttemptOutcomesDocumented(t *testing.T) {
	t.Parallel()
	outcomes := []string{refresh.OutcomeSuccess, refresh.AttemptUnchanged, refresh.OutcomeFailure, refresh.EventTimeout,
		refresh.AttemptSnoozed, refresh.AttemptSuperseded, refresh.AttemptCancelled}

	doc := loadOpenAPI(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	outcome := schemas["Attempt"].(map[string]any)["properties"].(map[string]any)["outcome"].(map[string]any)
	want := []any{nil}
	for _, o := range outcomes {
		want = append(want, o)
	}
	require.ElementsMatch(t, want, outcome["enum"])

	api, err := os.ReadFile("../../docs/api.md")
	require.NoError(t, err)
	para := regexp.MustCompile("(?s)`outcome` is `null` while the attempt runs, then (.*?)\n\n").FindSubmatch(api)
	require.NotNil(t, para, "docs/api.md lists the outcomes")
	for _, o := range outcomes {
		require.Contains(t, string(para[1]), "`"+o+"`")
	}
}
