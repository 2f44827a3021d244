package webhook_test

import (
	"fmt"
	"time"

	"github.com/freshen-dev/freshen/refresh/webhook"
)

// A receiver checks the Freshen-Signature header of each delivery against
// the raw body and the endpoint's secret, and refuses old ones.
func ExampleVerify() {
	secret := "whsec-0123456789abcdef"
	body := []byte(`{"endpoint":"crm","type":"disabled","model_id":"acme-1"}`)
	sent := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	header := webhook.Sign(secret, sent, body)

	fmt.Println(webhook.Verify(secret, header, body, sent.Add(time.Minute), 5*time.Minute))
	fmt.Println(webhook.Verify(secret, header, []byte(`{"forged":true}`), sent, 5*time.Minute))
	fmt.Println(webhook.Verify(secret, header, body, sent.Add(time.Hour), 5*time.Minute))
	// Output:
	// <nil>
	// webhook signature does not match
	// webhook signature is outside the tolerance
}
