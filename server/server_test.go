package server

import (
	"context"
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

const (
	rNotFound  = metadv1.Reason_REASON_OBJECT_NOT_FOUND
	rExists    = metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS
	rNotLeader = metadv1.Reason_REASON_NOT_LEADER
	rUnavail   = metadv1.Reason_REASON_UNAVAILABLE
)

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

// TestSnapshotSaveWithoutSnapshots: over a backend that takes no snapshots, the SnapshotSave
// stream answers Unimplemented.
func TestSnapshotSaveWithoutSnapshots(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ss, err := h.admin.SnapshotSave(tctx(t), &metadv1.SnapshotSaveRequest{})
	if err == nil {
		_, err = ss.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("SnapshotSave: %v", err)
	}
}

// TestQuotaEvictionRetriesThePut: a PutStart over the tenant's quota has the evictor evict for the
// deficit and tries again, at most twice; when the evictor frees room the put succeeds.
func TestQuotaEvictionRetriesThePut(t *testing.T) {
	b := newFakeBackend(t, nil)
	calls := 0
	var h *harness
	cfg := testConfig()
	cfg.Evictor = quotaEvictor(func(ctx context.Context, tenant string, deficit uint64) (uint64, error) {
		calls++
		if deficit != 200 { // 600 charged + 600 wanted - 1000 of quota
			t.Errorf("evictor asked for %d bytes, want 200", deficit)
		}
		if calls == 2 { // the second round frees the old object
			if err := b.Store().Remove(1, tenant, "old", true); err != nil {
				t.Error(err)
			}
			return 600, nil
		}
		return 1, nil // freed something, not enough
	})
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
	cfg.Evictor = quotaEvictor(func(context.Context, string, uint64) (uint64, error) { calls++; return 0, nil })
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
