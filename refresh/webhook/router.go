package webhook

import (
	"encoding/json"
	"slices"

	"github.com/freshen-dev/freshen/refresh"
)

// Router turns lifecycle events into the deliveries their endpoints ask
// for. Its Route is a refresh.PublisherConfig's RouteFunc.
type Router struct {
	endpoints []Endpoint
}

// NewRouter returns the router of endpoints, or the error of Validate.
func NewRouter(endpoints []Endpoint) (*Router, error) {
	if err := Validate(endpoints); err != nil {
		return nil, err
	}
	return &Router{endpoints: endpoints}, nil
}

// Payload is the JSON body of a delivery.
type Payload struct {
	// Endpoint is the name of the endpoint the delivery goes to.
	Endpoint string `json:"endpoint"`
	// Type is the webhook event name (see Names).
	Type    string `json:"type"`
	ModelID string `json:"model_id"`
	// IdempotencyKey is also the request's Idempotency-Key header.
	IdempotencyKey string `json:"idempotency_key"`
	// Event is the lifecycle event, as the events stream carries it.
	Event json.RawMessage `json:"event"`
}

// Route returns a delivery of each event to each endpoint that takes it,
// in the order of events then endpoints.
func (r *Router) Route(events []refresh.Event) []refresh.Delivery {
	var out []refresh.Delivery
	for i := range events {
		e := &events[i]
		var raw json.RawMessage
		for _, name := range e.Lifecycle() {
			for _, ep := range r.endpoints {
				if !ep.wants(name, e.ModelID) {
					continue
				}
				if raw == nil {
					raw = eventJSON(e)
				}
				key := IdempotencyKey(*e, name)
				body, _ := json.Marshal(Payload{Endpoint: ep.Name, Type: name, ModelID: e.ModelID, IdempotencyKey: key, Event: raw})
				out = append(out, refresh.Delivery{
					Endpoint: ep.Name, ModelID: e.ModelID, Event: name, Key: key, Payload: body, CreatedAt: e.At,
				})
			}
		}
	}
	return out
}

// eventJSON returns the JSON of e as the events stream carries it.
func eventJSON(e *refresh.Event) json.RawMessage {
	if len(e.Raw) > 0 && json.Valid(e.Raw) {
		return e.Raw
	}
	raw, err := json.Marshal(e)
	if err != nil { // a time json cannot write: the fields that identify it
		raw, _ = json.Marshal(map[string]string{"model_id": e.ModelID, "event": e.Type})
	}
	return raw
}

// EventNames returns the lifecycle names that endpoints deliver, which the
// store must write even if the events stream leaves them out
// (refresh.EventNames.With), in the order of refresh.LifecycleNames.
func EventNames(endpoints []Endpoint) []string {
	var out []string
	for _, name := range refresh.LifecycleNames {
		for _, e := range endpoints {
			if slices.Contains(e.Events, name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
