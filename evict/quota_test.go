package evict

import (
	"context"
	"slices"
	"testing"
	"time"

	"metad/store"
)

// TestTenantQuotaEviction: a tenant over its quota gets exactly its deficit freed from its own
// objects, oldest lease first and soft-pinned last; no other tenant is touched.
func TestTenantQuotaEviction(t *testing.T) {
	x := newFixture(t, nil)
	if _, err := x.s.RegisterTenant("alpha", 20*slot); err != nil {
		t.Fatal(err)
	}
	if _, err := x.s.RegisterTenant("beta", 0); err != nil {
		t.Fatal(err)
	}
	// alpha: 20 objects, its whole quota; the 4 oldest are soft-pinned. beta: 30 older objects.
	for i := range 30 {
		x.put("b"+key(i), ofTenant("beta"))
		x.lease("beta", "b"+key(i), t0+int64(i+1)*int64(time.Millisecond))
	}
	for i := range 20 {
		if i < 4 {
			x.put(key(i), ofTenant("alpha"), softPinned)
		} else {
			x.put(key(i), ofTenant("alpha"))
		}
		x.lease("alpha", key(i), t0+int64(100+i)*int64(time.Millisecond))
	}
	beta := x.versions("beta")
	x.clock.Store(evalAt)
	ctx := context.Background()

	// A put of 3 more objects needs 3 slots of quota: the 3 oldest unpinned go (k004..k006).
	deficit := QuotaDeficit(x.s, "alpha", 3*slot)
	if deficit != 3*slot {
		t.Fatalf("deficit %d, want %d", deficit, 3*slot)
	}
	freed, err := x.ev.EvictTenant(ctx, "alpha", deficit)
	if err != nil || freed != deficit {
		t.Fatalf("EvictTenant freed %d, %v; want %d", freed, err, deficit)
	}
	if got := x.keys("alpha"); !slices.Equal(got, sorted(append([]string{key(0), key(1), key(2), key(3)}, keyRange(7, 20)...))) {
		t.Fatalf("alpha kept %v", got)
	}
	if QuotaDeficit(x.s, "alpha", 3*slot) != 0 {
		t.Fatal("still over quota after the eviction")
	}
	// Everything unpinned leased now except one: asking for 3 more takes it, then 2 soft-pinned.
	for i := 8; i < 20; i++ {
		x.lease("alpha", key(i), evalAt)
	}
	freed, err = x.ev.EvictTenant(ctx, "alpha", 3*slot)
	if err != nil || freed != 3*slot {
		t.Fatalf("second EvictTenant freed %d, %v", freed, err)
	}
	if got := x.keys("alpha"); !slices.Equal(got, sorted(append([]string{key(2), key(3)}, keyRange(8, 20)...))) {
		t.Fatalf("alpha kept %v", got)
	}
	if got := x.versions("beta"); !mapsEqual(got, beta) {
		t.Fatal("quota eviction of alpha touched beta")
	}
	// Unregistered or quota-less tenants have no deficit.
	if QuotaDeficit(x.s, "beta", 1<<40) != 0 || QuotaDeficit(x.s, "nobody", 1) != 0 {
		t.Fatal("deficit without a quota")
	}
	x.check()
}

func keyRange(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, key(i))
	}
	return out
}

// versions maps the tenant's keys to their object id and version.
func (x *fixture) versions(tenant string) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, k := range x.keys(tenant) {
		_ = x.s.WithObject(tenant, k, func(o *store.LockedObject) error {
			out[k] = [2]uint64{o.State().ID, o.State().Version}
			return nil
		})
	}
	return out
}

func mapsEqual(a, b map[string][2]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
