package service_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
)

// TestLocalDiskCalls: the LOCAL_DISK tier's four calls through the service. Bad input is refused
// with nothing proposed; a worker registers its SSD (idempotently), reports offloads (a Get then
// names the disk replica after the memory one, with its owner and endpoint), reports the files it
// removed, and unmounts; the registration and its replicas survive a snapshot restore.
func TestLocalDiskCalls(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k1", 4096)
	h.put(t, "", "k2", 4096)

	mountDisk := func(client alloc.ID, capacity uint64, endpoint string) (*metadv1.MountLocalDiskResponse, error) {
		return h.svc.MountLocalDisk(ctx, &metadv1.MountLocalDiskRequest{ClientId: idb(client), CapacityBytes: capacity,
			Endpoint: endpoint, Offload: true})
	}
	_, err := mountDisk(clientA, 0, "host-a:9000")
	wantInvalid(t, err, "capacity_bytes")
	_, err = mountDisk(clientA, 1<<49, "host-a:9000")
	wantInvalid(t, err, "capacity_bytes")
	_, err = mountDisk(clientA, 1<<30, "")
	wantInvalid(t, err, "endpoint")
	desc := segDesc(alloc.LocalDiskID(clientA), 0, 1<<20)
	desc.Tier = metadv1.Tier_TIER_LOCAL_DISK
	_, err = h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: desc})
	wantInvalid(t, err, "segment.tier")
	_, err = h.svc.NotifyOffload(ctx, &metadv1.NotifyOffloadRequest{ClientId: idb(clientA),
		Results: []*metadv1.OffloadResult{{Key: []byte("k1"), Size: 4096, Success: true}}})
	wantReason(t, err, store.SegmentNotFound)

	resp, err := mountDisk(clientA, 1<<30, "host-a:9000")
	if err != nil || !resp.GetCreated() || !bytes.Equal(resp.GetSegmentId(), idb(alloc.LocalDiskID(clientA))) {
		t.Fatalf("MountLocalDisk = %v, %v", resp, err)
	}
	if resp, err := mountDisk(clientA, 1<<30, "host-a:9000"); err != nil || resp.GetCreated() {
		t.Fatalf("the same registration again = %v, %v; want a no-op", resp, err)
	}
	_, err = mountDisk(clientA, 1<<31, "host-a:9000")
	wantReason(t, err, store.InvalidParams)

	report := func(results ...*metadv1.OffloadResult) ([]metadv1.Reason, error) {
		r, err := h.svc.NotifyOffload(ctx, &metadv1.NotifyOffloadRequest{ClientId: idb(clientA), Results: results})
		return reasons(r.GetResults()), err
	}
	_, err = report()
	wantInvalid(t, err, "results")
	_, err = report(&metadv1.OffloadResult{Key: []byte("k1"), Size: 4096, Success: true}, &metadv1.OffloadResult{Key: []byte("k1"), Size: 4096, Success: true})
	wantInvalid(t, err, "results[1]")
	_, err = report(&metadv1.OffloadResult{Key: []byte("k1"), Success: true})
	wantInvalid(t, err, "results[0]")
	got, err := report(&metadv1.OffloadResult{Key: []byte("k1"), Size: 4096, Success: true},
		&metadv1.OffloadResult{Key: []byte("k2"), Size: 4096, Success: false},
		&metadv1.OffloadResult{Key: []byte("nope"), Size: 4096, Success: true})
	if err != nil || got[0] != metadv1.Reason_REASON_UNSPECIFIED || got[1] != metadv1.Reason_REASON_UNSPECIFIED ||
		got[2] != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("NotifyOffload = %v, %v", got, err)
	}

	checkGet := func(when string) {
		t.Helper()
		g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")})
		if err != nil || len(g.GetReplicas()) != 2 {
			t.Fatalf("%s: Get k1 = %v, %v; want two replicas", when, g, err)
		}
		m, d := g.GetReplicas()[0], g.GetReplicas()[1]
		if m.GetTier() != metadv1.Tier_TIER_MEMORY || len(m.GetOwnerClientId()) != 0 {
			t.Fatalf("%s: first replica %v, want the memory one", when, m)
		}
		if d.GetTier() != metadv1.Tier_TIER_LOCAL_DISK || !bytes.Equal(d.GetOwnerClientId(), idb(clientA)) ||
			d.GetSegmentEndpoint() != "host-a:9000" || d.GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
			t.Fatalf("%s: disk replica %v", when, d)
		}
	}
	checkGet("after the report")
	ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{Tier: metadv1.Tier_TIER_LOCAL_DISK})
	if err != nil || len(ls.GetSegments()) != 1 || ls.GetSegments()[0].GetReplicas() != 1 || !ls.GetSegments()[0].GetSegment().GetOffload() {
		t.Fatalf("ListSegments(LOCAL_DISK) = %v, %v", ls, err)
	}

	h.b.Restore(t, h.b.SavedState(t, h.b.FSM().Store().Epoch()))
	checkGet("after a snapshot restore")

	drop := func(tier metadv1.Tier, keys ...string) ([]metadv1.Reason, error) {
		bs := make([][]byte, len(keys))
		for i, k := range keys {
			bs[i] = []byte(k)
		}
		r, err := h.svc.EvictDiskReplica(ctx, &metadv1.EvictDiskReplicaRequest{ClientId: idb(clientA), Keys: bs, Tier: tier})
		return reasons(r.GetResults()), err
	}
	_, err = drop(metadv1.Tier_TIER_MEMORY, "k1")
	wantInvalid(t, err, "tier")
	_, err = drop(metadv1.Tier_TIER_LOCAL_DISK, "k1", "k1")
	wantInvalid(t, err, "keys[1]")
	got, err = drop(metadv1.Tier_TIER_LOCAL_DISK, "k2")
	if err != nil || got[0] != metadv1.Reason_REASON_NO_REPLICA_ON_SEGMENT {
		t.Fatalf("EvictDiskReplica of an object with no disk replica = %v, %v", got, err)
	}
	if got, err = drop(metadv1.Tier_TIER_LOCAL_DISK, "k1"); err != nil || got[0] != metadv1.Reason_REASON_UNSPECIFIED {
		t.Fatalf("EvictDiskReplica = %v, %v", got, err)
	}
	if g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")}); err != nil || len(g.GetReplicas()) != 1 {
		t.Fatalf("Get k1 after its disk replica went = %v, %v", g, err)
	}

	if _, err := report(&metadv1.OffloadResult{Key: []byte("k2"), Size: 4096, Success: true}); err != nil {
		t.Fatal(err)
	}
	un, err := h.svc.UnmountLocalDisk(ctx, &metadv1.UnmountLocalDiskRequest{ClientId: idb(clientA)})
	if err != nil || un.GetReplicasDropped() != 1 || un.GetObjectsErased() != 0 {
		t.Fatalf("UnmountLocalDisk = %v, %v; want one replica dropped", un, err)
	}
	if un, err := h.svc.UnmountLocalDisk(ctx, &metadv1.UnmountLocalDiskRequest{ClientId: idb(clientA)}); err != nil || un.GetReplicasDropped() != 0 {
		t.Fatalf("UnmountLocalDisk again = %v, %v; want zero counts", un, err)
	}
	if _, ok := h.b.Store().Segments().Get(alloc.LocalDiskID(clientA)); ok {
		t.Fatal("the registration is still mounted")
	}
}

// TestLocalDiskWaitsForTheClusterLevel: while a member records a level below the LOCAL_DISK
// tier's, MountLocalDisk is refused with ha.ErrFeatureLevel and nothing is mounted.
func TestLocalDiskWaitsForTheClusterLevel(t *testing.T) {
	h := newHarness(t, nil)
	h.b.OlderMember.Store(4)
	_, err := h.svc.MountLocalDisk(tctx(t), &metadv1.MountLocalDiskRequest{ClientId: idb(clientA), CapacityBytes: 1 << 30, Endpoint: "h:1"})
	if !errors.Is(err, ha.ErrFeatureLevel) {
		t.Fatalf("MountLocalDisk at cluster level 4: %v, want ErrFeatureLevel", err)
	}
	if _, ok := h.b.Store().Segments().Get(alloc.LocalDiskID(clientA)); ok {
		t.Fatal("mounted at level 4")
	}
}

// TestTierMetrics: the objects by tier, the disk-only objects and the reads by the tier a reader
// reads first, as a scrape shows them.
func TestTierMetrics(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.diskOnly(t, "disk")
	h.putOn(t, "mem", clientA, segA)
	for _, k := range []string{"mem", "disk", "disk"} {
		if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"metad_server_store_tier_objects", map[string]string{"tier": "memory"}, 1},
		{"metad_server_store_tier_objects", map[string]string{"tier": "local_disk"}, 1},
		{"metad_server_store_disk_only_objects", nil, 1},
		{"metad_server_get_hits_total", map[string]string{"tier": "memory"}, 1},
		{"metad_server_get_hits_total", map[string]string{"tier": "local_disk"}, 2},
		{"metad_server_store_segments", map[string]string{"tier": "local_disk"}, 1},
	} {
		if got := metricValue(t, h, m.name, m.labels); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}

// TestPromotionOnHit: with PromoteOnHit, the leader queues a promotion for a disk-only object once
// reads hit it PromoteMinHits times; the holder takes it from its mailbox, places its memory
// replica (another client is refused) and reports it, and the next Get names the memory replica
// first.
func TestPromotionOnHit(t *testing.T) {
	cfg := testConfig()
	cfg.PromoteOnHit = true
	h := start(t, servicetest.NewBackend(t, nil), cfg)
	ctx := tctx(t)
	h.diskOnly(t, "hot")
	get := func() *metadv1.GetResponse {
		t.Helper()
		g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("hot")})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	get()
	if h.svc.PromotionCandidates() != 0 { // one read is below the filter
		t.Fatal("a key read once is a promotion candidate")
	}
	get()
	pollUntil(t, "the promotion queued", 5*time.Second, func() bool { return h.b.Store().Tasks().Promotions() == 1 })
	tasks, err := h.svc.FetchTasks(ctx, &metadv1.FetchTasksRequest{ClientId: idb(clientA), Batch: 10})
	if err != nil || len(tasks.GetTasks()) != 1 || tasks.GetTasks()[0].GetKind() != metadv1.TaskKind_TASK_KIND_PROMOTE {
		t.Fatalf("FetchTasks = %v, %v", tasks, err)
	}
	_, err = h.svc.PromotionAllocStart(ctx, &metadv1.PromotionAllocStartRequest{ClientId: idb(clientB), Key: []byte("hot")})
	wantReason(t, err, store.IllegalClient)
	alloc, err := h.svc.PromotionAllocStart(ctx, &metadv1.PromotionAllocStartRequest{ClientId: idb(clientA), Key: []byte("hot")})
	if err != nil || alloc.GetSize() != 4096 || alloc.GetReplica().GetTier() != metadv1.Tier_TIER_MEMORY ||
		!bytes.Equal(alloc.GetReplica().GetSegmentId(), idb(segA)) || alloc.GetReplica().GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING {
		t.Fatalf("PromotionAllocStart = %v, %v", alloc, err)
	}
	if _, err := h.svc.NotifyPromotion(ctx, &metadv1.NotifyPromotionRequest{ClientId: idb(clientA), Key: []byte("hot"), Success: true}); err != nil {
		t.Fatal(err)
	}
	g := get()
	if len(g.GetReplicas()) != 2 || g.GetReplicas()[0].GetTier() != metadv1.Tier_TIER_MEMORY || g.GetReplicas()[1].GetTier() != metadv1.Tier_TIER_LOCAL_DISK {
		t.Fatalf("Get after the promotion: %v", g.GetReplicas())
	}
	_, err = h.svc.NotifyPromotion(ctx, &metadv1.NotifyPromotionRequest{ClientId: idb(clientA), Key: []byte("hot"), Success: true})
	wantReason(t, err, store.TaskNotFound)
}

// diskOnly mounts segA for clientA and segB for clientB, puts key on segB, records clientA's
// LOCAL_DISK replica of it (its SSD registered at host-a:9400) and unmounts segB: key is then on
// clientA's SSD alone, and segA the only memory segment.
func (h *harness) diskOnly(tb testing.TB, key string) {
	tb.Helper()
	ctx := tctx(tb)
	h.mount(tb, clientA, segA)
	h.mount(tb, clientB, segB)
	h.putOn(tb, key, clientB, segB)
	if _, err := h.svc.MountLocalDisk(ctx, &metadv1.MountLocalDiskRequest{ClientId: idb(clientA), CapacityBytes: 1 << 30, Endpoint: "host-a:9400"}); err != nil {
		tb.Fatal(err)
	}
	if r, err := h.svc.NotifyOffload(ctx, &metadv1.NotifyOffloadRequest{ClientId: idb(clientA),
		Results: []*metadv1.OffloadResult{{Key: []byte(key), Size: 4096, Success: true}}}); err != nil || r.GetResults()[0].GetReason() != 0 {
		tb.Fatal(r, err)
	}
	if _, err := h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientB), SegmentId: idb(segB)}); err != nil {
		tb.Fatal(err)
	}
}

// putOn writes a complete object of 4 KiB as client, on seg first.
func (h *harness) putOn(tb testing.TB, key string, client, seg alloc.ID) {
	tb.Helper()
	ctx := tctx(tb)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(client), Key: []byte(key), Size: 4096,
		Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(seg)}}}); err != nil {
		tb.Fatal(err)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(client), Key: []byte(key)}); err != nil {
		tb.Fatal(err)
	}
}
