package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	job := refresh.Job{ModelID: "m1", AttemptUID: "u1"}
	no := false
	for _, tc := range []struct {
		name string
		err  error
		want refresh.Outcome
	}{
		{"success", nil, refresh.Outcome{Type: "success"}},
		{"plain error", errors.New("boom"),
			refresh.Outcome{Type: "failure", Kind: "error", Message: "boom"}},
		{"fail", Fail("http_503", "upstream 503"),
			refresh.Outcome{Type: "failure", Kind: "http_503", Message: "upstream 503"}},
		{"wrapped fail", fmt.Errorf("fetch: %w", Fail("http_503", "upstream 503")),
			refresh.Outcome{Type: "failure", Kind: "http_503", Message: "fetch: upstream 503"}},
		{"permanent plain", Permanent(errors.New("bad input")),
			refresh.Outcome{Type: "failure", Kind: "error", Message: "bad input", Retryable: &no}},
		{"permanent fail", Permanent(Fail("validation", "row 3")),
			refresh.Outcome{Type: "failure", Kind: "validation", Message: "row 3", Retryable: &no}},
		{"user message", UserMessage(Permanent(Fail("validation", "row 3")), "Row 3 has no date."),
			refresh.Outcome{Type: "failure", Kind: "validation", Message: "row 3", Retryable: &no, UserMessage: "Row 3 has no date."}},
		{"user message then permanent", Permanent(UserMessage(errors.New("gone"), "The URL is gone.")),
			refresh.Outcome{Type: "failure", Kind: "error", Message: "gone", Retryable: &no, UserMessage: "The URL is gone."}},
		{"struct", &JobError{Kind: "not_found", Message: "404", Permanent: true},
			refresh.Outcome{Type: "failure", Kind: "not_found", Message: "404", Retryable: &no}},
		{"snooze", Snooze(5 * time.Minute),
			refresh.Outcome{Type: "snooze", For: refresh.Duration(5 * time.Minute)}},
		{"snooze until", fmt.Errorf("input: %w", SnoozeUntil(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))),
			refresh.Outcome{Type: "snooze", Until: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}},
		{"unchanged", Unchanged(), refresh.Outcome{Type: "success", Unchanged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.ModelID, tc.want.AttemptUID = "m1", "u1"
			require.Equal(t, tc.want, outcomeOf(job, tc.err, DefaultLimits()))
		})
	}
}

func TestJobErrorUnwraps(t *testing.T) {
	t.Parallel()
	base := errors.New("base")
	err := UserMessage(Permanent(base), "msg")
	require.ErrorIs(t, err, base)
	var je *JobError
	require.ErrorAs(t, err, &je)
	require.True(t, je.Permanent)
	require.Equal(t, "msg", je.UserMessage)
}
