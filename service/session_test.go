package service_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// sessionClient numbers the writes of one session, as the Go client does.
type sessionClient struct {
	id  uint64
	seq uint64
}

func (h *harness) openSession(t *testing.T) *sessionClient {
	t.Helper()
	r, err := h.svc.OpenSession(tctx(t), &metadv1.OpenSessionRequest{ClientId: idb(clientA)})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetSessionId() == 0 || r.GetWindow() == 0 || r.GetTtlMs() == 0 {
		t.Fatalf("OpenSession: %v", r)
	}
	return &sessionClient{id: r.GetSessionId()}
}

// next is the header of the session's next operation (every earlier one answered).
func (c *sessionClient) next() *metadv1.SessionHeader {
	c.seq++
	return &metadv1.SessionHeader{SessionId: c.id, Seq: c.seq, FirstUnackedSeq: c.seq}
}

// lostThenRetried runs call once with the answer lost after apply (ha.ErrUnknown: the outcome is
// unknown), then again with the same request, and returns the retry's answer.
func lostThenRetried[R proto.Message](t *testing.T, h *harness, what string, call func() (R, error)) R {
	t.Helper()
	h.b.LoseAnswer.Store(true)
	if _, err := call(); !errors.Is(err, ha.ErrUnknown) {
		t.Fatalf("%s with its answer lost: %v, want ErrUnknown", what, err)
	}
	r, err := call()
	if err != nil {
		t.Fatalf("%s retried with the same session header: %v", what, err)
	}
	return r
}

// usage is what a repeated write must not change: the tenant's charge and the segment's use.
func (h *harness) usage(t *testing.T) (charged, used uint64) {
	t.Helper()
	st := h.b.Store()
	ti, _ := st.Tenant("default")
	return ti.Charged, st.Segments().Used(alloc.TierMemory)
}

// TestSessionRetryAfterLostAnswer: for each kind of write, the answer of an attempt that applied
// is lost; the retry with the same session header answers as the first attempt would have, and
// changes nothing: no second allocation, charge, instance or refusal.
func TestSessionRetryAfterLostAnswer(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	c := h.openSession(t)

	seg := &metadv1.SegmentDesc{Id: idb(segA), Name: "seg", Base: 1 << 20, Size: 1 << 20, Endpoint: "ep", Tier: metadv1.Tier_TIER_MEMORY}
	mount := &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: seg, Session: c.next()}
	lostThenRetried(t, h, "MountSegment", func() (*metadv1.MountSegmentResponse, error) { return h.svc.MountSegment(ctx, mount) })

	put := &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 4096, Session: c.next()}
	h.b.LoseAnswer.Store(true)
	if _, err := h.svc.PutStart(ctx, put); err == nil {
		t.Fatal("PutStart: the lost answer arrived")
	}
	charged, used := h.usage(t)
	got, err := h.svc.PutStart(ctx, put)
	if err != nil {
		t.Fatalf("retried PutStart: %v", err)
	}
	var held []store.Replica
	err = h.b.Store().WithObject("default", "k", func(o *store.LockedObject) error { held = o.State().Replicas; return nil })
	if err != nil || len(got.GetReplicas()) != 1 || len(held) != 1 || got.GetReplicas()[0].GetReplicaId() != held[0].ID ||
		got.GetReplicas()[0].GetOffset() != held[0].Extent.Offset {
		t.Fatalf("retried PutStart answered %v; the object holds %+v (%v)", got.GetReplicas(), held, err)
	}
	if c2, u2 := h.usage(t); c2 != charged || u2 != used {
		t.Fatalf("the retry charged %d -> %d, allocated %d -> %d", charged, c2, used, u2)
	}

	revoke := &metadv1.PutRevokeRequest{ClientId: idb(clientA), Key: []byte("k"), Session: c.next()}
	lostThenRetried(t, h, "PutRevoke", func() (*metadv1.PutRevokeResponse, error) { return h.svc.PutRevoke(ctx, revoke) })

	ups := &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("u"), Size: 4096, Session: c.next()}
	up := lostThenRetried(t, h, "UpsertStart", func() (*metadv1.UpsertStartResponse, error) { return h.svc.UpsertStart(ctx, ups) })
	if len(up.GetReplicas()) != 1 || up.GetReused() {
		t.Fatalf("retried UpsertStart: %v", up)
	}
	upe := &metadv1.UpsertEndRequest{ClientId: idb(clientA), Key: []byte("u"), Session: c.next()}
	lostThenRetried(t, h, "UpsertEnd", func() (*metadv1.UpsertEndResponse, error) { return h.svc.UpsertEnd(ctx, upe) })

	bps := &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: []*metadv1.BatchPutStartRequest_Item{{Key: []byte("b1"), Size: 64}, {Key: []byte("u"), Size: 64}},
		Session: c.next()}
	charged, used = h.usage(t)
	b := lostThenRetried(t, h, "BatchPutStart", func() (*metadv1.BatchPutStartResponse, error) { return h.svc.BatchPutStart(ctx, bps) })
	if len(b.GetResults()) != 2 || b.GetResults()[0].GetStatus().GetReason() != 0 || len(b.GetResults()[0].GetReplicas()) != 1 ||
		b.GetResults()[1].GetStatus().GetReason() != metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS {
		t.Fatalf("retried BatchPutStart: %v", b)
	}
	if c2, u2 := h.usage(t); c2 != charged+alloc.RoundUp(64) || u2 != used+alloc.RoundUp(64) {
		t.Fatalf("one item of 64 bytes: charged %d -> %d, allocated %d -> %d", charged, c2, used, u2)
	}

	rm := &metadv1.RemoveRequest{Key: []byte("u"), Force: true, Session: c.next()}
	lostThenRetried(t, h, "Remove", func() (*metadv1.RemoveResponse, error) { return h.svc.Remove(ctx, rm) })
	if _, err := h.b.Store().Peek("default", "u"); err == nil {
		t.Fatal("the removed object is back")
	}

	// BatchRemove answers every key from its command's result: b2 removed, "nope" refused when the
	// leader prepared it; the retry gets both answers again, not OBJECT_NOT_FOUND for b2.
	h.put(t, "", "b2", 64)
	br := &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("b2"), []byte("nope")}, Force: true, Session: c.next()}
	bres := lostThenRetried(t, h, "BatchRemove", func() (*metadv1.BatchRemoveResponse, error) { return h.svc.BatchRemove(ctx, br) })
	if len(bres.GetResults()) != 2 || bres.GetResults()[0].GetReason() != 0 ||
		bres.GetResults()[1].GetReason() != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("retried BatchRemove: %v", bres)
	}

	reg := &metadv1.RegisterTenantRequest{Name: "t1", Session: c.next()}
	h.b.LoseAnswer.Store(true)
	if _, err := h.svc.RegisterTenant(ctx, reg); err == nil {
		t.Fatal("RegisterTenant: the lost answer arrived")
	}
	ti, _ := h.b.Store().Tenant("t1")
	r, err := h.svc.RegisterTenant(ctx, reg)
	if err != nil || r.GetInstanceId() != ti.Instance {
		t.Fatalf("retried RegisterTenant: %v %v, the tenant's instance is %d", r, err, ti.Instance)
	}

	// A new operation of the session is not a retry: registering t1 again is refused.
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t1", Session: c.next()}); err == nil {
		t.Fatal("a second RegisterTenant of t1 was not refused")
	}
	// Without a session a retry is a new attempt: the lost answer makes it look refused.
	h.b.LoseAnswer.Store(true)
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err == nil {
		t.Fatal("RegisterTenant: the lost answer arrived")
	}
	_, err = h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"})
	wantReason(t, err, store.TenantAlreadyExists)
}

// TestSessionHeaderValidated: a malformed header is INVALID_PARAMS naming the field, nothing done.
func TestSessionHeaderValidated(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	for _, hd := range []*metadv1.SessionHeader{{Seq: 1}, {SessionId: 1}, {SessionId: 1, Seq: 2, FirstUnackedSeq: 3}} {
		n := h.b.Proposals.Load()
		_, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "x", Session: hd})
		wantReason(t, err, store.InvalidParams)
		if h.b.Proposals.Load() != n {
			t.Fatalf("header %v: proposed", hd)
		}
	}
}

// TestGoneSessionIsNotRefusedFromState: a retry whose session the state no longer holds is answered
// SESSION_EXPIRED, as apply would, not with a refusal from the leader's state (its first attempt
// may have been the write that the state now shows).
func TestGoneSessionIsNotRefusedFromState(t *testing.T) {
	h := newHarness(t, nil)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 64)
	_, err := h.svc.PutStart(tctx(t), &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 64,
		Session: &metadv1.SessionHeader{SessionId: 77, Seq: 3, FirstUnackedSeq: 3}})
	wantReason(t, err, store.SessionExpired)
	_, err = h.svc.Remove(tctx(t), &metadv1.RemoveRequest{Key: []byte("absent"), Session: &metadv1.SessionHeader{SessionId: 77, Seq: 4}})
	wantReason(t, err, store.SessionExpired)
}
