package ui

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dashboard's cookies are Secure when the request came over TLS, to
// this server or to a proxy in front of it, and only then.
func TestCookieSecure(t *testing.T) {
	h := &Handler{base: "/ui"}
	for _, tc := range []struct {
		name   string
		tls    bool
		header string
		want   bool
	}{
		{"plain HTTP", false, "", false},
		{"TLS to this server", true, "", true},
		{"TLS ended by a proxy", false, "https", true},
		{"proxy, any case", false, "HTTPS", true},
		{"proxy over plain HTTP", false, "http", false},
	} {
		r := httptest.NewRequest("GET", "/ui/", nil)
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if tc.header != "" {
			r.Header.Set("X-Forwarded-Proto", tc.header)
		}
		c := h.cookie(r, sessionCookie, "v", 0)
		require.Equal(t, tc.want, c.Secure, tc.name)
		require.True(t, c.HttpOnly, tc.name)
		require.Equal(t, "/ui/", c.Path, tc.name)
	}
}
