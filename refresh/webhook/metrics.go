package webhook

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts deliveries by endpoint. Pass Collectors to the metrics
// registry (refresh/http.WithCollectors).
type Metrics struct {
	// Delivered counts sends answered with a 2xx.
	Delivered *prometheus.CounterVec
	// Retried counts failed sends planned to be sent again.
	Retried *prometheus.CounterVec
	// Failed counts deliveries given up (attempts or age exhausted).
	Failed *prometheus.CounterVec
	// Refused counts sends refused because the endpoint's name resolved
	// to a loopback, link-local or cloud metadata address (see
	// Config.AllowPrivate); each is also a failed send.
	Refused *prometheus.CounterVec
	// Pending is how many deliveries are neither delivered nor given up
	// (those being sent included), as of the last pass.
	Pending *prometheus.GaugeVec
}

// NewMetrics returns the metrics of a dispatcher, with a zero series for
// each endpoint named.
func NewMetrics(endpoints ...string) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "freshen", Subsystem: "webhook", Name: name, Help: help}, []string{"endpoint"})
	}
	m := &Metrics{
		Delivered: counter("delivered_total", "Webhook deliveries answered with a 2xx."),
		Retried:   counter("retried_total", "Failed webhook sends planned to be sent again."),
		Failed:    counter("failed_total", "Webhook deliveries given up after their attempts or age ran out."),
		Refused:   counter("refused_total", "Webhook sends refused: the endpoint's name resolved to a loopback, link-local or cloud metadata address."),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "freshen", Subsystem: "webhook", Name: "pending",
			Help: "Webhook deliveries not yet delivered nor given up (those being sent included)."}, []string{"endpoint"}),
	}
	for _, name := range endpoints {
		m.Delivered.WithLabelValues(name)
		m.Retried.WithLabelValues(name)
		m.Failed.WithLabelValues(name)
		m.Refused.WithLabelValues(name)
		m.Pending.WithLabelValues(name)
	}
	return m
}

// Collectors returns the collectors of m.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Delivered, m.Retried, m.Failed, m.Refused, m.Pending}
}
