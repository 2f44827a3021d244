package refresh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the audit of docs/policy.md: every write of the API
// records who (the token's name), when (the service's clock), what (the
// action), the caller's optional reason and, for a change of the
// definition, the fields before and after. The entry is part of the
// store transaction that makes the change (Batch.Audit), and it outlives
// the model: the entry of a delete is the model's last one.

// Audited actions besides those of an action (ActionTrigger...).
const (
	// AuditCreate: a PUT created the model.
	AuditCreate = "create"
	// AuditReplace: a PUT replaced its definition.
	AuditReplace = "replace"
	// AuditPatch: a PATCH changed part of its definition.
	AuditPatch = "patch"
	// AuditDelete: the model was deleted.
	AuditDelete = "delete"
)

// Bounds of an audit entry.
const (
	// MaxAuditReasonBytes bounds the reason a caller gives.
	MaxAuditReasonBytes = 500
	// MaxAuditValueBytes bounds the JSON of one value of a FieldChange; a
	// longer value is recorded cut (FieldChange.Cut), as a JSON string.
	MaxAuditValueBytes = 1024
)

// AuditAnonymous is the actor of a write on a server without tokens.
const AuditAnonymous = "anonymous"

// AuditEntry is one audited write of one model.
type AuditEntry struct {
	// ID is the store's number of the entry; later entries have larger
	// ones. A store sets it when it writes the entry.
	ID      int64     `json:"id"`
	ModelID string    `json:"model_id"`
	At      time.Time `json:"at"`
	// Actor is the name of the caller's token, AuditAnonymous without
	// one.
	Actor string `json:"actor"`
	// Action is AuditCreate, AuditReplace, AuditPatch, AuditDelete or an
	// action (ActionTrigger, ActionEnable, ActionPause, ActionResume,
	// ActionCancel).
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// Bulk marks an action applied by a bulk action.
	Bulk bool `json:"bulk,omitempty"`
	// Trigger marks a create, replace or patch that also triggered the
	// model: with trigger: true, or one that changed the definition of a
	// disabled model, which re-enables it (Update).
	Trigger bool `json:"trigger,omitempty"`
	// Changes are the definition fields a create, replace or patch
	// changed, in DefinitionChanges' order.
	Changes []FieldChange `json:"changes,omitempty"`
}

// FieldChange is one definition field a write changed: "queue",
// "payload", "upstreams", "upstreams_mode", "rate_key", or a member of the
// policy as the model shows it, with every default ("policy.timeout").
type FieldChange struct {
	Field string `json:"field"`
	// Before and After are the field's JSON values; nil when the field
	// was absent (a create has no Before, a removal no After).
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Cut is set when Before or After was longer than
	// MaxAuditValueBytes: it is then a JSON string of its start.
	Cut bool `json:"cut,omitempty"`
}

// AuditInfo is who asks for a write, and why.
type AuditInfo struct {
	// Actor is the name of the caller's token (AuditAnonymous without
	// one).
	Actor  string
	Reason string
}

type auditKey struct{}

// WithAudit returns a copy of ctx whose writes through a Service are
// audited as info's. A write whose context carries no AuditInfo (the
// simulator, the demo) records no entry.
func WithAudit(ctx context.Context, info AuditInfo) context.Context {
	return context.WithValue(ctx, auditKey{}, info)
}

// AuditFrom returns the AuditInfo of ctx, and false if it has none.
func AuditFrom(ctx context.Context) (AuditInfo, bool) {
	info, ok := ctx.Value(auditKey{}).(AuditInfo)
	return info, ok
}

// CheckReason returns the rule reason breaks, or "": at most
// MaxAuditReasonBytes of UTF-8 text without NUL or other control
// characters but tab and newline.
func CheckReason(reason string) string {
	switch {
	case len(reason) > MaxAuditReasonBytes:
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxAuditReasonBytes, len(reason))
	case !utf8.ValidString(reason):
		return "must be UTF-8"
	case strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }):
		return "must not hold NUL or other control characters (tab and newline are allowed)"
	}
	return ""
}

// AuditLog reads the audit a store keeps; refresh/memory and
// refresh/postgres implement it.
type AuditLog interface {
	// Audit returns the entries of model id, newest first (by At, then by
	// ID), at most limit, older than the entry before (0: from the
	// newest). The entries outlive the model; an id with none gives none,
	// and no error.
	Audit(ctx context.Context, id string, before int64, limit int) ([]AuditEntry, error)
}

// auditEntry returns the entry of a write of model id by the caller of
// ctx at now, and false if ctx asks for no audit.
func auditEntry(ctx context.Context, id, action string, now time.Time) (AuditEntry, bool) {
	info, ok := AuditFrom(ctx)
	if !ok {
		return AuditEntry{}, false
	}
	actor := info.Actor
	if actor == "" {
		actor = AuditAnonymous
	}
	return AuditEntry{ModelID: id, At: now.UTC(), Actor: actor, Action: action, Reason: info.Reason}, true
}

// DefinitionChanges returns the definition fields that differ between
// before and after: queue, payload, upstreams, upstreams_mode, rate_key,
// then each member of the policy (as JSON shows it) in the order of
// after's policy, then those only before had. A value longer than MaxAuditValueBytes is
// cut (see FieldChange.Cut).
func DefinitionChanges(before, after Model) []FieldChange {
	var out []FieldChange
	add := func(field string, b, a json.RawMessage) {
		if bytes.Equal(b, a) {
			return
		}
		c := FieldChange{Field: field}
		c.Before, c.Cut = auditValue(b, c.Cut)
		c.After, c.Cut = auditValue(a, c.Cut)
		out = append(out, c)
	}
	add("queue", jsonOrNil(before.Queue, before.Queue == ""), jsonOrNil(after.Queue, after.Queue == ""))
	add("payload", compactJSON(before.Payload), compactJSON(after.Payload))
	add("upstreams", jsonOrNil(before.Upstreams, len(before.Upstreams) == 0), jsonOrNil(after.Upstreams, len(after.Upstreams) == 0))
	add("upstreams_mode", jsonOrNil(before.UpstreamsMode, before.UpstreamsMode == ""), jsonOrNil(after.UpstreamsMode, after.UpstreamsMode == ""))
	add("rate_key", jsonOrNil(before.RateKey, before.RateKey == ""), jsonOrNil(after.RateKey, after.RateKey == ""))

	bp, ap := policyMembers(before), policyMembers(after)
	for _, name := range ap.names {
		add("policy."+name, bp.values[name], ap.values[name])
	}
	for _, name := range bp.names {
		if _, ok := ap.values[name]; !ok {
			add("policy."+name, bp.values[name], nil)
		}
	}
	return out
}

// members are the members of a JSON object, in order.
type members struct {
	names  []string
	values map[string]json.RawMessage
}

// policyMembers returns the members of m's policy as the API shows it,
// every default stated (Policy.Stated), so that a default left out and the
// same value written compare equal; a model with no ID (nothing before a
// create) has none.
func policyMembers(m Model) members {
	out := members{values: map[string]json.RawMessage{}}
	if m.ID == "" {
		return out
	}
	data, err := json.Marshal(m.Policy.Stated())
	if err != nil {
		return out
	}
	_ = eachMember(data, func(name string, v json.RawMessage) { // data is an object json.Marshal wrote
		if _, ok := out.values[name]; !ok {
			out.names = append(out.names, name)
		}
		out.values[name] = compactJSON(v)
	})
	return out
}

// jsonOrNil returns v as JSON, or nil when absent.
func jsonOrNil(v any, absent bool) json.RawMessage {
	if absent {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return data
}

// compactJSON returns the JSON value v without insignificant space (nil
// and null stay nil), so that a change of layout alone is no change.
func compactJSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return slices.Clone(v)
	}
	return b.Bytes()
}

// auditValue returns v bounded by MaxAuditValueBytes: as it is, or a JSON
// string of its start cut at a character, and whether it (or, with cut
// already set, an earlier value) was cut.
func auditValue(v json.RawMessage, cut bool) (json.RawMessage, bool) {
	if len(v) <= MaxAuditValueBytes {
		return v, cut
	}
	n := MaxAuditValueBytes
	for {
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		s, _ := json.Marshal(string(v[:n]) + "…") // a string always encodes
		if len(s) <= MaxAuditValueBytes || n == 0 {
			return s, true
		}
		n = n * (MaxAuditValueBytes - 8) / len(s) // escapes take more than their byte
	}
}

// writeAction names a write of the definition in the audit: a create, or
// a replace (PUT) or a patch of a model that exists.
func writeAction(created, patch bool) string {
	switch {
	case created:
		return AuditCreate
	case patch:
		return AuditPatch
	}
	return AuditReplace
}
