package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
)

// wantErr checks err's code and ErrorDetail reason.
func wantErr(t *testing.T, err error, code codes.Code, reason metadv1.Reason) *metadv1.ErrorDetail {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("got %v, want code %s reason %s", err, code, reason)
	}
	if st.Code() != code {
		t.Fatalf("code %s (%s), want %s", st.Code(), st.Message(), code)
	}
	d := detailOf(err)
	if d == nil {
		t.Fatalf("%s: no ErrorDetail", st.Message())
	}
	if d.GetReason() != reason {
		t.Fatalf("reason %s (%s), want %s", d.GetReason(), st.Message(), reason)
	}
	return d
}

func detailOf(err error) *metadv1.ErrorDetail {
	for _, d := range status.Convert(err).Details() {
		if ed, ok := d.(*metadv1.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

func reasons(sts []*metadv1.Status) []metadv1.Reason {
	out := make([]metadv1.Reason, len(sts))
	for i, s := range sts {
		out[i] = s.GetReason()
	}
	return out
}

const (
	rOK        = metadv1.Reason_REASON_UNSPECIFIED
	rNotFound  = metadv1.Reason_REASON_OBJECT_NOT_FOUND
	rExists    = metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS
	rNotReady  = metadv1.Reason_REASON_REPLICA_IS_NOT_READY
	rBadWrite  = metadv1.Reason_REASON_INVALID_WRITE
	rHasLease  = metadv1.Reason_REASON_OBJECT_HAS_LEASE
	rNoTenant  = metadv1.Reason_REASON_TENANT_NOT_REGISTERED
	rNotLeader = metadv1.Reason_REASON_NOT_LEADER
	rUnavail   = metadv1.Reason_REASON_UNAVAILABLE
)

func TestPutGetExistRemoveRoundTrip(t *testing.T) {
	clk := newFakeClock()
	h := start(t, newFakeBackend(t, clk.Now), withClock(clk, testConfig()))
	ctx := tctx(t)
	h.mount(t, clientA, segA)

	ps, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k1"), Size: 100,
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
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")})
	wantErr(t, err, codes.FailedPrecondition, rNotReady)

	if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k1")}); err != nil {
		t.Fatal(err)
	}
	g, err := h.meta.Get(ctx, &metadv1.GetRequest{Tenant: "default", Key: []byte("k1")})
	if err != nil {
		t.Fatal(err)
	}
	if g.GetSize() != 100 || g.GetDataType() != 7 || g.GetLeaseTtlMs() != 10000 || len(g.GetReplicas()) != 1 ||
		g.GetReplicas()[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
		t.Fatalf("Get %v", g)
	}
	sg, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k1"), Stale: true})
	if err != nil || sg.GetLeaseTtlMs() != 0 || sg.GetSize() != 100 {
		t.Fatalf("stale Get %v %v", sg, err)
	}
	ex, err := h.meta.Exist(ctx, &metadv1.ExistRequest{Key: []byte("k1")})
	if err != nil || !ex.GetExists() || ex.GetLeaseTtlMs() != 10000 {
		t.Fatalf("Exist %v %v", ex, err)
	}
	ex, err = h.meta.Exist(ctx, &metadv1.ExistRequest{Key: []byte("nope")})
	if err != nil || ex.GetExists() || ex.GetLeaseTtlMs() != 0 {
		t.Fatalf("Exist missing %v %v", ex, err)
	}
	ex, err = h.meta.Exist(ctx, &metadv1.ExistRequest{Tenant: "unknown-tenant", Key: []byte("k1")})
	if err != nil || ex.GetExists() {
		t.Fatalf("Exist in unknown tenant %v %v", ex, err)
	}
	_, err = h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k1"), Size: 100})
	wantErr(t, err, codes.AlreadyExists, rExists)

	_, err = h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k1")})
	wantErr(t, err, codes.FailedPrecondition, rHasLease)
	clk.Advance(11 * time.Second)
	if _, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k1")}); err != nil {
		t.Fatalf("Remove after the lease ran out: %v", err)
	}
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k1")})
	d := wantErr(t, err, codes.NotFound, rNotFound)
	if d.GetTenant() != "default" || string(d.GetKey()) != "k1" {
		t.Fatalf("detail %v", d)
	}
	if h.b.Barriers.Load() == 0 {
		t.Fatal("linearizable reads took no read barrier")
	}
}

func TestRemoveLeaseForceAndFailedProposalClearsMarks(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 64)
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	n := h.b.Proposals.Load()
	_, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k")})
	wantErr(t, err, codes.FailedPrecondition, rHasLease)
	if got := h.b.Proposals.Load(); got != n {
		t.Fatalf("a rejected prepare proposed %d commands", got-n)
	}

	h.b.FailNextPropose(errTimeoutForTest)
	_, err = h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true})
	wantErr(t, err, codes.Unavailable, rUnavail)
	// The failed proposal cleared the unlink mark: the object reads again on the leader.
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}); err != nil {
		t.Fatalf("Get after a failed removal: %v", err)
	}
	if _, err := h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k"), Force: true}); err != nil {
		t.Fatalf("forced Remove: %v", err)
	}
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantErr(t, err, codes.NotFound, rNotFound)
}

func TestBatchRoundTripStatusesInOrder(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	item := func(k string) *metadv1.BatchPutStartRequest_Item {
		return &metadv1.BatchPutStartRequest_Item{Key: []byte(k), Size: 10}
	}
	h.put(t, "", "x", 10)
	bs, err := h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA),
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
	be, err := h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(be.GetResults()), []metadv1.Reason{rOK, rNotFound, rOK}; !slices.Equal(got, want) {
		t.Fatalf("BatchPutEnd %v, want %v", got, want)
	}
	bg, err := h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: [][]byte{[]byte("b"), []byte("zz"), []byte("a"), []byte("c")}})
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
	bx, err := h.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("c"), []byte("b")}})
	if err != nil || !slices.Equal(bx.GetExists(), []bool{true, false, false, true}) {
		t.Fatalf("BatchExist %v %v", bx, err)
	}
	br, err := h.meta.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("c"), []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(br.GetResults()), []metadv1.Reason{rOK, rBadWrite}; !slices.Equal(got, want) {
		t.Fatalf("BatchPutRevoke %v, want %v", got, want)
	}
	rm, err := h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("a"), []byte("zz"), []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(rm.GetResults()), []metadv1.Reason{rHasLease, rNotFound, rHasLease}; !slices.Equal(got, want) {
		t.Fatalf("BatchRemove %v, want %v", got, want)
	}
	n := h.b.Proposals.Load()
	rm, err = h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("zz"), []byte("b"), []byte("a")}, Force: true})
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
	rm, err = h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("a"), []byte("b")}, Force: true})
	if err != nil || !slices.Equal(reasons(rm.GetResults()), []metadv1.Reason{rNotFound, rNotFound}) {
		t.Fatalf("BatchRemove of removed keys %v %v", rm, err)
	}
	if d := h.b.Proposals.Load() - n; d != 0 {
		t.Fatalf("a BatchRemove with every item rejected proposed %d commands", d)
	}
	_, err = h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{Tenant: "nobody", ClientId: idb(clientA), Keys: [][]byte{[]byte("a")}})
	wantErr(t, err, codes.NotFound, rNoTenant)
}

func TestListGroupRemoveGroupRemoveAll(t *testing.T) {
	clk := newFakeClock()
	h := start(t, newFakeBackend(t, clk.Now), withClock(clk, testConfig()))
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	for _, k := range []string{"m3", "m1", "m2"} {
		if _, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(k), Group: []byte("g"), Size: 8}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"s1", "s2", "s3"} {
		h.put(t, "", k, 8)
	}
	lg, err := h.meta.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g"), Limit: 2})
	if err != nil || len(lg.GetKeys()) != 2 || string(lg.GetKeys()[0]) != "m1" || string(lg.GetKeys()[1]) != "m2" || !lg.GetTruncated() {
		t.Fatalf("ListGroup page 1: %v %v", lg, err)
	}
	lg, err = h.meta.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g"), StartAfter: []byte("m2")})
	if err != nil || len(lg.GetKeys()) != 1 || string(lg.GetKeys()[0]) != "m3" || lg.GetTruncated() {
		t.Fatalf("ListGroup page 2: %v %v", lg, err)
	}
	// Reading a member leases the group; removal without force is refused.
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("m1")}); err != nil {
		t.Fatal(err)
	}
	_, err = h.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g")})
	wantErr(t, err, codes.FailedPrecondition, rHasLease)
	rg, err := h.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Group: []byte("g"), Force: true})
	if err != nil || rg.GetRemoved() != 3 {
		t.Fatalf("RemoveGroup force: %v %v", rg, err)
	}
	_, err = h.meta.ListGroup(ctx, &metadv1.ListGroupRequest{Group: []byte("g")})
	wantErr(t, err, codes.NotFound, rNotFound)

	clk.Advance(11 * time.Second) // every lease so far runs out
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("s2")}); err != nil {
		t.Fatal(err)
	}
	ra, err := h.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
	if err != nil || ra.GetRemoved() != 2 || ra.GetSkipped() != 1 {
		t.Fatalf("RemoveAll: %v %v", ra, err)
	}
	if _, err := h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("s2")}); err != nil {
		t.Fatalf("the leased object went: %v", err)
	}
	ra, err = h.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{Force: true})
	if err != nil || ra.GetRemoved() != 1 || ra.GetSkipped() != 0 {
		t.Fatalf("RemoveAll force: %v %v", ra, err)
	}
}

func TestUpsertReportsReuse(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "u", 100)
	up := func(size uint64) *metadv1.UpsertStartResponse {
		t.Helper()
		r, err := h.meta.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("u"), Size: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.meta.UpsertEnd(ctx, &metadv1.UpsertEndRequest{ClientId: idb(clientA), Key: []byte("u")}); err != nil {
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
	r, err := h.meta.UpsertStart(ctx, &metadv1.UpsertStartRequest{ClientId: idb(clientA), Key: []byte("new"), Size: 5})
	if err != nil || r.GetReused() {
		t.Fatalf("upsert of a new key: %v %v", r, err)
	}
	if _, err := h.meta.UpsertRevoke(ctx, &metadv1.UpsertRevokeRequest{ClientId: idb(clientA), Key: []byte("new")}); err != nil {
		t.Fatal(err)
	}
}

func TestSegmentsPingAndAdmin(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segB)
	h.mount(t, clientA, segA)
	h.mount(t, clientA, segA)                                                            // idempotent
	p, err := h.meta.Ping(ctx, &metadv1.PingRequest{ClientId: []byte(clientA.String())}) // string form
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetSegmentIds()) != 2 || string(p.GetSegmentIds()[0]) != string(idb(segA)) || p.GetClientTtlMs() != 3600000 ||
		p.GetLeaderName() != "self" || len(p.GetMemberAddresses()) != 1 {
		t.Fatalf("Ping %v", p)
	}
	ls, err := h.admin.ListSegments(ctx, &metadv1.ListSegmentsRequest{ClientId: idb(clientA)})
	if err != nil || len(ls.GetSegments()) != 2 {
		t.Fatalf("ListSegments %v %v", ls, err)
	}
	h.put(t, "", "x", 100)
	ls, err = h.admin.ListSegments(ctx, &metadv1.ListSegmentsRequest{Stale: true, Tier: metadv1.Tier_TIER_MEMORY})
	if err != nil {
		t.Fatal(err)
	}
	var reps, used uint64
	for _, s := range ls.GetSegments() {
		reps += s.GetReplicas()
		used += s.GetUsedBytes()
	}
	if reps != 1 || used != 128 {
		t.Fatalf("ListSegments: %d replicas, %d bytes used", reps, used)
	}

	rt, err := h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t1", QuotaBytes: 1 << 30})
	if err != nil || rt.GetInstanceId() < 2 {
		t.Fatalf("RegisterTenant %v %v", rt, err)
	}
	_, err = h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t1"})
	wantErr(t, err, codes.AlreadyExists, metadv1.Reason_REASON_TENANT_ALREADY_EXISTS)
	sq, err := h.admin.SetQuota(ctx, &metadv1.SetQuotaRequest{Tenant: "t1", QuotaBytes: 1 << 20})
	if err != nil || sq.GetRequestedQuotaBytes() != 1<<20 || sq.GetEffectiveQuotaBytes() == 0 {
		t.Fatalf("SetQuota %v %v", sq, err)
	}
	gq, err := h.admin.GetQuota(ctx, &metadv1.GetQuotaRequest{Tenant: "t1"})
	if err != nil || gq.GetCapacityBytes() != 2<<20 || gq.GetRequestedQuotaBytes() != 1<<20 {
		t.Fatalf("GetQuota %v %v", gq, err)
	}
	lt, err := h.admin.ListTenants(ctx, &metadv1.ListTenantsRequest{})
	if err != nil || len(lt.GetTenants()) != 2 || lt.GetTenants()[0].GetName() != "default" || lt.GetTenants()[0].GetObjects() != 1 {
		t.Fatalf("ListTenants %v %v", lt, err)
	}
	h.put(t, "t1", "y", 10)
	_, err = h.admin.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "t1"})
	wantErr(t, err, codes.FailedPrecondition, metadv1.Reason_REASON_TENANT_NOT_EMPTY)
	ut, err := h.admin.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "t1", Force: true})
	if err != nil || ut.GetObjectsRemoved() != 1 {
		t.Fatalf("UnregisterTenant force %v %v", ut, err)
	}
	_, err = h.admin.GetQuota(ctx, &metadv1.GetQuotaRequest{Tenant: "t1"})
	wantErr(t, err, codes.NotFound, rNoTenant)

	um, err := h.meta.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientA), SegmentId: idb(segA)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unmount: %v", um)
	st, err := h.admin.Status(ctx, &metadv1.StatusRequest{})
	if err != nil || st.GetRole() != metadv1.NodeRole_NODE_ROLE_LEADER || st.GetTenants() != 1 || st.GetSegments() != 1 {
		t.Fatalf("Status %v %v", st, err)
	}
	if n := h.b.Status().AppliedIndex; n == 0 || st.GetAppliedIndex() != n || st.GetCommitIndex() != n || st.GetLastLogIndex() != n {
		t.Fatalf("Status: applied %d, commit %d, last log %d; want %d each", st.GetAppliedIndex(), st.GetCommitIndex(), st.GetLastLogIndex(), n)
	}
	lm, err := h.admin.ListMembers(ctx, &metadv1.ListMembersRequest{})
	if err != nil || len(lm.GetMembers()) != 1 {
		t.Fatalf("ListMembers %v %v", lm, err)
	}
	tl, err := h.admin.TransferLeader(ctx, &metadv1.TransferLeaderRequest{})
	if err != nil || tl.GetLeaderAddress() != "self-addr" {
		t.Fatalf("TransferLeader %v %v", tl, err)
	}
	ss, err := h.admin.SnapshotSave(ctx, &metadv1.SnapshotSaveRequest{})
	if err == nil {
		_, err = ss.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("SnapshotSave: %v", err)
	}
}

func TestHealthLeaderService(t *testing.T) {
	b := newFakeBackend(t, nil)
	h := start(t, b, testConfig())
	hc := healthpb.NewHealthClient(h.cc)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		r, err := hc.Check(tctx(t), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	waitFor := func(service string, want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for check(service) != want {
			if time.Now().After(deadline) {
				t.Fatalf("health %q never became %s", service, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("", healthpb.HealthCheckResponse_SERVING)
	waitFor("leader", healthpb.HealthCheckResponse_SERVING)
	b.SetLeader(false, "", "")
	waitFor("leader", healthpb.HealthCheckResponse_NOT_SERVING)
	b.SetLeader(true, "", "")
	waitFor("leader", healthpb.HealthCheckResponse_SERVING)
	h.srv.SetNotServing()
	waitFor("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor("leader", healthpb.HealthCheckResponse_NOT_SERVING)
}

// TestQuotaEvictionRetriesThePut: a PutStart over the tenant's quota calls the quota evictor and
// tries again, at most twice; when the evictor frees room the put succeeds.
func TestQuotaEvictionRetriesThePut(t *testing.T) {
	b := newFakeBackend(t, nil)
	calls := 0
	var h *harness
	cfg := testConfig()
	cfg.QuotaEvictor = func(ctx context.Context, tenant string, want uint64) (uint64, error) {
		calls++
		if want != 600 {
			t.Errorf("evictor asked for %d bytes, want 600", want)
		}
		if calls == 2 { // the second round frees the old object
			if err := b.Store().Remove(1, tenant, "old", true); err != nil {
				t.Error(err)
			}
			return 600, nil
		}
		return 1, nil // freed something, not enough
	}
	h = start(t, b, cfg)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	if _, err := h.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "q", QuotaBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	put := func(key string) error {
		_, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "q", ClientId: idb(clientA), Key: []byte(key), Size: 600})
		return err
	}
	if err := put("old"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: "q", ClientId: idb(clientA), Key: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if err := put("new"); err != nil {
		t.Fatalf("put after quota eviction: %v (evictor called %d times)", err, calls)
	}
	if calls != 2 {
		t.Fatalf("evictor called %d times, want 2", calls)
	}
	// An evictor that frees nothing leaves the rejection standing, after one call.
	calls = 0
	cfg.QuotaEvictor = func(context.Context, string, uint64) (uint64, error) { calls++; return 0, nil }
	h2 := start(t, newFakeBackend(t, nil), cfg)
	h2.mount(t, clientA, segA)
	if _, err := h2.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "q", QuotaBytes: 100}); err != nil {
		t.Fatal(err)
	}
	_, err := h2.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "q", ClientId: idb(clientA), Key: []byte("k"), Size: 600})
	wantErr(t, err, codes.ResourceExhausted, metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED)
	if calls != 1 {
		t.Fatalf("evictor called %d times, want 1", calls)
	}
}
