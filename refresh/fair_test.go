package refresh_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// FairOrder: by rank within the tenant, the tenants of a rank in the
// cyclic order after the turn of each model's limit, then refresh_at,
// then id.
func TestFairOrder(t *testing.T) {
	// The models: id, tenant (the id's prefix up to "-", "" for none),
	// refresh_at in seconds after t0.
	type m struct {
		id string
		at int
	}
	tenant := func(x refresh.Model) string {
		if i := strings.Index(x.ID, "-"); i >= 0 {
			return x.ID[:i+1]
		}
		return ""
	}
	// Every model's limit has the turn of the case, except the models
	// whose id ends with "~", whose limit's turn is "b-".
	tests := []struct {
		name string
		turn string
		ms   []m
		want []string
	}{
		{"one tenant: refresh_at then id", "a-", []m{{"x2", 1}, {"x1", 1}, {"x0", 2}}, []string{"x1", "x2", "x0"}},
		{"no turn yet: first tenant first, then the wrap to \"\"", "",
			[]m{{"z", 0}, {"b-1", 1}, {"a-1", 2}, {"a-2", 3}, {"b-2", 4}},
			[]string{"a-1", "b-1", "z", "a-2", "b-2"}},
		{"after a-: b-, c-, then \"\", a-", "a-",
			[]m{{"a-1", 0}, {"a-2", 0}, {"a-3", 0}, {"z", 5}, {"c-1", 9}, {"b-1", 8}},
			[]string{"b-1", "c-1", "z", "a-1", "a-2", "a-3"}},
		{"after the last tenant: wraps to \"\"", "c-",
			[]m{{"a-1", 0}, {"c-1", 0}, {"z", 9}},
			[]string{"z", "a-1", "c-1"}},
		{"after \"\": the first tenant", "",
			[]m{{"z1", 0}, {"z2", 0}, {"b-1", 9}, {"a-1", 8}},
			[]string{"a-1", "b-1", "z1", "z2"}},
		{"a turn between the tenants, tenant gone", "b-",
			[]m{{"a-1", 0}, {"c-1", 5}, {"a-2", 6}, {"c-2", 7}},
			[]string{"c-1", "a-1", "c-2", "a-2"}},
		{"bytewise names", "a-",
			[]m{{"B-1", 0}, {"b-1", 1}, {"a-1", 2}},
			[]string{"b-1", "B-1", "a-1"}},
		{"each model after its own limit's turn: a-2~ comes after the wrap", "",
			[]m{{"a-1", 0}, {"c-1~", 1}, {"a-2~", 2}, {"b-1", 3}, {"c-2~", 4}},
			[]string{"a-1", "b-1", "c-1~", "c-2~", "a-2~"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []refresh.Model
			for _, x := range tt.ms {
				ms = append(ms, refresh.Model{ID: x.id, State: refresh.State{RefreshAt: t0.Add(time.Duration(x.at) * time.Second)}})
			}
			refresh.FairOrder(ms, tenant, func(x refresh.Model) string {
				if strings.HasSuffix(x.ID, "~") {
					return "b-"
				}
				return tt.turn
			})
			var got []string
			for _, x := range ms {
				got = append(got, x.ID)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
