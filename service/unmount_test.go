package service_test

import (
	"bytes"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
)

// TestGracefulUnmount: UnmountSegment with a grace period. Another client's call is refused; the
// owner's closes the segment (segment ls and the metrics show it) and answers the deadline; a
// repeat keeps the earlier deadline; no new replica lands on the segment, even when a put prefers
// it, while the objects on it stay readable; the closing state survives a leader change and a
// snapshot restore; when the (fake) clock passes the deadline the leader's loop unmounts it, and
// its replicas are dropped as an unmount drops them.
func TestGracefulUnmount(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mount(t, clientB, segB)
	prefer := func(key string, replicas uint32, segs ...alloc.ID) *metadv1.PutStartResponse {
		t.Helper()
		cfg := &metadv1.ReplicaConfig{MemoryReplicas: replicas}
		for _, s := range segs {
			cfg.PreferredSegmentIds = append(cfg.PreferredSegmentIds, idb(s))
		}
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(key), Size: 4096, Config: cfg})
		if err != nil {
			t.Fatalf("PutStart %q: %v", key, err)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(key)}); err != nil {
			t.Fatalf("PutEnd %q: %v", key, err)
		}
		return resp
	}
	prefer("only-a", 1, segA)
	prefer("both", 2, segA, segB)

	unmount := func(client alloc.ID, grace time.Duration) (*metadv1.UnmountSegmentResponse, error) {
		return h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(client), SegmentId: idb(segA),
			GraceMs: uint64(grace.Milliseconds())})
	}
	_, err := unmount(clientB, 30*time.Second)
	wantReason(t, err, store.SegmentOwnedByOtherClient)
	_, err = unmount(clientA, 25*time.Hour)
	wantReason(t, err, store.InvalidParams)
	if info, _ := h.b.Store().Segments().Get(segA); info.Closing {
		t.Fatal("a refused call closed the segment")
	}

	deadline := clk.Now().Add(30 * time.Second).UnixNano()
	resp, err := unmount(clientA, 30*time.Second)
	if err != nil || !resp.GetClosing() || resp.GetUnmountAtUnixNano() != deadline || resp.GetReplicasDropped() != 0 {
		t.Fatalf("graceful unmount = %v %v; want closing until %d", resp, err, deadline)
	}
	clk.Advance(time.Second)
	resp, err = unmount(clientA, time.Hour)
	if err != nil || !resp.GetClosing() || resp.GetUnmountAtUnixNano() != deadline {
		t.Fatalf("repeated graceful unmount = %v %v; want the first deadline %d", resp, err, deadline)
	}
	ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range ls.GetSegments() {
		isA := bytes.Equal(sg.GetSegment().GetId(), idb(segA))
		if sg.GetClosing() != isA || (isA && sg.GetUnmountAtUnixNano() != deadline) {
			t.Fatalf("segment ls: %v", sg)
		}
	}
	if got := metricValue(t, h, "metad_server_store_closing_segments", map[string]string{"tier": "memory"}); got != 1 {
		t.Fatalf("closing segments gauge %v, want 1", got)
	}

	for i := range 10 {
		resp := prefer("new-"+string(rune('a'+i)), 2, segA)
		for _, r := range resp.GetReplicas() {
			if bytes.Equal(r.GetSegmentId(), idb(segA)) {
				t.Fatalf("put %d placed a replica on the closing segment", i)
			}
		}
	}
	for _, key := range []string{"only-a", "both"} {
		if g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte(key)}); err != nil || len(g.GetReplicas()) == 0 {
			t.Fatalf("Get %q while closing: %v %v", key, g, err)
		}
	}

	// A leader change, then a snapshot restore: the closing state is replicated.
	h.b.SetLeader(false, "other", "other-addr")
	h.b.SetLeader(true, "", "")
	h.b.Restore(t, h.b.SavedState(t, h.b.FSM().Store().Epoch()))
	if info, _ := h.b.Store().Segments().Get(segA); !info.Closing || info.UnmountAt != deadline {
		t.Fatalf("after a leader change and a restore: %+v; want closing until %d", info, deadline)
	}
	if resp := prefer("after-restore", 2, segA); len(resp.GetReplicas()) != 1 || bytes.Equal(resp.GetReplicas()[0].GetSegmentId(), idb(segA)) {
		t.Fatalf("put after the restore: %v; want one replica, not on the closing segment", resp.GetReplicas())
	}

	clk.Advance(30 * time.Second)
	end := time.Now().Add(10 * time.Second)
	for {
		if _, ok := h.b.Store().Segments().Get(segA); !ok {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the closing segment was not unmounted after its deadline")
		}
		time.Sleep(time.Millisecond) // poll interval, not synchronisation: the loop re-checks
	}
	// The segment leaves the state while the unmount applies, before its replicas do; the counter
	// counts the unmount once its proposal has returned, the apply done.
	pollUntil(t, "the graceful unmount counted", 10*time.Second, func() bool {
		return metricValue(t, h, "metad_server_graceful_unmounts_total", nil) >= 1
	})
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("only-a")})
	wantReason(t, err, store.ObjectNotFound)
	if g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("both")}); err != nil || len(g.GetReplicas()) != 1 ||
		!bytes.Equal(g.GetReplicas()[0].GetSegmentId(), idb(segB)) {
		t.Fatalf("survivor: %v %v", g, err)
	}
	if got := metricValue(t, h, "metad_server_graceful_unmounts_total", nil); got != 1 {
		t.Fatalf("graceful unmounts counter %v, want 1", got)
	}
	if err := h.b.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestGracefulUnmountEmptySegment: a segment that holds no replica is unmounted at once.
func TestGracefulUnmountEmptySegment(t *testing.T) {
	h := newHarness(t, nil)
	h.mount(t, clientA, segA)
	resp, err := h.svc.UnmountSegment(tctx(t), &metadv1.UnmountSegmentRequest{ClientId: idb(clientA), SegmentId: idb(segA), GraceMs: 60_000})
	if err != nil || resp.GetClosing() || resp.GetUnmountAtUnixNano() != 0 {
		t.Fatalf("graceful unmount of an empty segment = %v %v; want unmounted at once", resp, err)
	}
	if _, ok := h.b.Store().Segments().Get(segA); ok {
		t.Fatal("empty segment still mounted")
	}
}
