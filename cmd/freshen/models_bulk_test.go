package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// TestE2EBulkAndAuditCLI runs freshen serve with tokens and drives it with
// the client commands: writes with --reason, bulk actions by selector
// (dry run, a prefix token kept within its prefix, refused input), and
// the audit they leave.
func TestE2EBulkAndAuditCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("bulk-test", "--tokens", testTokens)
	for _, id := range []string{"acme-1", "acme-2", "acme-3", "globex-1"} {
		code, _, errOut := cli(t, p, "admin", `{"queue": "tables"}`, "models", "put", id, "--reason", "onboarding")
		require.Equal(t, 0, code, errOut)
	}

	code, out, errOut := cli(t, p, "writer", "", "models", "pause", "--prefix", "acme-", "--dry-run")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "dry run: 3 model(s) matched, pause would change 3; nothing changed\n", out)

	code, out, errOut = cli(t, p, "writer", "", "models", "pause", "--prefix", "acme-", "--queue", "tables", "--reason", "maintenance")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "pause: 3 model(s) matched, 3 changed, 0 unchanged, 0 failed\n", out)
	code, out, errOut = cli(t, p, "reader", "", "models", "list", "--paused")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []string{"acme-1", "acme-2", "acme-3"}, firstColumn(out))

	// A prefix token reaches only its own models.
	code, out, errOut = cli(t, p, "acme", "", "models", "resume", "--prefix", "globex-")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, `token "acme" is limited to the models whose id starts with "acme-"`)
	code, out, errOut = cli(t, p, "acme", "", "models", "resume", "--all", "--json")
	require.Equal(t, 0, code, errOut)
	var res refreshhttp.BulkResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, refreshhttp.BulkResult{Matched: 3, Changed: 3, Failed: []refresh.BulkFailure{}}, res)

	// Refused input is named, and nothing is done.
	code, _, errOut = cli(t, p, "writer", "", "models", "pause", "--state", "asleep")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "selector.state: must be one of disabled, paused, running")
	code, _, errOut = cli(t, p, "writer", "", "models", "pause", "--queue", "tables", "--reason", strings.Repeat("x", 501))
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "reason: must be at most 500 bytes, got 501")
	code, _, errOut = cli(t, p, "writer", "", "models", "pause", "acme-1", "--prefix", "acme-")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "give model ids or selector flags")
	code, out, _ = cli(t, p, "reader", "", "models", "list", "--paused")
	require.Equal(t, 0, code)
	require.Empty(t, firstColumn(out), "nothing paused by the refused requests")

	// The audit of acme-1, newest first.
	code, out, errOut = cli(t, p, "reader", "", "models", "audit", "acme-1")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^AT\s+ACTOR\s+ACTION\s+REASON\s+CHANGES$`, lines[0])
	require.Regexp(t, `^\S+ \S+\s+acme\s+resume \(bulk\)\s+-\s+-$`, lines[1])
	require.Regexp(t, `^\S+ \S+\s+writer\s+pause \(bulk\)\s+maintenance\s+-$`, lines[2])
	require.Regexp(t, `^\S+ \S+\s+admin\s+create\s+onboarding\s+queue: - -> "tables"; `, lines[3])
	code, out, errOut = cli(t, p, "reader", "", "models", "audit", "acme-1", "--limit", "1", "--json")
	require.Equal(t, 0, code, errOut)
	var list refreshhttp.AuditList
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.Audit, 1)
	require.Equal(t, "resume", list.Audit[0].Action)
	require.NotEmpty(t, list.Next)
}
