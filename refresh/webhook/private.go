package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Endpoints are set by operators, but a URL is easy to get wrong and an
// instance's own network holds what no receiver should get: the cloud
// metadata services (credentials of the instance), and the services of
// the host itself. So, unless Config.AllowPrivate, an endpoint may not
// point at them, by name or by address, and every connection of the
// default client is checked again once its name is resolved: a name that
// resolves to such an address (DNS changes, rebinding) is refused at
// delivery time too, counted (Metrics.Refused) and logged. Private
// networks (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7) stay
// allowed: receivers often live there.

// forbiddenPrefixes are the addresses an endpoint may not reach.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("0.0.0.0/8"),          // "this host": 0.0.0.0 reaches the loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, 169.254.169.254 the metadata of AWS, GCP, Azure...
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud's metadata
	netip.MustParsePrefix("::1/128"),            // loopback
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS's metadata over IPv6
}

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4
// address in their last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// forbiddenNames are host names of metadata services and of the host
// itself; a name ending in ".localhost" is the host too.
var forbiddenNames = map[string]bool{
	"localhost":                  true,
	"metadata":                   true,
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"instance-data":              true,
	"instance-data.ec2.internal": true,
}

// privateRule is the rule an endpoint breaks by pointing at a forbidden
// address or name.
const privateRule = "must not be a loopback, link-local or cloud metadata address or name"

// forbiddenAddr reports whether a is an address an endpoint may not reach.
func forbiddenAddr(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forbiddenHost reports whether host, the host of a URL without its port,
// names or is an address an endpoint may not reach.
func forbiddenHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return forbiddenAddr(a.WithZone(""))
	}
	return forbiddenNames[host] || strings.HasSuffix(host, ".localhost")
}

// CheckPrivate returns a *refresh.ValidationError naming each endpoint
// whose URL points at a loopback, link-local or metadata address or name
// ("webhooks[0].url: must not be ..."), or nil. Config.AllowPrivate skips
// it.
func CheckPrivate(endpoints []Endpoint) error {
	var errs []refresh.FieldError
	for i, e := range endpoints {
		u, err := url.Parse(e.URL)
		if err != nil || !forbiddenHost(u.Hostname()) {
			continue // Validate names a URL that does not parse
		}
		errs = append(errs, refresh.FieldError{Field: fmt.Sprintf("webhooks[%d].url", i),
			Rule: fmt.Sprintf("%s, got %q (--webhook-allow-private allows it)", privateRule, u.Hostname())})
	}
	if len(errs) > 0 {
		return &refresh.ValidationError{Fields: errs}
	}
	return nil
}

// PrivateAddressError is the error of a send refused because the address
// its endpoint's name resolved to is one it may not reach.
type PrivateAddressError struct {
	// Addr is the address refused, "ip:port".
	Addr string
}

func (e *PrivateAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s: it is a loopback, link-local or cloud metadata address (--webhook-allow-private allows it)", e.Addr)
}

// refuseForbidden is the Control of the default client's dialer: it
// refuses a connection to a forbidden address, once the name is resolved.
func refuseForbidden(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || forbiddenAddr(ap.Addr()) {
		return &PrivateAddressError{Addr: address}
	}
	return nil
}

// defaultClient returns the client of a Config without one: it follows no
// redirect (a 3xx answer is a failed send) and, unless allowPrivate, its
// connections refuse the forbidden addresses.
func defaultClient(allowPrivate bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if !allowPrivate {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseForbidden}
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
