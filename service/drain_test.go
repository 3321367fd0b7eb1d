package service_test

import (
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
)

// TestDrainStatusAndCancel: StartDrain's refusals (nothing closed), a drain that closes its
// segment and is driven by the leader's loop (a move scheduled for the segment's owner, at most
// max_concurrency in flight, the progress in DrainStatus and the metrics), then its cancel: the
// segment takes allocations again, a repeated cancel answers the same job, and an unknown job is
// DRAIN_NOT_FOUND.
func TestDrainStatusAndCancel(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mount(t, clientB, segB)
	for _, k := range []string{"a", "b", "c"} {
		cfg := &metadv1.ReplicaConfig{MemoryReplicas: 1, PreferredSegmentIds: [][]byte{idb(segA)}}
		if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(k), Size: 4096, Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	unknown := idb(clientB) // not a segment
	for _, c := range []struct {
		req    *metadv1.StartDrainRequest
		reason store.Reason
	}{
		{&metadv1.StartDrainRequest{}, store.InvalidParams},
		{&metadv1.StartDrainRequest{SegmentIds: [][]byte{idb(segA)}, MaxConcurrency: 2000}, store.InvalidParams},
		{&metadv1.StartDrainRequest{SegmentIds: [][]byte{idb(segA), idb(segA)}}, store.InvalidParams},
		{&metadv1.StartDrainRequest{SegmentIds: [][]byte{idb(segA)}, TargetSegmentIds: [][]byte{idb(segA)}}, store.InvalidParams},
		{&metadv1.StartDrainRequest{SegmentIds: [][]byte{unknown}}, store.SegmentNotFound},
	} {
		_, err := h.svc.StartDrain(ctx, c.req)
		wantReason(t, err, c.reason)
	}
	if info, _ := h.b.Store().Segments().Get(segA); info.Closing {
		t.Fatal("a refused drain closed the segment")
	}
	resp, err := h.svc.StartDrain(ctx, &metadv1.StartDrainRequest{SegmentIds: [][]byte{idb(segA)}, MaxConcurrency: 1})
	j := resp.GetDrain()
	if err != nil || j.GetDrainId() != 1 || j.GetState() != metadv1.DrainState_DRAIN_STATE_RUNNING || j.GetObjectsLeft() != 3 || j.GetMaxConcurrency() != 1 {
		t.Fatalf("StartDrain = %v, %v", resp, err)
	}
	if info, _ := h.b.Store().Segments().Get(segA); !info.Closing {
		t.Fatal("the drained segment takes allocations")
	}
	clk.Advance(time.Minute) // past the new leader's lease floor
	var st *metadv1.DrainJob
	pollUntil(t, "a move scheduled", 10*time.Second, func() bool {
		s, err := h.svc.DrainStatus(ctx, &metadv1.DrainStatusRequest{})
		if err != nil || len(s.GetDrains()) != 1 {
			t.Fatalf("DrainStatus = %v, %v", s, err)
		}
		st = s.GetDrains()[0]
		return len(st.GetInFlightTaskIds()) == 1
	})
	task, err := h.b.Store().Tasks().Get(st.GetInFlightTaskIds()[0])
	if err != nil || task.Client != clientA || task.Spec.Drain != 1 || task.Spec.Source != segA {
		t.Fatalf("the drain's task: %+v, %v", task, err)
	}
	pollUntil(t, "the drain metrics", 10*time.Second, func() bool {
		return metricValue(t, h, "metad_server_drains_running", nil) == 1 &&
			metricValue(t, h, "metad_server_drain_objects_left", nil) == 3
	})
	// max_concurrency 1: no second move while the first is in flight.
	for range 3 {
		clk.Advance(time.Second)
		if s, _ := h.svc.DrainStatus(ctx, &metadv1.DrainStatusRequest{DrainId: 1}); len(s.GetDrains()[0].GetInFlightTaskIds()) != 1 {
			t.Fatalf("in flight: %v", s)
		}
	}
	c, err := h.svc.CancelDrain(ctx, &metadv1.CancelDrainRequest{DrainId: 1})
	if err != nil || c.GetDrain().GetState() != metadv1.DrainState_DRAIN_STATE_CANCELLED || c.GetDrain().GetObjectsLeft() != 3 {
		t.Fatalf("CancelDrain = %v, %v", c, err)
	}
	if info, _ := h.b.Store().Segments().Get(segA); info.Closing {
		t.Fatal("a cancelled drain's segment takes no allocation")
	}
	if c, err := h.svc.CancelDrain(ctx, &metadv1.CancelDrainRequest{DrainId: 1}); err != nil || c.GetDrain().GetState() != metadv1.DrainState_DRAIN_STATE_CANCELLED {
		t.Fatalf("a repeated CancelDrain = %v, %v", c, err)
	}
	_, err = h.svc.CancelDrain(ctx, &metadv1.CancelDrainRequest{DrainId: 9})
	wantReason(t, err, store.DrainNotFound)
	_, err = h.svc.CancelDrain(ctx, &metadv1.CancelDrainRequest{})
	wantReason(t, err, store.InvalidParams)
	pollUntil(t, "the drain metrics after the cancel", 10*time.Second, func() bool {
		return metricValue(t, h, "metad_server_drains_running", nil) == 0
	})
}
