package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The tests of the rate limits and fair turns of docs/policy.md: each
// rate limit's log of starts, passed with the slots (Slots.Rates) and
// written from Batch.Starts; the tenants (Slots.Tenants); the order in
// which a limit's free starts and slots are offered to the models waiting
// for it (tenants in turn); the model fields of a rate wait.

// claimSlots claims up to limit models at now, passes them and the slots
// to fn and writes the batch it returns, and returns the ids claimed and
// the slots.
func claimSlots(t *testing.T, s refresh.Store, now time.Time, limit int, fn func(due []refresh.Model, slots refresh.Slots) refresh.Batch) ([]string, refresh.Slots) {
	t.Helper()
	var ids []string
	var slots refresh.Slots
	_, err := s.ClaimDue(context.Background(), now, limit, func(due []refresh.Model, sl refresh.Slots) (refresh.Batch, error) {
		ids, slots = nil, sl
		for _, m := range due {
			ids = append(ids, m.ID)
		}
		if fn == nil {
			return refresh.Batch{}, nil
		}
		return fn(due, sl), nil
	})
	require.NoError(t, err)
	return ids, slots
}

// rateLog returns the log of the limit named name in slots (Rates), its
// times in UTC and in time order, and whether slots has the limit.
func rateLog(slots refresh.Slots, name string) ([]refresh.RateStarts, bool) {
	i := slices.IndexFunc(slots.Limits, func(l refresh.Limit) bool { return l.Name() == name })
	if i < 0 {
		return nil, false
	}
	out := []refresh.RateStarts{}
	if i < len(slots.Rates) {
		for _, e := range slots.Rates[i] {
			out = append(out, refresh.RateStarts{At: e.At.UTC(), N: e.N})
		}
	}
	slices.SortStableFunc(out, func(a, b refresh.RateStarts) int { return a.At.Compare(b.At) })
	return out, true
}

// testRateLogs writes starts of rate limits through Batch.Starts and reads
// them back in the slots of the next claims: appended, entries older than
// per dropped, none for a limit without max_starts, gone with a deleted
// limit.
func testRateLogs(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	rated := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 5, Per: refresh.Duration(time.Minute), Burst: 2}
	both := refresh.Limit{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 3, MaxStarts: 100, Per: refresh.Duration(10 * time.Second)}
	plain := refresh.Limit{Kind: refresh.LimitPrefix, Key: "beta-", MaxRunning: 2}
	putLimits(t, s, rated, both, plain)
	// Due now and at every later claim (nothing moves them).
	put(t, s, model("acme-1", t0), model("beta-1", t0))

	starts := func(at time.Time, n ...int) func([]refresh.Model, refresh.Slots) refresh.Batch {
		return func([]refresh.Model, refresh.Slots) refresh.Batch {
			b := refresh.Batch{Starts: []refresh.LimitStarts{{Limit: rated.Name(), At: at, N: n[0]}}}
			if len(n) > 1 {
				b.Starts = append(b.Starts, refresh.LimitStarts{Limit: both.Name(), At: at, N: n[1]})
			}
			return b
		}
	}
	_, slots := claimSlots(t, s, t0, 10, starts(t0, 2, 1))
	require.Equal(t, []refresh.Limit{both, plain, rated}, slots.Limits)
	require.Len(t, slots.Rates, len(slots.Limits), "Rates is parallel to Limits")
	for _, name := range []string{rated.Name(), both.Name(), plain.Name()} {
		got, ok := rateLog(slots, name)
		require.True(t, ok, name)
		require.Empty(t, got, "no start yet: %s", name)
	}
	require.Empty(t, slots.Rates[1], "no log for a limit without max_starts")
	require.ElementsMatch(t, []string{"acme-", "beta-"}, slots.Tenants)

	_, slots = claimSlots(t, s, t0.Add(5*time.Second), 10, starts(t0.Add(5*time.Second), 1, 3))
	got, _ := rateLog(slots, rated.Name())
	require.Equal(t, []refresh.RateStarts{{At: t0, N: 2}}, got)
	got, _ = rateLog(slots, both.Name())
	require.Equal(t, []refresh.RateStarts{{At: t0, N: 1}}, got)

	_, slots = claimSlots(t, s, t0.Add(12*time.Second), 10, nil)
	got, _ = rateLog(slots, rated.Name())
	require.Equal(t, []refresh.RateStarts{{At: t0, N: 2}, {At: t0.Add(5 * time.Second), N: 1}}, got)
	got, _ = rateLog(slots, both.Name())
	require.Equal(t, []refresh.RateStarts{{At: t0.Add(5 * time.Second), N: 3}}, got, "the entry of t0 is older than per")

	// A start a minute after the first: that entry is dropped, the
	// others kept.
	_, _ = claimSlots(t, s, t0.Add(61*time.Second), 10, starts(t0.Add(61*time.Second), 1))
	_, slots = claimSlots(t, s, t0.Add(62*time.Second), 10, nil)
	got, _ = rateLog(slots, rated.Name())
	require.Equal(t, []refresh.RateStarts{{At: t0.Add(5 * time.Second), N: 1}, {At: t0.Add(61 * time.Second), N: 1}}, got)

	// A changed limit keeps its log; a deleted one loses it.
	changed := rated
	changed.MaxStarts = 9
	putLimits(t, s, changed)
	_, slots = claimSlots(t, s, t0.Add(63*time.Second), 10, nil)
	require.Contains(t, slots.Limits, changed, "a changed limit applies from the next claim")
	got, _ = rateLog(slots, rated.Name())
	require.Len(t, got, 2)
	require.NoError(t, s.DeleteLimit(ctx, rated.Kind, rated.Key))
	putLimits(t, s, rated)
	_, slots = claimSlots(t, s, t0.Add(64*time.Second), 10, nil)
	got, ok := rateLog(slots, rated.Name())
	require.True(t, ok)
	require.Empty(t, got, "a deleted limit's log is deleted with it")
}

// testRateFields writes and reads back the fields of a rate wait and the
// model's rate_key, and a rate limit's fields.
func testRateFields(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	m := model("rated", t0.Add(-time.Minute))
	m.RateKey = "api.example.com"
	m.WaitingForSlot, m.WaitingLimit = true, "rate_key:api.example.com"
	m.WaitingUntil, m.WaitingTenant, m.WaitTooLong = t0.Add(7*time.Second), "acme-", true
	put(t, s, m)
	requireRateFields := func(want refresh.Model) {
		t.Helper()
		got, err := s.Get(ctx, want.ID)
		require.NoError(t, err)
		require.Equal(t, want.RateKey, got.RateKey)
		require.Equal(t, want.WaitingForSlot, got.WaitingForSlot)
		require.Equal(t, want.WaitingLimit, got.WaitingLimit)
		require.True(t, want.WaitingUntil.Equal(got.WaitingUntil), "waiting_until %s, want %s", got.WaitingUntil, want.WaitingUntil)
		require.Equal(t, want.WaitingTenant, got.WaitingTenant)
		require.Equal(t, want.WaitTooLong, got.WaitTooLong)
		got.WaitingUntil, want.WaitingUntil = time.Time{}, time.Time{}
		require.Equal(t, normal(t, want), normal(t, got))
	}
	requireRateFields(m)
	// Claimed, the model carries them too.
	_, err := s.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		require.Len(t, due, 1)
		require.Equal(t, m.RateKey, due[0].RateKey)
		require.Equal(t, m.WaitingTenant, due[0].WaitingTenant)
		require.True(t, due[0].WaitingUntil.Equal(m.WaitingUntil))
		require.True(t, due[0].WaitTooLong)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
	// Each changes, back to zero too.
	for _, change := range []func(*refresh.Model){
		func(m *refresh.Model) { m.WaitingUntil, m.WaitingTenant = t0.Add(time.Hour), "" },
		func(m *refresh.Model) { m.RateKey = "other host" },
		func(m *refresh.Model) {
			m.WaitingForSlot, m.WaitingLimit, m.WaitingUntil, m.WaitingTenant, m.WaitTooLong = false, "", time.Time{}, "", false
		},
		func(m *refresh.Model) { m.RateKey = "" },
	} {
		change(&m)
		want := m
		require.NoError(t, s.Modify(ctx, []string{want.ID}, func([]refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: want}}}, nil
		}))
		requireRateFields(want)
	}

	// A rate limit keeps its fields; a limit of both kinds too.
	limits := []refresh.Limit{
		{Kind: refresh.LimitPrefix, Key: "acme-", MaxRunning: 4, MaxStarts: 10, Per: refresh.Duration(time.Minute), Burst: 3},
		{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 1, Per: refresh.Duration(24 * time.Hour)},
		{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 600, Per: refresh.Duration(time.Second)},
		{Kind: refresh.LimitRateKey, Key: "ünïcode host:8080", MaxRunning: 1},
	}
	putLimits(t, s, limits...)
	got, err := s.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, limits, got)
	_, err = s.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitRateKey, Key: "h", MaxStarts: 5, Per: refresh.Duration(time.Millisecond)}, false)
	requireCode(t, refresh.EINVALID, err)
	require.ErrorContains(t, err, "per: must be from 1s to 24h")
}

// waitingFor returns a model of tenant waiting for the limit named limit
// since refreshAt.
func waitingFor(id, limit, tenant string, refreshAt time.Time) refresh.Model {
	m := model(id, refreshAt)
	m.WaitingForSlot, m.WaitingLimit, m.WaitingTenant = true, limit, tenant
	return m
}

// testFairOffer offers a limit's free starts, then its free slots, to the
// models waiting for it with the tenants in turn: the first waiting model
// of each tenant (by refresh_at, then id), then the second of each...
func testFairOffer(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	rate := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 4, Per: refresh.Duration(time.Minute)}
	putLimits(t, s, rate)
	var ms []refresh.Model
	for i := range 5 { // acme- waits the longest
		ms = append(ms, waitingFor("acme-"+string(rune('1'+i)), rate.Name(), "acme-", t0.Add(time.Duration(i-10)*time.Minute)))
	}
	ms = append(ms,
		waitingFor("beta-1", rate.Name(), "beta-", t0.Add(-2*time.Minute)),
		waitingFor("beta-2", rate.Name(), "beta-", t0.Add(-time.Minute)),
		waitingFor("zed", rate.Name(), "", t0.Add(-time.Minute)),
		// A model that became due fills the batch of 1: only the offers
		// bring waiting models.
		model("new", t0.Add(-time.Second)))
	put(t, s, ms...)

	// 4 free starts: the first of each tenant, then acme-'s second.
	ids, _ := claimSlots(t, s, t0, 1, func([]refresh.Model, refresh.Slots) refresh.Batch {
		return refresh.Batch{Starts: []refresh.LimitStarts{{Limit: rate.Name(), At: t0, N: 3}}}
	})
	require.ElementsMatch(t, []string{"new", "acme-1", "beta-1", "zed", "acme-2"}, ids)
	// 3 of them started: 1 free start left.
	ids, _ = claimSlots(t, s, t0.Add(time.Second), 1, nil)
	require.ElementsMatch(t, []string{"new", "acme-1"}, ids)
	// The starts leave the window: 4 free again.
	ids, _ = claimSlots(t, s, t0.Add(time.Minute), 1, func([]refresh.Model, refresh.Slots) refresh.Batch {
		return refresh.Batch{Starts: []refresh.LimitStarts{{Limit: rate.Name(), At: t0.Add(time.Minute), N: 4}}}
	})
	require.ElementsMatch(t, []string{"new", "acme-1", "beta-1", "zed", "acme-2"}, ids)
	// Full: none offered.
	ids, _ = claimSlots(t, s, t0.Add(time.Minute+time.Second), 1, nil)
	require.Equal(t, []string{"new"}, ids)

	// Free slots of a concurrency limit go in the same order: 3 slots, 1
	// taken. The models wait for queue:tables still, now a concurrency
	// limit.
	require.NoError(t, s.DeleteLimit(ctx, rate.Kind, rate.Key))
	slot := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxRunning: 3}
	putLimits(t, s, slot)
	put(t, s, running("run", "tables"))
	ids, _ = claimSlots(t, s, t0.Add(2*time.Minute), 1, nil)
	require.ElementsMatch(t, []string{"new", "acme-1", "beta-1"}, ids)
}

// testDeleteLimitReleases deletes a full rate limit: the models waiting
// for it are claimed at once (with no limit covering them), and put back,
// the limit starts with an empty log.
func testDeleteLimitReleases(t *testing.T, s refresh.Store) {
	ctx := context.Background()
	rate := refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 2, Per: refresh.Duration(time.Hour)}
	putLimits(t, s, rate)
	var ms []refresh.Model
	for _, id := range []string{"w1", "w2", "w3"} {
		m := waitingFor(id, rate.Name(), "", t0.Add(-time.Minute))
		m.RateKey = rate.Key
		ms = append(ms, m)
	}
	put(t, s, append(ms, model("new", t0))...)
	claimSlots(t, s, t0, 1, func([]refresh.Model, refresh.Slots) refresh.Batch {
		return refresh.Batch{Starts: []refresh.LimitStarts{{Limit: rate.Name(), At: t0, N: 2}}}
	})
	ids, _ := claimSlots(t, s, t0.Add(time.Second), 1, nil)
	require.Equal(t, []string{"new"}, ids, "the limit is full: none offered")

	require.NoError(t, s.DeleteLimit(ctx, rate.Kind, rate.Key))
	ids, slots := claimSlots(t, s, t0.Add(2*time.Second), 1, nil)
	require.ElementsMatch(t, []string{"new", "w1"}, ids, "the waiters of a deleted limit are offered at once (up to the batch size)")
	for _, l := range slots.Limits {
		require.NotEqual(t, rate.Name(), l.Name())
	}

	putLimits(t, s, rate)
	ids, slots = claimSlots(t, s, t0.Add(3*time.Second), 1, nil)
	require.ElementsMatch(t, []string{"new", "w1", "w2"}, ids, "put back, the limit has 2 free starts")
	got, ok := rateLog(slots, rate.Name())
	require.True(t, ok)
	require.Empty(t, got)
}

// turnOf returns the turn of the limit named name in slots (Turns), and
// whether slots has the limit.
func turnOf(slots refresh.Slots, name string) (string, bool) {
	i := slices.IndexFunc(slots.Limits, func(l refresh.Limit) bool { return l.Name() == name })
	if i < 0 || i >= len(slots.Turns) {
		return "", false
	}
	return slots.Turns[i], true
}

// testFairOfferTurn offers a limit's one free slot pass after pass: the
// limit keeps the tenant of the last start of a batch under it (its
// turn, passed in the slots), and each offer starts with the first tenant
// waiting after it, bytewise, wrapping around (the tenant "" of the
// models under no prefix comes first after the wrap), whichever waits
// the longest.
func testFairOfferTurn(t *testing.T, s refresh.Store) {
	slot := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxRunning: 1}
	putLimits(t, s, slot)
	put(t, s,
		waitingFor("acme-1", slot.Name(), "acme-", t0.Add(-10*time.Minute)), // waits the longest
		waitingFor("acme-2", slot.Name(), "acme-", t0.Add(-9*time.Minute)),
		waitingFor("beta-1", slot.Name(), "beta-", t0.Add(-2*time.Minute)),
		waitingFor("zed", slot.Name(), "", t0.Add(-time.Minute)),
		// A model that became due fills the batch of 1: only the offer
		// brings waiting models.
		model("new", t0.Add(-time.Second)))
	startBy := func(tenant string) func([]refresh.Model, refresh.Slots) refresh.Batch {
		return func([]refresh.Model, refresh.Slots) refresh.Batch {
			return refresh.Batch{Starts: []refresh.LimitStarts{{Limit: slot.Name(), At: t0, N: 1, Tenant: tenant}}}
		}
	}

	// No start yet: the turn is "", and acme- is the first tenant after it.
	ids, slots := claimSlots(t, s, t0, 1, startBy("beta-"))
	require.ElementsMatch(t, []string{"new", "acme-1"}, ids)
	turn, ok := turnOf(slots, slot.Name())
	require.True(t, ok)
	require.Equal(t, "", turn)
	// After beta-, the turns wrap around to "".
	ids, slots = claimSlots(t, s, t0, 1, startBy(""))
	require.ElementsMatch(t, []string{"new", "zed"}, ids)
	turn, _ = turnOf(slots, slot.Name())
	require.Equal(t, "beta-", turn)
	// After "", acme-.
	ids, slots = claimSlots(t, s, t0, 1, startBy("acme-"))
	require.ElementsMatch(t, []string{"new", "acme-1"}, ids)
	turn, _ = turnOf(slots, slot.Name())
	require.Equal(t, "", turn)
	// After acme-, beta-, however long acme-'s models have waited.
	ids, _ = claimSlots(t, s, t0, 1, nil)
	require.ElementsMatch(t, []string{"new", "beta-1"}, ids)
}
