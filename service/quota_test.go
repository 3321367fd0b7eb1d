package service_test

import (
	"context"
	"testing"
	"time"

	"metad/evict"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
)

// quotaEvictor is a service.Evictor whose tenant-quota eviction is the function and whose loop does
// nothing.
type quotaEvictor func(ctx context.Context, tenant string, deficit uint64) (uint64, error)

func (q quotaEvictor) EvictTenant(ctx context.Context, tenant string, deficit uint64) (uint64, error) {
	return q(ctx, tenant, deficit)
}
func (quotaEvictor) Kick() {}
func (quotaEvictor) Run(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// evictNode is the evictor's view of the in-memory backend (evict.Node): every proposal goes
// straight to it, one slot at a time.
type evictNode struct{ b *servicetest.Backend }

func (n evictNode) Store() *store.Store { return n.b.Store() }
func (n evictNode) IsLeader() bool      { return n.b.IsLeader() }
func (n evictNode) TryReserve() (evict.Slot, bool) {
	if !n.b.IsLeader() {
		return nil, false
	}
	return evictSlot(n), true
}

type evictSlot struct{ b *servicetest.Backend }

func (s evictSlot) Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	return s.b.Propose(ctx, cmd)
}
func (s evictSlot) Release() {}

// TestQuotaEvictionRetriesThePut: a PutStart over the tenant's quota has the evictor evict for the
// deficit and tries again, at most twice; when the evictor frees room the put succeeds. An evictor
// that frees nothing leaves the rejection standing, after one call.
func TestQuotaEvictionRetriesThePut(t *testing.T) {
	b := servicetest.NewBackend(t, nil)
	calls := 0
	cfg := testConfig()
	cfg.Evictor = quotaEvictor(func(ctx context.Context, tenant string, deficit uint64) (uint64, error) {
		calls++
		if deficit != 200 { // 600 charged + 600 wanted - 1000 of quota
			t.Errorf("evictor asked for %d bytes, want 200", deficit)
		}
		if calls == 2 { // the second round frees the old object
			if err := b.Store().Remove(1, tenant, "old", true); err != nil {
				t.Error(err)
			}
			return 600, nil
		}
		return 1, nil // freed something, not enough
	})
	h := start(t, b, cfg)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "q", QuotaBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	put := func(h *harness, key string) error {
		_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "q", ClientId: idb(clientA), Key: []byte(key), Size: 600})
		return err
	}
	if err := put(h, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: "q", ClientId: idb(clientA), Key: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if err := put(h, "new"); err != nil {
		t.Fatalf("put after quota eviction: %v (evictor called %d times)", err, calls)
	}
	if calls != 2 {
		t.Fatalf("evictor called %d times, want 2", calls)
	}
	calls = 0
	cfg.Evictor = quotaEvictor(func(context.Context, string, uint64) (uint64, error) { calls++; return 0, nil })
	h2 := start(t, servicetest.NewBackend(t, nil), cfg)
	h2.mount(t, clientA, segA)
	if _, err := h2.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "q", QuotaBytes: 100}); err != nil {
		t.Fatal(err)
	}
	wantReason(t, put(h2, "k"), store.TenantQuotaExceeded)
	if calls != 1 {
		t.Fatalf("evictor called %d times, want 1", calls)
	}
}

// TestQuotaEvictionOnTheArenaPath: a PutStart over its tenant's quota evicts the tenant's own
// objects and is admitted, as on the log path (SEMANTICS section 6), when the objects that hold
// the quota were committed from reservations and the new put would be answered from the arenas.
func TestQuotaEvictionOnTheArenaPath(t *testing.T) {
	b := servicetest.NewBackend(t, nil)
	b.Lease.Store(true)
	ev, err := evict.New(evict.DefaultConfig(), evictNode{b}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.NoArenas = false
	cfg.Evictor = ev
	h := start(t, b, cfg)
	ctx := tctx(t)
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	const tenant, obj = "tq", 20 << 10
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: tenant, QuotaBytes: 2*obj + obj/2}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		h.reserve(t, tenant, k, obj, nil)
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(k)}); err != nil {
			t.Fatalf("PutEnd %q: %v", k, err)
		}
	}
	time.Sleep(2 * time.Millisecond) // past the PutEnds' leases (they protect nothing once passed)
	resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte("c"), Size: obj})
	if err != nil {
		t.Fatalf("PutStart over the quota held by committed objects: %v; want a evicted and c admitted", err)
	}
	if !reserved(resp.GetReplicas()) {
		t.Logf("c went through the log")
	}
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Tenant: tenant, Key: []byte("a")}); reasonOf(err) != store.ObjectNotFound {
		t.Fatalf("Get a: %v; want OBJECT_NOT_FOUND (evicted for c)", err)
	}
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Tenant: tenant, Key: []byte("b")}); err != nil {
		t.Fatalf("Get b: %v; want it kept (one eviction was enough)", err)
	}
}
