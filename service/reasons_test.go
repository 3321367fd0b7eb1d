package service_test

import (
	"fmt"
	"strings"
	"testing"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// TestEveryReasonProvoked provokes every store rejection a request can meet and checks the error
// the service returns: its reason, the key it is about, and a message that starts with the
// reason. (What each becomes on the wire is server's TestServiceErrorsMap.)
func TestEveryReasonProvoked(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "done", 64)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("pending"), Size: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "small", QuotaBytes: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("done")}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason store.Reason
		key    string
		call   func() error
	}{
		{store.InvalidParams, "", func() error {
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{})
			return err
		}},
		{store.TenantNotRegistered, "k", func() error {
			_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "ghost", ClientId: idb(clientA), Key: []byte("k"), Size: 1})
			return err
		}},
		{store.TenantNotEmpty, "", func() error {
			_, err := h.svc.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "default"})
			return err
		}},
		{store.TenantQuotaExceeded, "big", func() error {
			_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: "small", ClientId: idb(clientA), Key: []byte("big"), Size: 128})
			return err
		}},
		{store.TenantAlreadyExists, "", func() error {
			_, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "default"})
			return err
		}},
		{store.ObjectNotFound, "missing", func() error {
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("missing")})
			return err
		}},
		{store.ObjectAlreadyExists, "done", func() error {
			_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("done"), Size: 1})
			return err
		}},
		{store.ObjectHasLease, "done", func() error {
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("done")})
			return err
		}},
		{store.ReplicaIsNotReady, "pending", func() error {
			_, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("pending")})
			return err
		}},
		{store.InvalidWrite, "done", func() error {
			_, err := h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: idb(clientA), Key: []byte("done")})
			return err
		}},
		{store.IllegalClient, "pending", func() error {
			_, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientB), Key: []byte("pending")})
			return err
		}},
		{store.NoAvailableHandle, "huge", func() error {
			_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("huge"), Size: 4 << 20})
			return err
		}},
		{store.SegmentNotFound, "", func() error {
			_, err := h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientA), SegmentId: idb(segB)})
			return err
		}},
		{store.StateReplaced, "replaced", func() error {
			// A restore commits before every attempt: the server gives up after service.MaxReplaced.
			h.put(t, "", "replaced", 8)
			h.b.RestoreBeforeEachApply(t, service.MaxReplaced+1)
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("replaced")})
			return err
		}},
		{store.AuthRevisionStale, "", func() error {
			// An auth change commits before every attempt: the service gives up after
			// service.MaxAuthStale checks again (authz_test.go).
			n := newHarness(t, nil)
			n.b.MustApply(t, servicetest.Grant("ops", "admin"))
			tok, _ := servicetest.NewKey(t, n.b, "ops", 0)
			n.b.AuthChangeBeforeEachApply(t, service.MaxAuthStale+1)
			_, err := authed(ctx, n, service.Caller{Principal: "ops", KeyID: servicetest.KeyID(tok)}, metadv1.Admin_SetQuota_FullMethodName,
				&metadv1.SetQuotaRequest{QuotaBytes: 1 << 20}, n.svc.SetQuota)
			return err
		}},
		{store.LearnerNotCaughtUp, "", func() error {
			h.b.SetMembers("self", "l1")
			h.b.SetLearner("l1")
			defer h.b.SetMembers()
			_, err := h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "l1"}) // no one to ask its progress
			return err
		}},
		{store.MemberNotFound, "", func() error {
			_, err := h.svc.RemoveMember(ctx, &metadv1.RemoveMemberRequest{Name: "ghost"})
			return err
		}},
		{store.SessionExpired, "sess", func() error {
			_, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("sess"), Size: 8,
				Session: &metadv1.SessionHeader{SessionId: 999, Seq: 1}})
			return err
		}},
		{store.SequenceTooOld, "old", func() error {
			open, err := h.svc.OpenSession(ctx, &metadv1.OpenSessionRequest{})
			if err != nil {
				return err
			}
			id := open.GetSessionId()
			for i, key := range []string{"s1", "s2"} {
				seq := uint64(i + 1)
				if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(key), Size: 8,
					Session: &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: seq}}); err != nil {
					return err
				}
			}
			_, err = h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("old"), Size: 8,
				Session: &metadv1.SessionHeader{SessionId: id, Seq: 1, FirstUnackedSeq: 1}})
			return err
		}},
		{store.KeyNotFound, "", func() error {
			_, err := h.svc.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: "0123456789abcdef"})
			return err
		}},
		{store.RoleNotFound, "", func() error {
			_, err := h.svc.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "nobody", Role: "reader"})
			return err
		}},
		{store.KeyAlreadyExists, "", func() error {
			// Every id drawn is the same: the first key takes it, and the second draw gives up
			// after keyIDTries.
			fixed := start(t, servicetest.NewBackend(t, nil), func() service.Config { c := testConfig(); c.KeyRand = zeros{}; return c }())
			if _, err := fixed.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "a"}); err != nil {
				return err
			}
			_, err := fixed.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "b"})
			return err
		}},
		{store.AuthLimitExceeded, "", func() error {
			for i := range auth.MaxRolesPerPrincipal {
				if _, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "many", Role: fmt.Sprintf("tenant:t%d", i)}); err != nil {
					return err
				}
			}
			_, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "many", Role: "reader"})
			return err
		}},
		{store.AuthRevisionStale, "", func() error {
			// Every proposal carries revision 1, as if authorized before the grants that made
			// the state's revision 2.
			if _, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "x", Role: "reader"}); err != nil {
				return err
			}
			if _, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "y", Role: "reader"}); err != nil {
				return err
			}
			h.b.StaleAuth.Store(1)
			defer h.b.StaleAuth.Store(0)
			_, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "late"})
			return err
		}},
		{store.ReplicaNotFound, "done", func() error {
			_, err := h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientA), Key: []byte("done"), SourceSegmentId: idb(segB)})
			return err
		}},
		{store.ObjectNoReplicationTask, "done", func() error {
			_, err := h.svc.MoveEnd(ctx, &metadv1.MoveEndRequest{ClientId: idb(clientA), Key: []byte("done")})
			return err
		}},
		{store.ObjectHasReplicationTask, "task", func() error {
			h.mount(t, clientB, segB)
			if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("task"), Size: 64,
				Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(segA)}}}); err != nil {
				return err
			}
			if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("task")}); err != nil {
				return err
			}
			if _, err := h.svc.CopyStart(ctx, &metadv1.CopyStartRequest{ClientId: idb(clientA), Key: []byte("task"),
				SourceSegmentId: idb(segA), TargetSegmentIds: [][]byte{idb(segB)}}); err != nil {
				return err
			}
			_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("task"), Force: true})
			return err
		}},
		{store.TaskNotFound, "", func() error {
			_, err := h.svc.QueryTask(ctx, &metadv1.QueryTaskRequest{TaskId: 999})
			return err
		}},
		{store.TaskPendingLimitExceeded, "done", func() error {
			spec := store.TaskSpec{Kind: store.TaskCopy, Tenant: "default", Key: "done"}
			for range store.MaxPendingTasks { // filled in the store directly: 65536 calls take long
				if _, err := h.b.Store().Tasks().Create(0, spec); err != nil {
					return err
				}
			}
			_, err := h.svc.CreateCopyTask(ctx, &metadv1.CreateCopyTaskRequest{Key: []byte("done")})
			return err
		}},
		{store.SegmentOwnedByOtherClient, "", func() error {
			_, err := h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientB), Segment: &metadv1.SegmentDesc{
				Id: idb(segA), Name: "seg", Base: 1 << 20, Size: 1 << 20, Endpoint: "ep", Tier: metadv1.Tier_TIER_MEMORY}})
			return err
		}},
		{store.DrainNotFound, "", func() error {
			_, err := h.svc.DrainStatus(ctx, &metadv1.DrainStatusRequest{DrainId: 99})
			return err
		}},
		{store.SegmentDraining, "", func() error { // last: it closes segA
			req := &metadv1.StartDrainRequest{SegmentIds: [][]byte{idb(segA)}}
			if _, err := h.svc.StartDrain(ctx, req); err != nil {
				return err
			}
			_, err := h.svc.StartDrain(ctx, req)
			return err
		}},
	}
	// RESPONSE_LIMIT_REACHED is only ever a BatchGet item's status, never a call's error
	// (TestBatchGetResponseBounded provokes it); DRAIN_NOT_RUNNING refuses only the leader's own
	// commands (ScheduleDrainMoves, FinishDrain), never a request. RESERVATION_LOST needs a leader
	// change after a PutStart answered from an arena (test/e2e TestReservationLostAtLeaderChange).
	covered := map[store.Reason]bool{store.OK: true, store.ResponseLimitReached: true, store.DrainNotRunning: true,
		store.ReservationLost: true}
	for _, tc := range cases {
		t.Run(tc.reason.String(), func(t *testing.T) {
			err := tc.call()
			fe := wantReason(t, err, tc.reason)
			if string(fe.Key) != tc.key {
				t.Errorf("error about key %q, want %q", fe.Key, tc.key)
			}
			if !strings.HasPrefix(err.Error(), tc.reason.String()+": ") {
				t.Errorf("message %q does not start with the reason", err)
			}
			covered[tc.reason] = true
		})
	}
	// A reason that only items carry is an item's status.
	t.Run(store.NoReplicaOnSegment.String(), func(t *testing.T) {
		resp, err := h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientB), Keys: [][]byte{[]byte("done")}})
		if err != nil {
			t.Fatal(err)
		}
		st := resp.GetResults()[0]
		if st.GetReason() != metadv1.Reason_REASON_NO_REPLICA_ON_SEGMENT || !strings.HasPrefix(st.GetMessage(), "NO_REPLICA_ON_SEGMENT: ") {
			t.Fatalf("item status %v", st)
		}
		covered[store.NoReplicaOnSegment] = true
	})
	for _, r := range store.Reasons() {
		if !covered[r] {
			t.Errorf("store reason %s not provoked", r)
		}
	}
}
