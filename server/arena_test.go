package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"metad/evict"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// Tests of the arena path (docs/design.md, "Allocation arenas") over the fake backend: its leader
// holds the lease, so PutStarts of new keys are answered from the leader's arenas and only their
// PutEnds reach the log, as on a real leader.

// arenaHarnessOver is a harness over the backend b whose leader holds the leader lease and runs
// the arena keeper (every quarter of the fake lease).
func arenaHarnessOver(t testing.TB, b *fakeBackend, mut func(*config)) *harness {
	t.Helper()
	b.Lease.Store(true)
	cfg := testConfig()
	cfg.NoArenas = false
	if mut != nil {
		mut(&cfg)
	}
	return start(t, b, cfg)
}

// awaitArenas puts objects of the default tenant until the leader answers a PutStart from its
// arenas on every one of segs (the keeper asks for arenas once a PutStart reached the leader in
// its term), each preferring one segment.
func (h *harness) awaitArenas(t testing.TB, segs ...alloc.ID) {
	t.Helper()
	ctx := tctx(t)
	deadline := time.Now().Add(10 * time.Second)
	for i, seg := range segs {
		for n := 0; ; n++ {
			key := []byte(fmt.Sprintf("warm-%s-%d", seg, n))
			resp, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64,
				Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(seg)}}})
			if err != nil {
				t.Fatalf("PutStart %q: %v", key, err)
			}
			if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: key}); err != nil {
				t.Fatalf("PutEnd %q: %v", key, err)
			}
			if reserved(resp.GetReplicas()) && string(resp.GetReplicas()[0].GetSegmentId()) == string(idb(seg)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no PutStart answered from an arena on segment %d of %d after 10s", i+1, len(segs))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// reserve runs a PutStart of key and fails the test unless the leader answered it from its arenas.
func (h *harness) reserve(t testing.TB, tenant, key string, size uint64, cfg *metadv1.ReplicaConfig) []*metadv1.Replica {
	t.Helper()
	resp, err := h.meta.PutStart(tctx(t), &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size, Config: cfg})
	if err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if !reserved(resp.GetReplicas()) {
		t.Fatalf("PutStart %q went through the log; want it answered from the arenas", key)
	}
	return resp.GetReplicas()
}

// reserved reports whether a PutStart's answer came from the arenas: its replicas have no replica
// id yet (PutCommit draws them), where every replica placed through the log has one.
func reserved(reps []*metadv1.Replica) bool {
	for _, r := range reps {
		if r.GetReplicaId() != 0 {
			return false
		}
	}
	return len(reps) > 0
}

// reasonOf is the reason of a call's error (REASON_UNSPECIFIED for none or one without a reason).
func reasonOf(err error) metadv1.Reason {
	if d := detailOf(err); err != nil && d != nil {
		return d.GetReason()
	}
	return metadv1.Reason_REASON_UNSPECIFIED
}

// evictNode is the evictor's view of the fake backend (evict.Node): every proposal goes straight to
// it, one slot at a time.
type evictNode struct{ b *fakeBackend }

func (n evictNode) Store() *store.Store { return n.b.Store() }
func (n evictNode) IsLeader() bool      { return n.b.IsLeader() }
func (n evictNode) TryReserve() (evict.Slot, bool) {
	if !n.b.IsLeader() {
		return nil, false
	}
	return evictSlot(n), true
}

type evictSlot struct{ b *fakeBackend }

func (s evictSlot) Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	return s.b.Propose(ctx, cmd)
}
func (s evictSlot) Release() {}

// withEvictor gives the harness's service a real evictor over b, as cmd/metad does.
func withEvictor(t testing.TB, b *fakeBackend) func(*config) {
	ev, err := evict.New(evict.DefaultConfig(), evictNode{b}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *config) { c.Evictor = ev }
}

// TestQuotaEvictionOnTheArenaPath: a PutStart over its tenant's quota evicts the tenant's own
// objects and is admitted, as on the log path (SEMANTICS section 6), when the objects that hold
// the quota were committed from reservations and the new put would be answered from the arenas.
func TestQuotaEvictionOnTheArenaPath(t *testing.T) {
	b := newFakeBackend(t, nil)
	h := arenaHarnessOver(t, b, withEvictor(t, b))
	ctx := tctx(t)
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	const tenant, obj = "tq", 20 << 10
	if _, err := h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: tenant, QuotaBytes: 2*obj + obj/2}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		h.reserve(t, tenant, k, obj, nil)
		if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(k)}); err != nil {
			t.Fatalf("PutEnd %q: %v", k, err)
		}
	}
	time.Sleep(2 * time.Millisecond) // past the PutEnds' leases (they protect nothing once passed)
	resp, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte("c"), Size: obj})
	if err != nil {
		t.Fatalf("PutStart over the quota held by committed objects: %v; want a evicted and c admitted", err)
	}
	if !reserved(resp.GetReplicas()) {
		t.Logf("c went through the log")
	}
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Tenant: tenant, Key: []byte("a")}); reasonOf(err) != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("Get a: %v; want OBJECT_NOT_FOUND (evicted for c)", err)
	}
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Tenant: tenant, Key: []byte("b")}); err != nil {
		t.Fatalf("Get b: %v; want it kept (one eviction was enough)", err)
	}
}
