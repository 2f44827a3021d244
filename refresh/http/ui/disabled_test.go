package ui_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Saving a disabled model's policy form re-enables the model only when
// the saved policy changes something, as any write of the definition does
// (docs/transitions.md, "Changing a model"); the banner says so.
func TestFormSaveReEnablesDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "m1", `{"timeout": "10m"}`)
	b.disable(t, "m1", "validation", "bad input_url", "Refresh disabled after 1 failed attempt(s).")
	writer := b.signedIn(t, writeToken)
	const banner = "re-enables it and starts it now"
	_, body := writer.get("/ui/models/m1")
	contains(t, body, `<div class="banner disabled">`)
	contains(t, body, banner)

	save := func(policy string) {
		t.Helper()
		_, body := writer.get("/ui/preview?model=m1")
		tag := tagField.FindStringSubmatch(body)[1]
		res, body := writer.post("/ui/preview", url.Values{"csrf": {writer.csrf("/ui/preview")}, "model": {"m1"}, "tag": {tag}, "do": {"save"},
			"policy": {policy}, "attempts": {"failure"}, "then": {"success"}, "start": {"2026-03-02T14:30:00Z"}, "span": {"P1D"}, "id": {"m1"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	}

	// The same policy: still disabled.
	b.clock.Advance(time.Minute)
	save(`{"timeout": "10m"}`)
	require.True(t, b.get(t, "m1").Disabled(), "a save that changes nothing")
	_, body = writer.get("/ui/models/m1")
	contains(t, body, `<div class="banner disabled">`)

	// A changed field: re-enabled, and due now.
	b.clock.Advance(time.Minute)
	save(`{"timeout": "20m"}`)
	m := b.get(t, "m1")
	require.False(t, m.Disabled())
	require.Zero(t, m.ConsecutiveFailures)
	require.True(t, m.RefreshAt.Equal(b.clock.Now()), "refresh_at %s", m.RefreshAt)
	_, body = writer.get("/ui/models/m1")
	lacks(t, body, `<div class="banner disabled">`)
	contains(t, body, "Saved the policy of m1.")
}
