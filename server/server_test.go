package server

import (
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
