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

func TestPutGetExistRemoveRoundTrip(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)

	ps, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k1"), Size: 100,
		Config: &metadv1.ReplicaConfig{DataType: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.GetReplicas()) != 1 {
		t.Fatalf("PutStart replicas %v", ps.GetReplicas())
	}
	r := ps.GetReplicas()[0]
	if r.GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING || r.GetSize() != 100 ||
		r.GetBaseAddress() != 1<<20 || r.GetSegmentEndpoint() == "" || string(r.GetSegmentId()) != string(idb(segA)) {
		t.Fatalf("PutStart replica %v", r)
	}
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")})
	wantReason(t, err, store.ReplicaIsNotReady)

	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k1")}); err != nil {
		t.Fatal(err)
	}
	g, err := h.svc.Get(ctx, &metadv1.GetRequest{Tenant: "default", Key: []byte("k1")})
	if err != nil {
		t.Fatal(err)
	}
	if g.GetSize() != 100 || g.GetDataType() != 7 || g.GetLeaseTtlMs() != 10000 || len(g.GetReplicas()) != 1 ||
		g.GetReplicas()[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
		t.Fatalf("Get %v", g)
	}
	sg, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k1"), Stale: true})
	if err != nil || sg.GetLeaseTtlMs() != 0 || sg.GetSize() != 100 {
		t.Fatalf("stale Get %v %v", sg, err)
	}
	ex, err := h.svc.Exist(ctx, &metadv1.ExistRequest{Key: []byte("k1")})
	if err != nil || !ex.GetExists() || ex.GetLeaseTtlMs() != 10000 {
		t.Fatalf("Exist %v %v", ex, err)
	}
	ex, err = h.svc.Exist(ctx, &metadv1.ExistRequest{Key: []byte("nope")})
	if err != nil || ex.GetExists() || ex.GetLeaseTtlMs() != 0 {
		t.Fatalf("Exist missing %v %v", ex, err)
	}
	ex, err = h.svc.Exist(ctx, &metadv1.ExistRequest{Tenant: "unknown-tenant", Key: []byte("k1")})
	if err != nil || ex.GetExists() {
		t.Fatalf("Exist in unknown tenant %v %v", ex, err)
	}
	_, err = h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k1"), Size: 100})
	wantReason(t, err, store.ObjectAlreadyExists)

	_, err = h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k1")})
	wantReason(t, err, store.ObjectHasLease)
	clk.Advance(11 * time.Second)
	if _, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k1")}); err != nil {
		t.Fatalf("Remove after the lease ran out: %v", err)
	}
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")})
	fe := wantReason(t, err, store.ObjectNotFound)
	if fe.Tenant != "default" || string(fe.Key) != "k1" {
		t.Fatalf("error about tenant %q key %q", fe.Tenant, fe.Key)
	}
	if h.b.Barriers.Load() == 0 {
		t.Fatal("linearizable reads took no read barrier")
	}
}

func TestRemoveLeaseForceAndFailedProposalClearsMarks(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 64)
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	n := h.b.Proposals.Load()
	_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k")})
	wantReason(t, err, store.ObjectHasLease)
	if got := h.b.Proposals.Load(); got != n {
		t.Fatalf("a rejected prepare proposed %d commands", got-n)
	}

	h.b.FailNextPropose(ha.ErrTimeout)
	_, err = h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true})
	if !errors.Is(err, ha.ErrTimeout) {
		t.Fatalf("Remove whose proposal timed out: %v, want ErrTimeout", err)
	}
	// The failed proposal cleared the unlink mark: the object reads again on the leader.
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}); err != nil {
		t.Fatalf("Get after a failed removal: %v", err)
	}
	if _, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true}); err != nil {
		t.Fatalf("forced Remove: %v", err)
	}
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantReason(t, err, store.ObjectNotFound)
}

func TestBatchRoundTripStatusesInOrder(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	item := func(k string) *metadv1.BatchPutStartRequest_Item {
		return &metadv1.BatchPutStartRequest_Item{Key: []byte(k), Size: 10}
	}
	h.put(t, "", "x", 10)
	bs, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA),
		Items: []*metadv1.BatchPutStartRequest_Item{item("a"), item("b"), item("x"), item("c")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []metadv1.Reason
	for i, r := range bs.GetResults() {
		got = append(got, r.GetStatus().GetReason())
		if ok := r.GetStatus().GetReason() == rOK; ok != (len(r.GetReplicas()) == 1) {
			t.Fatalf("item %d: status %v with %d replicas", i, r.GetStatus(), len(r.GetReplicas()))
		}
	}
	if want := []metadv1.Reason{rOK, rOK, rExists, rOK}; !slices.Equal(got, want) {
		t.Fatalf("BatchPutStart %v, want %v", got, want)
	}
	be, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(be.GetResults()), []metadv1.Reason{rOK, rNotFound, rOK}; !slices.Equal(got, want) {
		t.Fatalf("BatchPutEnd %v, want %v", got, want)
	}
	bg, err := h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: [][]byte{[]byte("b"), []byte("zz"), []byte("a"), []byte("c")}})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range bg.GetResults() {
		got = append(got, r.GetStatus().GetReason())
	}
	if want := []metadv1.Reason{rOK, rNotFound, rOK, rNotReady}; !slices.Equal(got, want) || bg.GetLeaseTtlMs() == 0 ||
		bg.GetResults()[0].GetSize() != 10 {
		t.Fatalf("BatchGet %v (lease %d), want %v", got, bg.GetLeaseTtlMs(), want)
	}
	bx, err := h.svc.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("c"), []byte("b")}})
	if err != nil || !slices.Equal(bx.GetExists(), []bool{true, false, false, true}) {
		t.Fatalf("BatchExist %v %v", bx, err)
	}
	br, err := h.svc.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("c"), []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(br.GetResults()), []metadv1.Reason{rOK, rBadWrite}; !slices.Equal(got, want) {
		t.Fatalf("BatchPutRevoke %v, want %v", got, want)
	}
	rm, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(rm.GetResults()), []metadv1.Reason{rHasLease, rNotFound, rHasLease}; !slices.Equal(got, want) {
		t.Fatalf("BatchRemove %v, want %v", got, want)
	}
	n := h.b.Proposals.Load()
	rm, err = h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("zz"), []byte("b"), []byte("a")}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(rm.GetResults()), []metadv1.Reason{rNotFound, rOK, rOK}; !slices.Equal(got, want) {
		t.Fatalf("forced BatchRemove %v, want %v", got, want)
	}
	if d := h.b.Proposals.Load() - n; d != 1 {
		t.Fatalf("BatchRemove proposed %d commands, want 1", d)
	}
	n = h.b.Proposals.Load()
	rm, err = h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("a"), []byte("b")}, Force: true})
	if err != nil || !slices.Equal(reasons(rm.GetResults()), []metadv1.Reason{rNotFound, rNotFound}) {
		t.Fatalf("BatchRemove of removed keys %v %v", rm, err)
	}
	if d := h.b.Proposals.Load() - n; d != 0 {
		t.Fatalf("a BatchRemove with every item rejected proposed %d commands", d)
	}
	_, err = h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{Tenant: "nobody", ClientId: idb(clientA), Keys: [][]byte{[]byte("a")}})
	wantReason(t, err, store.TenantNotRegistered)
}

func TestListGroupRemoveGroupRemoveAll(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	for _, k := range []string{"m3", "m1", "m2"} {
		if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(k), Group: []byte("g"), Size: 8}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"s1", "s2", "s3"} {
		h.put(t, "", k, 8)
	}
	lg, err := h.svc.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g"), Limit: 2})
	if err != nil || len(lg.GetKeys()) != 2 || string(lg.GetKeys()[0]) != "m1" || string(lg.GetKeys()[1]) != "m2" || !lg.GetTruncated() {
		t.Fatalf("ListGroup page 1: %v %v", lg, err)
	}
	lg, err = h.svc.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g"), StartAfter: []byte("m2")})
	if err != nil || len(lg.GetKeys()) != 1 || string(lg.GetKeys()[0]) != "m3" || lg.GetTruncated() {
		t.Fatalf("ListGroup page 2: %v %v", lg, err)
	}
	// Reading a member leases the group; removal without force is refused.
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("m1")}); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g")})
	wantReason(t, err, store.ObjectHasLease)
	rg, err := h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g"), Force: true})
	if err != nil || rg.GetRemoved() != 3 {
		t.Fatalf("RemoveGroup force: %v %v", rg, err)
	}
	_, err = h.svc.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g")})
	wantReason(t, err, store.ObjectNotFound)

	clk.Advance(11 * time.Second) // every lease so far runs out
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("s2")}); err != nil {
		t.Fatal(err)
	}
	ra, err := h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
	if err != nil || ra.GetRemoved() != 2 || ra.GetSkipped() != 1 {
		t.Fatalf("RemoveAll: %v %v", ra, err)
	}
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("s2")}); err != nil {
		t.Fatalf("the leased object went: %v", err)
	}
	ra, err = h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{Force: true})
	if err != nil || ra.GetRemoved() != 1 || ra.GetSkipped() != 0 {
		t.Fatalf("RemoveAll force: %v %v", ra, err)
	}
}

func TestUpsertReportsReuse(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "u", 100)
	up := func(size uint64) *metadv1.UpsertStartResponse {
		t.Helper()
		r, err := h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("u"), Size: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.UpsertEnd(ctx, &metadv1.UpsertEndRequest{ClientId: idb(clientA), Key: []byte("u")}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if !up(100).GetReused() {
		t.Fatal("same-size upsert not reported as reused")
	}
	if up(300).GetReused() {
		t.Fatal("resizing upsert reported as reused")
	}
	r, err := h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("new"), Size: 5})
	if err != nil || r.GetReused() {
		t.Fatalf("upsert of a new key: %v %v", r, err)
	}
	if _, err := h.svc.UpsertRevoke(ctx, &metadv1.UpsertRevokeRequest{ClientId: idb(clientA), Key: []byte("new")}); err != nil {
		t.Fatal(err)
	}
}
