package service_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
)

// Tests of the shared tiers through the service: a filesystem root (DISK) and a DFS pool.

var rootSeg, poolSeg = alloc.ID{0x5f, 15: 1}, alloc.ID{0x5f, 15: 2}

// fileDesc is a segment of a file tier (base 0): a root's directory or a pool's file.
func fileDesc(id alloc.ID, tier metadv1.Tier, size uint64, endpoint string) *metadv1.SegmentDesc {
	return &metadv1.SegmentDesc{Id: idb(id), Name: "files-" + id.String()[:8], Size: size, Endpoint: endpoint, Tier: tier}
}

// mountShared mounts a 1 MiB shared root and a 1 MiB DFS pool, both by clientB.
func (h *harness) mountShared(t testing.TB) {
	t.Helper()
	for _, d := range []*metadv1.SegmentDesc{fileDesc(rootSeg, metadv1.Tier_TIER_DISK, 1<<20, "/mnt/shared/c1"),
		fileDesc(poolSeg, metadv1.Tier_TIER_DFS, 1<<20, "dfs://pool-1/blocks")} {
		if _, err := h.svc.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientB), Segment: d}); err != nil {
			t.Fatalf("mount %s: %v", d.GetTier(), err)
		}
	}
}

// tiersOf lists the tiers of reps in order.
func tiersOf(reps []*metadv1.Replica) []metadv1.Tier {
	var out []metadv1.Tier
	for _, r := range reps {
		out = append(out, r.GetTier())
	}
	return out
}

// TestSharedTierCalls: DISK and DFS segments mount with base 0 (a base, or a LOCAL_DISK tier, is
// refused); a put asking for a DFS replica gets one, and the shared root's DISK one unasked; Get
// lists them after the memory replica, DISK before DFS; EvictDiskReplica of DISK files drops the
// DISK replica whoever reports it, and refuses another tier; the tier metrics count them.
func TestSharedTierCalls(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	bad := fileDesc(rootSeg, metadv1.Tier_TIER_DISK, 1<<20, "/mnt/shared/c1")
	bad.Base = 1 << 30
	_, err := h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientB), Segment: bad})
	wantInvalid(t, err, "segment.base")
	h.mountShared(t)

	cfg := &metadv1.ReplicaConfig{DfsReplicas: 1}
	_, err = h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 4096,
		Config: &metadv1.ReplicaConfig{DfsReplicas: store.MaxDFSReplicas + 1}})
	wantInvalid(t, err, "config.dfs_replicas")
	ps, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 4096, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	want := []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS}
	if got := tiersOf(ps.GetReplicas()); !slices.Equal(got, want) {
		t.Fatalf("PutStart replicas %v, want %v", got, want)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), want) {
		t.Fatalf("Get = %v, %v; want tiers %v", g, err, want)
	}
	d := g.GetReplicas()[1]
	if d.GetSegmentEndpoint() != "/mnt/shared/c1" || d.GetBaseAddress() != 0 || len(d.GetOwnerClientId()) != 0 {
		t.Fatalf("DISK replica %v: want the root's directory as its endpoint, no base, no owner", d)
	}
	h.put(t, "", "plain", 64) // no DFS asked: memory and the root
	g, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("plain")})
	if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_DISK}) {
		t.Fatalf("Get plain = %v, %v", g, err)
	}
	pollUntil(t, "the tier gauges", 5*time.Second, func() bool {
		return metricValue(t, h, "metad_server_store_tier_objects", map[string]string{"tier": "disk"}) == 2 &&
			metricValue(t, h, "metad_server_store_tier_objects", map[string]string{"tier": "dfs"}) == 1 &&
			metricValue(t, h, "metad_server_store_segments", map[string]string{"tier": "disk"}) == 1
	})

	evictDisk := func(tier metadv1.Tier, keys ...string) (*metadv1.EvictDiskReplicaResponse, error) {
		req := &metadv1.EvictDiskReplicaRequest{ClientId: idb(clientB), Tier: tier}
		for _, k := range keys {
			req.Keys = append(req.Keys, []byte(k))
		}
		return h.svc.EvictDiskReplica(ctx, req)
	}
	_, err = evictDisk(metadv1.Tier_TIER_DFS, "k")
	wantInvalid(t, err, "tier")
	r, err := evictDisk(metadv1.Tier_TIER_DISK, "k", "nope")
	if got := reasons(r.GetResults()); err != nil || got[0] != metadv1.Reason_REASON_UNSPECIFIED || got[1] != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("EvictDiskReplica(DISK) = %v, %v", got, err)
	}
	g, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_DFS}) {
		t.Fatalf("Get k after its DISK file went = %v, %v", g, err)
	}
}

// TestSharedTiersSurviveTheirWritersExpiry: the writer of an object on the shared tiers and the
// client that mounted them both stop pinging; the writer's memory segment is unmounted, the root
// and the pool stay, and the object is read from them (the old master erased intact shared-FS
// data here).
func TestSharedTiersSurviveTheirWritersExpiry(t *testing.T) {
	clk := servicetest.NewClock()
	cfg := withClock(clk, testConfig())
	cfg.ClientTTL = time.Second
	h := start(t, servicetest.NewBackend(t, clk.Now), cfg)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mountShared(t)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 4096,
		Config: &metadv1.ReplicaConfig{DfsReplicas: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	segs := h.b.Store().Segments()
	deadline := time.Now().Add(10 * time.Second)
	for len(segs.SegmentsOf(clientA)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the writer was never expired")
		}
		clk.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond) // poll interval, not synchronisation: the loop re-checks
	}
	// A third client mounts and falls silent too: once it has expired, a sweep has run many ttls
	// past the silence of the shared segments' mounter, which it leaves alone.
	clientC, segC := alloc.ID{0xc1, 15: 0x33}, alloc.ID{0x5e, 15: 0x33}
	h.mount(t, clientC, segC)
	clk.Advance(10 * time.Second)
	pollUntil(t, "the third client's expiry", 10*time.Second, func() bool { return len(segs.SegmentsOf(clientC)) == 0 })
	if got := segs.SegmentsOf(clientB); !slices.Equal(got, []alloc.ID{rootSeg, poolSeg}) {
		t.Fatalf("the shared segments' mounter has %v after its silence, want both kept", got)
	}
	g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), []metadv1.Tier{metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS}) {
		t.Fatalf("Get after the writer's expiry = %v, %v; want the DISK and DFS replicas", g, err)
	}
}

// TestSharedTiersOnTheArenaPath: with arenas, a put still lands on the shared root and gets its
// DFS replica, answered from arenas on all three tiers once the keeper has stocked them.
func TestSharedTiersOnTheArenaPath(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mountShared(t)
	want := []metadv1.Tier{metadv1.Tier_TIER_MEMORY, metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS}
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		key := []byte(fmt.Sprintf("k%d", n))
		ps, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64,
			Config: &metadv1.ReplicaConfig{DfsReplicas: 1}})
		if err != nil {
			t.Fatalf("PutStart %s: %v", key, err)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: key}); err != nil {
			t.Fatalf("PutEnd %s: %v", key, err)
		}
		g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: key})
		if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), want) {
			t.Fatalf("Get %s = %v, %v; want tiers %v (reserved: %v)", key, g, err, want, reserved(ps.GetReplicas()))
		}
		if reserved(ps.GetReplicas()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no PutStart answered from arenas on the three tiers after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := h.b.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestPromotionOnHitBesideASharedRoot: an object on a worker's SSD and on the shared root, and in
// no memory, is promoted on hit as one on the SSD alone is (its DISK replica does not hide it).
func TestPromotionOnHitBesideASharedRoot(t *testing.T) {
	cfg := testConfig()
	cfg.PromoteOnHit = true
	h := start(t, servicetest.NewBackend(t, nil), cfg)
	ctx := tctx(t)
	h.mountShared(t)
	h.diskOnly(t, "hot")
	for range 2 {
		g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("hot")})
		if err != nil || !slices.Equal(tiersOf(g.GetReplicas()), []metadv1.Tier{metadv1.Tier_TIER_LOCAL_DISK, metadv1.Tier_TIER_DISK}) {
			t.Fatalf("Get = %v, %v; want the LOCAL_DISK and DISK replicas", g, err)
		}
	}
	pollUntil(t, "the promotion queued", 5*time.Second, func() bool { return h.b.Store().Tasks().Promotions() == 1 })
}
