package refresh_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefix, end string
		ok          bool
	}{
		{"acme-", "acme.", true},
		{"acme", "acmf", true},
		{"z", "{", true},
		{"A9", "A:", true},
		{"", "", false},
		{"é", "ê", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF", "", false},
		{"a\uD7FF", "a\uE000", true}, // past the surrogates
		{"a\xff", "b", true},         // not UTF-8: bytes
		{"\xfe", "\xff", true},
		{"\xff\xff", "", false},
	} {
		end, ok := refresh.PrefixEnd(c.prefix)
		require.Equal(t, c.ok, ok, "prefix %q", c.prefix)
		require.Equal(t, c.end, end, "prefix %q", c.prefix)
	}
	// Every id that starts with a prefix is within [prefix, end), and
	// the ids around it are not.
	ids := []string{"acme", "acme-", "acme-0", "acme-zzz", "acme-~", "acme.", "acme.0", "acme0", "acmd~", "acmf", "b", "acme-\U0010FFFF"}
	for _, p := range []string{"acme-", "acme", "acme-z", "a"} {
		end, ok := refresh.PrefixEnd(p)
		require.True(t, ok)
		for _, id := range ids {
			require.Equal(t, strings.HasPrefix(id, p), id >= p && id < end, "id %q, prefix %q, end %q", id, p, end)
		}
	}
}
