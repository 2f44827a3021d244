package refresh_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// dependent returns a model with the daily schedule and upstreams orders
// and customers in the given mode, last succeeded at lastSuccess (zero:
// never).
func dependent(t *testing.T, mode string, lastSuccess time.Time) refresh.Model {
	t.Helper()
	m := transitionModel(t, `{`+parisSchedule+`, "timeout": "1h"}`)
	m.ID, m.Upstreams, m.UpstreamsMode = "report", []string{"orders", "customers"}, mode
	m.LastSuccessAt, m.RefreshAt = lastSuccess, occAfternoon
	return m
}

func TestUpstreamsReady(t *testing.T) {
	t.Parallel()
	success := morning.Add(-time.Hour)
	before, after := success.Add(-time.Minute), success.Add(time.Minute)
	up := func(id string, changed time.Time) refresh.Upstream {
		return refresh.Upstream{ID: id, LastChangedAt: changed}
	}
	ups := func(list ...refresh.Upstream) map[string]refresh.Upstream {
		out := map[string]refresh.Upstream{}
		for _, u := range list {
			out[u.ID] = u
		}
		return out
	}
	tests := []struct {
		name        string
		mode        string
		lastSuccess time.Time
		ups         map[string]refresh.Upstream
		want        bool
	}{
		{name: "all: both changed since", ups: ups(up("orders", after), up("customers", after)), lastSuccess: success, want: true},
		{name: "all: one changed before", ups: ups(up("orders", after), up("customers", before)), lastSuccess: success},
		{name: "all: changed exactly at the success is not later", ups: ups(up("orders", after), up("customers", success)), lastSuccess: success},
		{name: "all: a missing upstream blocks", ups: ups(up("orders", after)), lastSuccess: success},
		{name: "all: never succeeded, any change counts", ups: ups(up("orders", before), up("customers", before)), want: true},
		{name: "all: never succeeded, one never changed", ups: ups(up("orders", before), up("customers", time.Time{}))},
		{name: "mode all spelled out", mode: refresh.UpstreamsAll, ups: ups(up("orders", after), up("customers", after)), lastSuccess: success, want: true},
		{name: "any: one changed since", mode: refresh.UpstreamsAny, ups: ups(up("orders", before), up("customers", after)), lastSuccess: success, want: true},
		{name: "any: a missing one does not block", mode: refresh.UpstreamsAny, ups: ups(up("customers", after)), lastSuccess: success, want: true},
		{name: "any: none changed since", mode: refresh.UpstreamsAny, ups: ups(up("orders", before), up("customers", before)), lastSuccess: success},
		{name: "any: all missing", mode: refresh.UpstreamsAny, ups: ups(), lastSuccess: success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.UpstreamsReady(dependent(t, tt.mode, tt.lastSuccess), tt.ups))
		})
	}
	t.Run("no upstreams: never", func(t *testing.T) {
		t.Parallel()
		m := transitionModel(t, `{}`)
		require.False(t, refresh.UpstreamsReady(m, ups(up("orders", after))))
		require.Empty(t, refresh.UpstreamWaiting(m, nil))
	})
}

func TestUpstreamTrigger(t *testing.T) {
	t.Parallel()
	now := morning
	success := now.Add(-time.Hour)
	changed := map[string]refresh.Upstream{
		"orders":    {ID: "orders", LastChangedAt: now},
		"customers": {ID: "customers", LastChangedAt: now.Add(-time.Minute)},
	}
	tests := []struct {
		name   string
		state  func(t *testing.T, m refresh.Model) refresh.Model
		ups    map[string]refresh.Upstream
		from   string
		rule   string // of the trigger; "": no trigger
		why    string // part of Why
		noop   bool   // Decision.Unchanged
		paused bool
	}{
		{name: "the condition holds: a trigger now", ups: changed, from: "orders", rule: "trigger",
			why: "upstream orders, the last of its upstreams to change since its last success, changed at 2026-03-02T10:00:00Z; refresh requested"},
		{name: "the running attempt is superseded", ups: changed, from: "orders", rule: "trigger", why: "superseded",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				return runningAttempt(t, m, "u1", 1, now.Add(-time.Minute))
			}},
		{name: "a paused dependent plans for resume", ups: changed, from: "orders", rule: "trigger", paused: true,
			why:   "stays paused and starts when resumed",
			state: func(t *testing.T, m refresh.Model) refresh.Model { m.Paused = true; return m }},
		{name: "a disabled dependent stays disabled", ups: changed, from: "orders", rule: "trigger", noop: true,
			why: "leaves it disabled",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.DisabledAt, m.DisabledReason, m.RefreshAt, m.AttemptNo = now.Add(-time.Hour), "gone", null, 3
				return m
			}},
		{name: "a disabled dependent that debounces opens no window", ups: changed, from: "orders", rule: "trigger", noop: true,
			why: "leaves it disabled",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.Policy = mustPolicy(t, `{`+parisSchedule+`, "trigger_debounce": {"quiet": "1m", "max_wait": "10m"}}`)
				m.DisabledAt, m.DisabledReason, m.RefreshAt = now.Add(-time.Hour), "gone", null
				return m
			}},
		{name: "with debounce: through the window", ups: changed, from: "orders", rule: "trigger.debounce", why: "opens a debounce window",
			state: func(t *testing.T, m refresh.Model) refresh.Model {
				m.Policy = mustPolicy(t, `{`+parisSchedule+`, "trigger_debounce": {"quiet": "1m", "max_wait": "10m"}}`)
				return m
			}},
		{name: "waiting on a disabled upstream", from: "orders", ups: map[string]refresh.Upstream{
			"orders":    {ID: "orders", LastChangedAt: now},
			"customers": {ID: "customers", LastChangedAt: now.Add(-2 * time.Hour), Disabled: true, DisabledReason: "Refresh disabled after 3 failed attempt(s): upstream 503"},
		}, why: "waiting for customers, whose refresh is disabled: Refresh disabled after 3 failed attempt(s): upstream 503"},
		{name: "waiting on a missing upstream", from: "orders", ups: map[string]refresh.Upstream{"orders": {ID: "orders", LastChangedAt: now}},
			why: "waiting for customers, which does not exist"},
		{name: "not an upstream", from: "invoices", ups: changed, why: `"invoices" is not an upstream of the model`},
		{name: "from has not changed since the last success", from: "customers", ups: map[string]refresh.Upstream{
			"orders": {ID: "orders", LastChangedAt: now}, "customers": {ID: "customers", LastChangedAt: success},
		}, why: "upstream customers has not changed since the model's last success"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := dependent(t, "", success)
			if tt.state != nil {
				before = tt.state(t, before)
			}
			got, d := refresh.UpstreamTrigger(before, tt.ups, tt.from, now)
			require.Contains(t, d.Why, tt.why)
			if tt.rule == "" {
				require.Empty(t, d.Event)
				requireModel(t, before, got)
				return
			}
			require.Equal(t, refresh.EventTrigger, d.Event)
			require.Equal(t, tt.rule, d.Rule)
			require.Equal(t, refresh.CauseUpstream, d.Cause)
			require.Equal(t, tt.noop, d.Unchanged)
			if tt.noop {
				requireModel(t, before, got)
				return
			}
			require.Equal(t, "orders", d.Upstream)
			require.Equal(t, tt.paused, got.Paused)
			if tt.rule == "trigger" {
				requireTime(t, now, got.RefreshAt)
				require.Equal(t, !tt.paused, got.CanStart(now))
			} else {
				requireTime(t, occAfternoon, got.RefreshAt)
				requireTime(t, now.Add(time.Minute), got.DebounceAt)
				require.Equal(t, refresh.CauseUpstream, got.DebounceCause)
			}
		})
	}
}

func TestUpstreamWaiting(t *testing.T) {
	t.Parallel()
	success := morning.Add(-time.Hour)
	old := success.Add(-time.Hour)
	ups := map[string]refresh.Upstream{
		"orders":    {ID: "orders", LastChangedAt: old, Paused: true},
		"customers": {ID: "customers", LastChangedAt: old},
	}
	m := dependent(t, "", success)
	require.Equal(t, "waiting for orders, whose refresh is paused; customers to refresh", refresh.UpstreamWaiting(m, ups))
	m.UpstreamsMode = refresh.UpstreamsAny
	require.Equal(t, "waiting for any of its upstreams: orders, whose refresh is paused; customers to refresh", refresh.UpstreamWaiting(m, ups))
	ups["customers"] = refresh.Upstream{ID: "customers", LastChangedAt: morning}
	require.Empty(t, refresh.UpstreamWaiting(m, ups), "ready: not waiting")

	many := transitionModel(t, `{}`)
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many.Upstreams = append(many.Upstreams, id)
	}
	require.Equal(t, "waiting for a, which does not exist; b, which does not exist; c, which does not exist; "+
		"d, which does not exist; e, which does not exist; and 2 more", refresh.UpstreamWaiting(many, nil))
}

// TestUpstreamOf checks the view of a model as an upstream: failures,
// retries, snoozes, timeouts and unchanged successes leave its
// last_changed_at, so they trigger nothing.
func TestUpstreamOf(t *testing.T) {
	t.Parallel()
	now := morning
	dep := dependent(t, refresh.UpstreamsAny, now.Add(-time.Hour))
	up := transitionModel(t, `{"timeout": "1h", "retry": {"delays": ["1m"]}}`)
	up.ID, up.LastChangedAt = "orders", now.Add(-2*time.Hour)
	run := func() refresh.Model { return runningAttempt(t, up, "u1", 1, now.Add(-time.Minute)) }

	outcomes := []struct {
		name    string
		apply   func() refresh.Model
		trigger bool
	}{
		{name: "success", trigger: true, apply: func() refresh.Model {
			m, _ := refresh.ApplyOutcome(run(), refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess}, now)
			return m
		}},
		{name: "unchanged success", apply: func() refresh.Model {
			m, _ := refresh.ApplyOutcome(run(), refresh.Outcome{AttemptUID: "u1", Type: refresh.OutcomeSuccess, Unchanged: true}, now)
			return m
		}},
		{name: "failure", apply: func() refresh.Model { m, _ := refresh.Failed(run(), http503, now); return m }},
		{name: "snooze", apply: func() refresh.Model { m, _ := refresh.Snooze(run(), now.Add(time.Hour), now); return m }},
		{name: "timeout", apply: func() refresh.Model { m := run(); m, _ = refresh.Timeout(m, m.DeadlineAt); return m }},
	}
	for _, tt := range outcomes {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := refresh.UpstreamOf(tt.apply())
			require.Equal(t, "orders", u.ID)
			_, d := refresh.UpstreamTrigger(dep, map[string]refresh.Upstream{"orders": u}, "orders", now)
			require.Equal(t, tt.trigger, d.Event == refresh.EventTrigger, d.Why)
		})
	}

	disabled := up
	disabled.DisabledAt, disabled.DisabledReason, disabled.Paused = now, "gone", true
	require.Equal(t, refresh.Upstream{ID: "orders", LastChangedAt: up.LastChangedAt, Disabled: true, DisabledReason: "gone", Paused: true},
		refresh.UpstreamOf(disabled))
}

func TestCheckUpstreams(t *testing.T) {
	t.Parallel()
	long := make([]string, 4)
	for i := range long {
		long[i] = string(rune('a' + i))
	}
	tests := []struct {
		name string
		ups  []string
		mode string
		max  int
		want []refresh.FieldError
	}{
		{name: "none"},
		{name: "two, mode any", ups: []string{"orders", "customers"}, mode: "any"},
		{name: "mode all", ups: []string{"orders"}, mode: "all"},
		{name: "unknown mode", ups: []string{"orders"}, mode: "most",
			want: []refresh.FieldError{{Field: "upstreams_mode", Rule: `must be "all" or "any", got "most"`}}},
		{name: "itself", ups: []string{"orders", "report"},
			want: []refresh.FieldError{{Field: "upstreams[1]", Rule: "must not name the model itself"}}},
		{name: "repeated", ups: []string{"orders", "customers", "orders"},
			want: []refresh.FieldError{{Field: "upstreams[2]", Rule: "repeats upstreams[0]"}}},
		{name: "not an id", ups: []string{"a b"},
			want: []refresh.FieldError{{Field: "upstreams[0]", Rule: refresh.IDRule + `, got "a b"`}}},
		{name: "at the bound", ups: long, max: 4},
		{name: "past the bound", ups: long, max: 3,
			want: []refresh.FieldError{{Field: "upstreams", Rule: "must have at most 3 entries, got 4"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := refresh.CheckUpstreams("report", tt.ups, tt.mode, tt.max)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, &refresh.ValidationError{Fields: tt.want}, err)
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err))
		})
	}
	t.Run("default bound", func(t *testing.T) {
		t.Parallel()
		ids := make([]string, refresh.DefaultMaxUpstreams+1)
		for i := range ids {
			ids[i] = fmt.Sprint("m", i)
		}
		require.NoError(t, refresh.CheckUpstreams("report", ids[:refresh.DefaultMaxUpstreams], "", 0))
		var v *refresh.ValidationError
		require.True(t, errors.As(refresh.CheckUpstreams("report", ids, "", 0), &v))
		require.Equal(t, "upstreams", v.Fields[0].Field)
	})
}

func TestFindCycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{name: "empty"},
		{name: "a chain", graph: map[string][]string{"a": {"b"}, "b": {"c"}}},
		{name: "a diamond", graph: map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}},
		{name: "a self loop", graph: map[string][]string{"a": {"a"}}, want: []string{"a", "a"}},
		{name: "two models", graph: map[string][]string{"a": {"b"}, "b": {"a"}}, want: []string{"a", "b", "a"}},
		{name: "a cycle behind a chain", graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}},
			want: []string{"b", "c", "d", "b"}},
		{name: "missing ids have no upstreams", graph: map[string][]string{"a": {"x", "b"}, "b": {"y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.FindCycle(tt.graph))
		})
	}
	t.Run("a long chain does not recurse", func(t *testing.T) {
		t.Parallel()
		g := map[string][]string{}
		const n = 50000
		id := func(i int) string { return fmt.Sprint("m", i) }
		for i := range n - 1 {
			g[id(i)] = []string{id(i + 1)}
		}
		require.Nil(t, refresh.FindCycle(g))
		g[id(n-1)] = []string{id(0)}
		require.Len(t, refresh.FindCycle(g), n+1)
	})
}

func TestCheckUpstreamCycle(t *testing.T) {
	t.Parallel()
	graph := map[string][]string{"orders": {"raw"}, "raw": {"report"}, "customers": {"raw"}, "x": {"y"}, "y": {"x"}}
	cycle := func(path string) error {
		return &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "upstreams", Rule: "would make a cycle: " + path}}}
	}
	tests := []struct {
		name string
		id   string
		ups  []string
		want error
	}{
		{name: "no cycle", id: "report", ups: []string{"customers2"}},
		{name: "through two models", id: "report", ups: []string{"orders"}, want: cycle("report → orders → raw → report")},
		{name: "the shortest one is named", id: "report", ups: []string{"orders", "raw"}, want: cycle("report → raw → report")},
		{name: "a cycle elsewhere is not this write's", id: "report", ups: []string{"x"}},
		{name: "a new model", id: "new", ups: []string{"orders"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.CheckUpstreamCycle(tt.id, tt.ups, graph))
		})
	}
	require.Equal(t, []string{"raw"}, graph["orders"], "graph is not modified")
	_, has := graph["report"]
	require.False(t, has)
}

// TestBulkTrigger checks that a trigger of a bulk action is an API trigger
// with its cause: it clears a disabled model.
func TestBulkTrigger(t *testing.T) {
	t.Parallel()
	m := transitionModel(t, `{`+parisSchedule+`}`)
	m.DisabledAt, m.DisabledReason, m.AttemptNo, m.ConsecutiveFailures = morning.Add(-time.Hour), "gone", 3, 3
	got, d := refresh.TriggerFrom(m, refresh.CauseBulk, morning)
	require.Equal(t, refresh.EventTrigger, d.Event)
	require.Equal(t, refresh.CauseBulk, d.Cause)
	require.False(t, d.Unchanged)
	require.False(t, got.Disabled())
	requireTime(t, morning, got.RefreshAt)
	api, _ := refresh.Trigger(m, morning)
	requireModel(t, api, got)
}
