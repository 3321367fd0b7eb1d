package server

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	metadv1 "metad/proto/metadv1"
)

// Requests the leader's applied state refuses are refused without a log entry (SEMANTICS section 8):
// across each of them the FSM's applied index does not move, and the leader confirmed its
// leadership (a read barrier) before answering. Changes, including the ones that only look like
// refusals (a repeated PutEnd, a PutStart over a write past the discard timeout), still go through
// the log.
func TestRefusalsConsumeNoLog(t *testing.T) {
	clk := newFakeClock()
	h := start(t, newFakeBackend(t, clk.Now), withClock(clk, testConfig()))
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "done", 64)
	if _, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("writing"), Size: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err != nil {
		t.Fatal(err)
	}
	a, b := idb(clientA), idb(clientB)
	seg := func(owner []byte) *metadv1.MountSegmentRequest {
		return &metadv1.MountSegmentRequest{ClientId: owner, Segment: &metadv1.SegmentDesc{Id: idb(segA), Name: "seg", Base: 1 << 20,
			Size: 1 << 20, Endpoint: "ep-" + segA.String()[:4], Tier: metadv1.Tier_TIER_MEMORY}}
	}
	rAlready := metadv1.Reason_REASON_TENANT_ALREADY_EXISTS
	rNotEmpty := metadv1.Reason_REASON_TENANT_NOT_EMPTY
	rIllegal := metadv1.Reason_REASON_ILLEGAL_CLIENT
	rNoSeg := metadv1.Reason_REASON_SEGMENT_NOT_FOUND
	rOwned := metadv1.Reason_REASON_SEGMENT_OWNED_BY_OTHER_CLIENT
	type items []metadv1.Reason // the per-item reasons of a batch answered with no error
	for _, tc := range []struct {
		name string
		call func() (any, error)
		code codes.Code
		want any // metadv1.Reason of the error, or items
	}{
		{"PutEnd without PutStart", func() (any, error) {
			return h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("absent")})
		}, codes.NotFound, rNotFound},
		{"PutRevoke without PutStart", func() (any, error) {
			return h.meta.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("absent")})
		}, codes.NotFound, rNotFound},
		{"UpsertEnd without UpsertStart", func() (any, error) {
			return h.meta.UpsertEnd(ctx, &metadv1.UpsertEndRequest{ClientId: a, Key: []byte("absent")})
		}, codes.NotFound, rNotFound},
		{"UpsertRevoke without UpsertStart", func() (any, error) {
			return h.meta.UpsertRevoke(ctx, &metadv1.UpsertRevokeRequest{ClientId: a, Key: []byte("absent")})
		}, codes.NotFound, rNotFound},
		{"PutEnd of another client's write", func() (any, error) {
			return h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: b, Key: []byte("writing")})
		}, codes.PermissionDenied, rIllegal},
		{"PutEnd of a tier the write has no replica of", func() (any, error) {
			return h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("writing"), Tier: metadv1.Tier_TIER_NOF})
		}, codes.FailedPrecondition, rBadWrite},
		{"PutRevoke of a tier the write has no replica of", func() (any, error) {
			return h.meta.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("writing"), Tier: metadv1.Tier_TIER_NOF})
		}, codes.FailedPrecondition, rBadWrite},
		{"BatchPutEnd of a tier the writes have no replica of", func() (any, error) {
			r, err := h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: a, Keys: [][]byte{[]byte("writing")}, Tier: metadv1.Tier_TIER_NOF})
			return reasons(r.GetResults()), err
		}, codes.OK, items{rBadWrite}},
		{"PutRevoke of a complete object", func() (any, error) {
			return h.meta.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: a, Key: []byte("done")})
		}, codes.FailedPrecondition, rBadWrite},
		{"PutStart on an unregistered tenant", func() (any, error) {
			return h.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "nope", ClientId: a, Key: []byte("k"), Size: 64})
		}, codes.NotFound, rNoTenant},
		{"PutStart on a complete object", func() (any, error) {
			return h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: a, Key: []byte("done"), Size: 64})
		}, codes.AlreadyExists, rExists},
		{"UpsertStart on a write in progress", func() (any, error) {
			return h.meta.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: a, Key: []byte("writing"), Size: 64})
		}, codes.FailedPrecondition, rBadWrite},
		{"BatchPutStart of complete objects", func() (any, error) {
			r, err := h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: a, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("done"), Size: 64}}})
			return batchReasons(r.GetResults(), (*metadv1.BatchPutStartResponse_Result).GetStatus), err
		}, codes.OK, items{rExists}},
		{"BatchPutStart on an unregistered tenant", func() (any, error) {
			return h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{Tenant: "nope", ClientId: a, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("k"), Size: 64}}})
		}, codes.NotFound, rNoTenant},
		{"BatchPutEnd with no write of ours", func() (any, error) {
			r, err := h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: b, Keys: [][]byte{[]byte("writing"), []byte("absent")}})
			return reasons(r.GetResults()), err
		}, codes.OK, items{rIllegal, rNotFound}},
		{"BatchPutRevoke with no write in progress", func() (any, error) {
			r, err := h.meta.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: a, Keys: [][]byte{[]byte("done"), []byte("absent")}})
			return reasons(r.GetResults()), err
		}, codes.OK, items{rBadWrite, rNotFound}},
		{"RegisterTenant of a taken name", func() (any, error) {
			return h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"})
		}, codes.AlreadyExists, rAlready},
		{"SetQuota of an unknown tenant", func() (any, error) {
			return h.admin.SetQuota(ctx, &metadv1.SetQuotaRequest{Tenant: "nope", QuotaBytes: 1})
		}, codes.NotFound, rNoTenant},
		{"UnregisterTenant of an unknown tenant", func() (any, error) {
			return h.admin.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "nope"})
		}, codes.NotFound, rNoTenant},
		{"UnregisterTenant of a tenant with objects", func() (any, error) {
			return h.admin.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "default"})
		}, codes.FailedPrecondition, rNotEmpty},
		{"MountSegment of another client's segment", func() (any, error) {
			return h.meta.MountSegment(ctx, seg(b))
		}, codes.PermissionDenied, rOwned},
		{"UnmountSegment of an unknown segment", func() (any, error) {
			return h.meta.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: a, SegmentId: idb(segB)})
		}, codes.NotFound, rNoSeg},
		{"UnmountSegment of another client's segment", func() (any, error) {
			return h.meta.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: b, SegmentId: idb(segA)})
		}, codes.PermissionDenied, rOwned},
		{"Remove of an absent object", func() (any, error) {
			return h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("absent"), Force: true})
		}, codes.NotFound, rNotFound},
		{"BatchRemove of absent objects", func() (any, error) {
			r, err := h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("absent")}, Force: true})
			return reasons(r.GetResults()), err
		}, codes.OK, items{rNotFound}},
		{"RemoveGroup of an absent group", func() (any, error) {
			return h.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("absent"), Force: true})
		}, codes.NotFound, rNotFound},
	} {
		before, barriers := h.b.AppliedIndex(), h.b.Barriers.Load()
		got, err := tc.call()
		if want, ok := tc.want.(items); ok {
			if rs, _ := got.([]metadv1.Reason); err != nil || !slices.Equal(rs, want) {
				t.Errorf("%s: %v %v, want items %v", tc.name, got, err, want)
			}
		} else {
			wantErr(t, err, tc.code, tc.want.(metadv1.Reason))
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
	if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: a, Key: []byte("done")}); err != nil {
		t.Fatalf("repeated PutEnd: %v", err)
	}
	clk.Advance(31 * time.Second)
	if _, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: a, Key: []byte("writing"), Size: 64}); err != nil {
		t.Fatalf("PutStart over a write past the discard timeout: %v", err)
	}
	if after := h.b.AppliedIndex(); after != before+2 {
		t.Fatalf("a repeated PutEnd and a discarding PutStart took %d log entries, want 2", after-before)
	}
}

// batchReasons is reasons for the results of a batch whose results carry a Status.
func batchReasons[R any](rs []R, status func(R) *metadv1.Status) []metadv1.Reason {
	out := make([]metadv1.Reason, len(rs))
	for i, r := range rs {
		out[i] = status(r).GetReason()
	}
	return out
}

// A leader that lost its leadership without noticing (paused, or cut off from the others) still
// believes it leads and is ready. An answer it would give from its own state without the log is a
// read, and it must not give a stale one: it answers NOT_LEADER instead of refusing what the
// current leader may accept.
func TestDeposedLeaderRefusesNothingFromItsState(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.b.Deposed.Store(true)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Remove", func() error {
			_, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("absent"), Force: true})
			return err
		}},
		{"BatchRemove", func() error {
			_, err := h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("absent")}, Force: true})
			return err
		}},
		{"RemoveAll", func() error {
			_, err := h.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{Force: true})
			return err
		}},
		{"RemoveGroup", func() error {
			_, err := h.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("absent"), Force: true})
			return err
		}},
		{"PutEnd", func() error {
			_, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("absent")})
			return err
		}},
		{"RegisterTenant", func() error {
			_, err := h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "default"})
			return err
		}},
	} {
		d := detailOf(tc.call())
		if d.GetReason() != rNotLeader {
			t.Errorf("%s on a deposed leader: reason %s, want %s", tc.name, d.GetReason(), rNotLeader)
		}
	}
}
