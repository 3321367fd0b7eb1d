package service_test

import (
	"fmt"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store/alloc"
)

// segsOf returns the segment ids of reps, in order.
func segsOf(reps []*metadv1.Replica) []alloc.ID {
	out := make([]alloc.ID, len(reps))
	for i, r := range reps {
		out[i] = alloc.ID(r.GetSegmentId())
	}
	return out
}

// localFirstCluster mounts two 64 KiB segments on host "node-x" (endpoints of two spellings) and
// four 1 MiB segments on "node-y", and returns the node-x and node-y segment ids.
func localFirstCluster(t *testing.T, h *harness) (x, y []alloc.ID) {
	for i := range 2 {
		id := alloc.ID{0x71, byte(i + 1)}
		h.hostSeg(t, id, uint64(i+1)<<30, 64<<10, []string{"node-x:7001", "NODE-X:7002"}[i])
		x = append(x, id)
	}
	for i := range 4 {
		id := alloc.ID{0x72, byte(i + 1)}
		h.hostSeg(t, id, uint64(i+3)<<30, 1<<20, fmt.Sprintf("node-y:%d", 7001+i))
		y = append(y, id)
	}
	return x, y
}

// TestLocalFirstPlacementFallsBack: puts naming host node-x place their memory replicas on node-x's
// segments, whatever the spelling of the host and whatever the random strategy would draw; once
// node-x is full they place on node-y as usual, successfully.
func TestLocalFirstPlacementFallsBack(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	x, y := localFirstCluster(t, h)
	onX := func(id alloc.ID) bool { return id == x[0] || id == x[1] }
	// node-x holds 2 x 64 KiB: eight 16 KiB objects fill it exactly.
	for i := range 8 {
		host := []string{"node-x", "Node-X:9999"}[i%2]
		key := fmt.Sprintf("local-%d", i)
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(key), Size: 16 << 10,
			Config: &metadv1.ReplicaConfig{PreferredHost: host}})
		if err != nil {
			t.Fatalf("PutStart %s with host %q: %v", key, host, err)
		}
		if s := segsOf(resp.GetReplicas()); len(s) != 1 || !onX(s[0]) {
			t.Fatalf("PutStart %s with host %q placed on %v, want a node-x segment %v", key, host, s, x)
		}
	}
	for i := range 4 {
		key := fmt.Sprintf("fallback-%d", i)
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(key), Size: 16 << 10,
			Config: &metadv1.ReplicaConfig{PreferredHost: "node-x"}})
		if err != nil {
			t.Fatalf("PutStart %s with node-x full: %v, want the usual placement", key, err)
		}
		if s := segsOf(resp.GetReplicas()); len(s) != 1 || onX(s[0]) {
			t.Fatalf("PutStart %s with node-x full placed on %v, want a node-y segment %v", key, s, y)
		}
	}
}

// TestLocalFirstEveryPutKind: UpsertStart and BatchPutStart take the host as PutStart does, two
// memory replicas go to node-x's two segments, and a put without a host spreads as before (the
// random strategy over six segments does not pick node-x for every one of 16 objects).
func TestLocalFirstEveryPutKind(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	x, _ := localFirstCluster(t, h)
	onX := func(id alloc.ID) bool { return id == x[0] || id == x[1] }
	up, err := h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("up"), Size: 1024,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 2, PreferredHost: "node-x"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := segsOf(up.GetReplicas()); len(s) != 2 || !onX(s[0]) || !onX(s[1]) {
		t.Fatalf("UpsertStart of 2 replicas with host node-x placed on %v, want both node-x segments %v", s, x)
	}
	var items []*metadv1.BatchPutStartRequest_Item
	for i := range 16 {
		items = append(items, &metadv1.BatchPutStartRequest_Item{Key: []byte(fmt.Sprintf("b-%d", i)), Size: 1024})
	}
	b, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items,
		Config: &metadv1.ReplicaConfig{PreferredHost: "node-x"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range b.GetResults() {
		if s := segsOf(r.GetReplicas()); len(s) != 1 || !onX(s[0]) {
			t.Fatalf("BatchPutStart item %d with host node-x placed on %v (%v), want node-x", i, s, r.GetStatus())
		}
	}
	spread := 0
	for i := range 16 {
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(fmt.Sprintf("any-%d", i)), Size: 1024})
		if err != nil {
			t.Fatal(err)
		}
		if !onX(segsOf(resp.GetReplicas())[0]) {
			spread++
		}
	}
	if spread == 0 {
		t.Fatal("16 puts without a host all placed on node-x: the host leaked into the usual placement")
	}
}

// TestPreferredSegmentsWinOverHost: explicit preferred segments come before the host's segments, a
// segment named both ways is tried once, where the request put it, and the command the leader
// proposes carries the host resolved into segment ids, never the host itself.
func TestPreferredSegmentsWinOverHost(t *testing.T) {
	b := servicetest.NewBackend(t, nil)
	h := start(t, b, testConfig())
	ctx := tctx(t)
	x, y := localFirstCluster(t, h)
	resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 1024,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 3, PreferredSegmentIds: [][]byte{idb(y[2]), idb(x[1])}, PreferredHost: "node-x"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := segsOf(resp.GetReplicas()); len(s) != 3 || s[0] != y[2] || s[1] != x[1] || s[2] != x[0] {
		t.Fatalf("placed on %v, want the preferred %v then %v, then node-x's other segment %v", s, y[2], x[1], x[0])
	}
	cfg := b.LastProposed().GetPutStart().GetConfig()
	if cfg.GetPreferredHost() != "" || len(cfg.GetPreferredSegmentIds()) != 3 {
		t.Fatalf("proposed config %v: want the host resolved into 3 preferred segment ids and no host", cfg)
	}
	_, err = h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("bad"), Size: 1024,
		Config: &metadv1.ReplicaConfig{PreferredHost: "node\x01x"}})
	wantInvalid(t, err, "config.preferred_host")
}
