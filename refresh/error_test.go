package refresh_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestValidationErrorString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  refresh.ValidationError
		want string
	}{
		{name: "none", err: refresh.ValidationError{}, want: ""},
		{name: "one", err: refresh.ValidationError{Fields: []refresh.FieldError{{Field: "timeout", Rule: "must be >= 1s, got 0s"}}},
			want: "timeout: must be >= 1s, got 0s"},
		{name: "a rule of the whole input", err: refresh.ValidationError{Fields: []refresh.FieldError{{Rule: "must be an object, got []"}}},
			want: "must be an object, got []"},
		{name: "several", err: refresh.ValidationError{Fields: []refresh.FieldError{
			{Field: "a", Rule: "r1"}, {Rule: "r2"}, {Field: "c", Rule: "r3"}}},
			want: "a: r1; r2; c: r3"},
		{name: "some left out", err: refresh.ValidationError{Fields: []refresh.FieldError{{Field: "a", Rule: "r1"}}, More: 39980},
			want: "a: r1; ... and 39980 more"},
		{name: "only a count", err: refresh.ValidationError{More: 2}, want: "... and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.err.Error())
		})
	}
}

// unknownFields returns a policy with n unknown members, f0 to f(n-1).
func unknownFields(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d": 1`, i)
	}
	b.WriteString("}")
	return b.String()
}

// TestParsePolicyErrorCap checks that an answer lists at most
// Limits.MaxFieldErrors broken rules and counts those it leaves out.
func TestParsePolicyErrorCap(t *testing.T) {
	t.Parallel()
	listed := func(n int) []refresh.FieldError {
		var out []refresh.FieldError
		for i := range n {
			out = append(out, refresh.FieldError{Field: fmt.Sprintf("f%d", i), Rule: "unknown field"})
		}
		return out
	}
	tests := []struct {
		name string
		in   string
		lim  refresh.Limits
		want refresh.ValidationError
	}{
		{name: "at the cap", in: unknownFields(20), want: refresh.ValidationError{Fields: listed(20)}},
		{name: "one over the cap", in: unknownFields(21), want: refresh.ValidationError{Fields: listed(20), More: 1}},
		{name: "40,000 unknown fields", in: unknownFields(40000), want: refresh.ValidationError{Fields: listed(20), More: 39980}},
		{name: "configured cap", in: unknownFields(5), lim: refresh.Limits{MaxFieldErrors: 2},
			want: refresh.ValidationError{Fields: listed(2), More: 3}},
		{name: "past the cap, values are no longer decoded",
			in:   `{"f0": 1, "f1": 2, "timeout": "xyz", "retry": {"bad": 1}, "f2": 3, "f2": 4}`,
			lim:  refresh.Limits{MaxFieldErrors: 2},
			want: refresh.ValidationError{Fields: listed(2), More: 2}},
		{name: "past the cap, rules are no longer checked", in: `{"f0": 1, "timeout": "0s", "on_exhausted": "never"}`,
			lim: refresh.Limits{MaxFieldErrors: 1}, want: refresh.ValidationError{Fields: listed(1)}},
		{name: "rules count too", in: `{"timeout": "0s", "on_exhausted": "never", "give_up_after": "-1s"}`,
			lim: refresh.Limits{MaxFieldErrors: 2},
			want: refresh.ValidationError{Fields: []refresh.FieldError{
				{Field: "timeout", Rule: "must be >= 1s, got 0s"},
				{Field: "on_exhausted", Rule: `must be "disable" or "wait_next", got "never"`},
			}, More: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := refresh.ParsePolicy([]byte(tt.in), tt.lim)
			var v *refresh.ValidationError
			require.True(t, errors.As(err, &v), "%T %v", err, err)
			require.Equal(t, tt.want, *v)
		})
	}

	t.Run("the message says how many more", func(t *testing.T) {
		t.Parallel()
		_, err := refresh.ParsePolicy([]byte(unknownFields(40000)), refresh.DefaultLimits())
		require.True(t, strings.HasPrefix(err.Error(), "f0: unknown field; f1: unknown field; "), err.Error())
		require.True(t, strings.HasSuffix(err.Error(), "; f19: unknown field; ... and 39980 more"), err.Error())
	})

	t.Run("Validate caps too", func(t *testing.T) {
		t.Parallel()
		p := refresh.DefaultPolicy()
		p.Timeout, p.GiveUpAfter, p.OnExhausted = 0, -1, "never"
		err := p.Validate(refresh.Limits{MaxFieldErrors: 1})
		require.Equal(t, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "timeout", Rule: "must be >= 1s, got 0s"}}, More: 2}, err)
	})
}

// TestParsePolicyHostileInputs checks inputs that once took seconds to
// refuse: each must be refused with its field named.
func TestParsePolicyHostileInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []refresh.FieldError
	}{
		{name: "a retry_on list of 60 KB", in: `{"retry": {"retry_on": [` + strings.Repeat(`"",`, 20000) + `""]}}`,
			want: []refresh.FieldError{{Field: "retry.retry_on", Rule: "must have at most 100 entries, got 20001"}}},
		{name: "a non_retryable list of long kinds", in: `{"retry": {"non_retryable": [` +
			strings.Repeat(`"`+strings.Repeat("k", 1000)+`",`, 50) + `"x"]}}`,
			want: func() []refresh.FieldError {
				var out []refresh.FieldError
				for i := range 20 {
					out = append(out, refresh.FieldError{Field: fmt.Sprintf("retry.non_retryable[%d]", i), Rule: "must be at most 64 bytes, got 1000"})
				}
				return out
			}()},
		{name: "a delays list of 100,000 entries", in: `{"retry": {"delays": [` + strings.Repeat(`"1m",`, 99999) + `"1m"]}}`,
			want: []refresh.FieldError{{Field: "retry.delays", Rule: "must have at most 100 entries, got 100000"}}},
		{name: "a template of 770 KB", in: `{"disabled_message": "` + strings.Repeat("{error}", 110000) + `"}`,
			want: []refresh.FieldError{{Field: "disabled_message", Rule: "must be at most 1000 bytes, got 770000"}}},
		{name: "a template of many unknown placeholders", in: `{"disabled_message": "` + strings.Repeat("{x}", 300) + `"}`,
			want: []refresh.FieldError{
				{Field: "disabled_message", Rule: `unknown placeholder "{x}"; use {attempts}, {error}, {since}`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, fieldErrors(t, tt.in, refresh.DefaultLimits()))
		})
	}
}

// BenchmarkParsePolicyHostile measures the refusal of inputs that once
// took seconds (40,000 unknown fields: 127 s; a 60 KB retry_on: 12 s).
func BenchmarkParsePolicyHostile(b *testing.B) {
	inputs := []struct{ name, in string }{
		{"unknown-fields-40000", unknownFields(40000)},
		{"retry_on-60KB", `{"retry": {"retry_on": [` + strings.Repeat(`"",`, 20000) + `""]}}`},
		{"template-770KB", `{"disabled_message": "` + strings.Repeat("{error}", 110000) + `"}`},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := refresh.ParsePolicy([]byte(in.in), refresh.DefaultLimits()); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
