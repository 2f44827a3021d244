package webhook

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestForbiddenHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1":                 true,
		"127.8.9.10":                true,
		"0.0.0.0":                   true,
		"169.254.169.254":           true,
		"169.254.0.1":               true,
		"100.100.100.200":           true,
		"::1":                       true,
		"[::1]":                     true,
		"::":                        true,
		"fe80::1":                   true,
		"fd00:ec2::254":             true,
		"::ffff:169.254.169.254":    true,
		"64:ff9b::a9fe:a9fe":        true, // NAT64 of 169.254.169.254
		"localhost":                 true,
		"LOCALHOST.":                true,
		"api.localhost":             true,
		"metadata":                  true,
		"metadata.google.internal":  true,
		"Metadata.Google.Internal.": true,
		"metadata.goog":             true,
		"instance-data":             true,
		"crm.example.com":           false,
		"10.0.0.5":                  false, // private networks hold receivers
		"192.168.1.10":              false,
		"172.16.0.1":                false,
		"fd12:3456::1":              false,
		"100.100.100.201":           false,
		"8.8.8.8":                   false,
		"2001:db8::1":               false,
		"metadata.example.com":      false,
	} {
		require.Equal(t, want, forbiddenHost(host), host)
	}
}

// noStore is a Store that New accepts and the tests never call.
type noStore struct{ Store }

// Without AllowPrivate, New refuses an endpoint at a loopback, link-local
// or metadata address or name, naming it; with it, New takes it.
func TestPrivateEndpointRefused(t *testing.T) {
	t.Parallel()
	clock := refresh.NewVirtualClock(t0)
	ep := func(name, url string) Endpoint {
		return Endpoint{Name: name, URL: url, Secret: "0123456789abcdef", Events: []string{refresh.LifecycleDisabled}}
	}
	endpoints := []Endpoint{
		ep("ok", "https://crm.example.com/hooks"),
		ep("aws", "http://169.254.169.254/latest/meta-data/"),
		ep("gcp", "http://metadata.google.internal/computeMetadata/v1/"),
		ep("v6", "http://[fe80::1%25eth0]:8080/"),
		ep("self", "http://127.0.0.1:8080/"),
	}
	_, err := New(Config{Store: noStore{}, Clock: clock, Endpoints: endpoints})
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`webhooks[1].url: must not be a loopback, link-local or cloud metadata address or name, got "169.254.169.254" (--webhook-allow-private allows it)`,
		`webhooks[2].url: must not be a loopback, link-local or cloud metadata address or name, got "metadata.google.internal"`,
		`webhooks[3].url: must not be`,
		`webhooks[4].url: must not be`,
	} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "webhooks[0]")
	_, err = New(Config{Store: noStore{}, Clock: clock, Endpoints: endpoints, AllowPrivate: true})
	require.NoError(t, err)
}

// A name that resolves to a forbidden address is refused when the
// delivery is sent (DNS may change after the endpoint was checked), and the
// refusal is counted and logged; the send is a failed one, retried.
func TestPrivateAddressRefusedAtDelivery(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rcv := newReceiver(t, func(string, int) int { return 200 })
	crm := rcv.endpoint("crm", refresh.LifecycleDisabled)
	p := b.publisher(t, nil, crm)
	b.write(t, disabledEvent("m1", "u1", t0))
	_, err := p.RunOnce(ctx)
	require.NoError(t, err)

	var logs bytes.Buffer
	sent := make(chan Sent, 10)
	d, err := New(Config{Store: b.store, Clock: b.clock, Endpoints: []Endpoint{crm}, AllowPrivate: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), SentFunc: func(s Sent) { sent <- s }})
	require.NoError(t, err)
	// A dispatcher of endpoints that were public when checked: its client
	// refuses what their names resolve to now. "localhost" stands for a
	// name whose DNS answer changed to a loopback address.
	d.cfg.Client = defaultClient(false)
	port := netip.MustParseAddrPort(rcv.Listener.Addr().String()).Port()
	crm.URL = "http://localhost:" + strconv.Itoa(int(port)) + "/crm"
	d.endpoints["crm"] = crm

	res, err := d.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Claimed)
	s := wait(t, sent, 1)[0]
	require.Equal(t, refresh.DeliveryPending, s.Result.State, "a failed send, retried later")
	require.Contains(t, s.Result.Error, "refused to connect to ")
	require.Contains(t, s.Result.Error, "loopback, link-local or cloud metadata address")
	require.Empty(t, rcv.requests(), "nothing reached the receiver")
	require.Equal(t, 1.0, value(t, d.cfg.Metrics.Refused))
	require.Contains(t, logs.String(), "webhook send refused")

	// The same client reaches a public address; with AllowPrivate, the
	// default client reaches the receiver.
	d.cfg.Client = defaultClient(true)
	b.clock.Advance(time.Hour)
	_, err = d.runOnce(ctx)
	require.NoError(t, err)
	s = wait(t, sent, 1)[0]
	require.Equal(t, refresh.DeliveryDelivered, s.Result.State, s.Result.Error)
	require.Len(t, rcv.requests(), 1)
}
