package service_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
)

// Requests the leader's applied state refuses are refused without a log entry (SEMANTICS section 8):
// across each of them the FSM's applied index does not move, and the leader confirmed its
// leadership (a read barrier) before answering. Changes, including the ones that only look like
// refusals (a repeated PutEnd, a PutStart over a write past the discard timeout), still go through
// the log.
func TestRefusalsConsumeNoLog(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "done", 64)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("writing"), Size: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err != nil {
		t.Fatal(err)
	}
	a, b := idb(clientA), idb(clientB)
	seg := func(owner []byte) *metadv1.MountSegmentRequest {
		return &metadv1.MountSegmentRequest{ClientId: owner, Segment: &metadv1.SegmentDesc{Id: idb(segA), Name: "seg", Base: 1 << 20,
			Size: 1 << 20, Endpoint: "ep-" + segA.String()[:4], Tier: metadv1.Tier_TIER_MEMORY}}
	}
	rIllegal := metadv1.Reason_REASON_ILLEGAL_CLIENT
	type items []metadv1.Reason // the per-item reasons of a batch answered with no error
	for _, tc := range []struct {
		name string
		call func() (any, error)
		want any // the store.Reason of the error, or items
	}{
		{"PutEnd without PutStart", func() (any, error) {
			return h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("absent")})
		}, store.ObjectNotFound},
		{"PutRevoke without PutStart", func() (any, error) {
			return h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("absent")})
		}, store.ObjectNotFound},
		{"UpsertEnd without UpsertStart", func() (any, error) {
			return h.svc.UpsertEnd(ctx, &metadv1.UpsertEndRequest{ClientId: a, Key: []byte("absent")})
		}, store.ObjectNotFound},
		{"UpsertRevoke without UpsertStart", func() (any, error) {
			return h.svc.UpsertRevoke(ctx, &metadv1.UpsertRevokeRequest{ClientId: a, Key: []byte("absent")})
		}, store.ObjectNotFound},
		{"PutEnd of another client's write", func() (any, error) {
			return h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: b, Key: []byte("writing")})
		}, store.IllegalClient},
		{"PutEnd of a tier the write has no replica of", func() (any, error) {
			return h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("writing"), Tier: metadv1.Tier_TIER_NOF})
		}, store.InvalidWrite},
		{"PutRevoke of a tier the write has no replica of", func() (any, error) {
			return h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("writing"), Tier: metadv1.Tier_TIER_NOF})
		}, store.InvalidWrite},
		{"BatchPutEnd of a tier the writes have no replica of", func() (any, error) {
			r, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: a, Keys: [][]byte{[]byte("writing")}, Tier: metadv1.Tier_TIER_NOF})
			return reasons(r.GetResults()), err
		}, items{rBadWrite}},
		{"PutRevoke of a complete object", func() (any, error) {
			return h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("done")})
		}, store.InvalidWrite},
		{"PutStart on an unregistered tenant", func() (any, error) {
			return h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "nope", ClientId: a, Key: []byte("k"), Size: 64})
		}, store.TenantNotRegistered},
		{"PutStart on a complete object", func() (any, error) {
			return h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: a, Key: []byte("done"), Size: 64})
		}, store.ObjectAlreadyExists},
		{"UpsertStart on a write in progress", func() (any, error) {
			return h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: a, Key: []byte("writing"), Size: 64})
		}, store.InvalidWrite},
		{"BatchPutStart of complete objects", func() (any, error) {
			r, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: a, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("done"), Size: 64}}})
			return batchReasons(r.GetResults(), (*metadv1.BatchPutStartResponse_Result).GetStatus), err
		}, items{rExists}},
		{"BatchPutStart on an unregistered tenant", func() (any, error) {
			return h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{Tenant: "nope", ClientId: a, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("k"), Size: 64}}})
		}, store.TenantNotRegistered},
		{"BatchPutEnd with no write of ours", func() (any, error) {
			r, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: b, Keys: [][]byte{[]byte("writing"), []byte("absent")}})
			return reasons(r.GetResults()), err
		}, items{rIllegal, rNotFound}},
		{"BatchPutRevoke with no write in progress", func() (any, error) {
			r, err := h.svc.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: a, Keys: [][]byte{[]byte("done"), []byte("absent")}})
			return reasons(r.GetResults()), err
		}, items{rBadWrite, rNotFound}},
		{"RegisterTenant of a taken name", func() (any, error) {
			return h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"})
		}, store.TenantAlreadyExists},
		{"SetQuota of an unknown tenant", func() (any, error) {
			return h.svc.SetQuota(ctx, &metadv1.SetQuotaRequest{Tenant: "nope", QuotaBytes: 1})
		}, store.TenantNotRegistered},
		{"UnregisterTenant of an unknown tenant", func() (any, error) {
			return h.svc.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "nope"})
		}, store.TenantNotRegistered},
		{"UnregisterTenant of a tenant with objects", func() (any, error) {
			return h.svc.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "default"})
		}, store.TenantNotEmpty},
		{"MountSegment of another client's segment", func() (any, error) {
			return h.svc.MountSegment(ctx, seg(b))
		}, store.SegmentOwnedByOtherClient},
		{"UnmountSegment of an unknown segment", func() (any, error) {
			return h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: a, SegmentId: idb(segB)})
		}, store.SegmentNotFound},
		{"UnmountSegment of another client's segment", func() (any, error) {
			return h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: b, SegmentId: idb(segA)})
		}, store.SegmentOwnedByOtherClient},
		{"Remove of an absent object", func() (any, error) {
			return h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("absent"), Force: true})
		}, store.ObjectNotFound},
		{"BatchRemove of absent objects", func() (any, error) {
			r, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("absent")}, Force: true})
			return reasons(r.GetResults()), err
		}, items{rNotFound}},
		{"RemoveGroup of an absent group", func() (any, error) {
			return h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("absent"), Force: true})
		}, store.ObjectNotFound},
	} {
		before, barriers := h.b.AppliedIndex(), h.b.Barriers.Load()
		got, err := tc.call()
		if want, ok := tc.want.(items); ok {
			if rs, _ := got.([]metadv1.Reason); err != nil || !slices.Equal(rs, want) {
				t.Errorf("%s: %v %v, want items %v", tc.name, got, err, want)
			}
		} else {
			wantReason(t, err, tc.want.(store.Reason))
		}
		if after := h.b.AppliedIndex(); after != before {
			t.Errorf("%s: refused with %d log entries (applied index %d -> %d), want none", tc.name, after-before, before, after)
		}
		if h.b.Barriers.Load() == barriers {
			t.Errorf("%s: refused without confirming leadership", tc.name)
		}
	}

	// What only looks like a refusal is a change, and goes through the log.
	before := h.b.AppliedIndex()
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("done")}); err != nil {
		t.Fatalf("repeated PutEnd: %v", err)
	}
	clk.Advance(31 * time.Second)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: a, Key: []byte("writing"), Size: 64}); err != nil {
		t.Fatalf("PutStart over a write past the discard timeout: %v", err)
	}
	if after := h.b.AppliedIndex(); after != before+2 {
		t.Fatalf("a repeated PutEnd and a discarding PutStart took %d log entries, want 2", after-before)
	}
}

// A leader that lost its leadership without noticing (paused, or cut off from the others) still
// believes it leads and is ready. An answer it would give from its own state without the log is a
// read, and it must not give a stale one: it answers NOT_LEADER instead of refusing what the
// current leader may accept.
func TestDeposedLeaderRefusesNothingFromItsState(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.b.Deposed.Store(true)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Remove", func() error {
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("absent"), Force: true})
			return err
		}},
		{"BatchRemove", func() error {
			_, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("absent")}, Force: true})
			return err
		}},
		{"RemoveAll", func() error {
			_, err := h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{Force: true})
			return err
		}},
		{"RemoveGroup", func() error {
			_, err := h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("absent"), Force: true})
			return err
		}},
		{"PutEnd", func() error {
			_, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("absent")})
			return err
		}},
		{"RegisterTenant", func() error {
			_, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "default"})
			return err
		}},
	} {
		// NOT_LEADER naming a leader, where refusing from its state would have been a stale read.
		var nl *ha.NotLeaderError
		if err := tc.call(); !errors.As(err, &nl) || nl.LeaderAddr == "" {
			t.Errorf("%s on a deposed leader: %v, want NOT_LEADER naming a leader", tc.name, err)
		}
	}
}
