package service_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

func TestSegmentsPingAndAdmin(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segB)
	h.mount(t, clientA, segA)
	h.mount(t, clientA, segA)                                                           // idempotent
	p, err := h.svc.Ping(ctx, &metadv1.PingRequest{ClientId: []byte(clientA.String())}) // string form
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetSegmentIds()) != 2 || string(p.GetSegmentIds()[0]) != string(idb(segA)) || p.GetClientTtlMs() != 3600000 ||
		p.GetLeaderName() != "self" || len(p.GetMemberAddresses()) != 1 {
		t.Fatalf("Ping %v", p)
	}
	ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{ClientId: idb(clientA)})
	if err != nil || len(ls.GetSegments()) != 2 {
		t.Fatalf("ListSegments %v %v", ls, err)
	}
	h.put(t, "", "x", 100)
	ls, err = h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{Stale: true, Tier: metadv1.Tier_TIER_MEMORY})
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

	rt, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t1", QuotaBytes: 1 << 30})
	if err != nil || rt.GetInstanceId() < 2 {
		t.Fatalf("RegisterTenant %v %v", rt, err)
	}
	_, err = h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t1"})
	wantReason(t, err, store.TenantAlreadyExists)
	sq, err := h.svc.SetQuota(ctx, &metadv1.SetQuotaRequest{Tenant: "t1", QuotaBytes: 1 << 20})
	if err != nil || sq.GetRequestedQuotaBytes() != 1<<20 || sq.GetEffectiveQuotaBytes() == 0 {
		t.Fatalf("SetQuota %v %v", sq, err)
	}
	gq, err := h.svc.GetQuota(ctx, &metadv1.GetQuotaRequest{Tenant: "t1"})
	if err != nil || gq.GetCapacityBytes() != 2<<20 || gq.GetRequestedQuotaBytes() != 1<<20 {
		t.Fatalf("GetQuota %v %v", gq, err)
	}
	lt, err := h.svc.ListTenants(ctx, &metadv1.ListTenantsRequest{})
	if err != nil || len(lt.GetTenants()) != 2 || lt.GetTenants()[0].GetName() != "default" || lt.GetTenants()[0].GetObjects() != 1 {
		t.Fatalf("ListTenants %v %v", lt, err)
	}
	h.put(t, "t1", "y", 10)
	_, err = h.svc.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "t1"})
	wantReason(t, err, store.TenantNotEmpty)
	ut, err := h.svc.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "t1", Force: true})
	if err != nil || ut.GetObjectsRemoved() != 1 {
		t.Fatalf("UnregisterTenant force %v %v", ut, err)
	}
	_, err = h.svc.GetQuota(ctx, &metadv1.GetQuotaRequest{Tenant: "t1"})
	wantReason(t, err, store.TenantNotRegistered)

	um, err := h.svc.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientA), SegmentId: idb(segA)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unmount: %v", um)
	st, err := h.svc.Status(ctx, &metadv1.StatusRequest{})
	if err != nil || st.GetRole() != metadv1.NodeRole_NODE_ROLE_LEADER || st.GetTenants() != 1 || st.GetSegments() != 1 {
		t.Fatalf("Status %v %v", st, err)
	}
	if n := h.b.Status().AppliedIndex; n == 0 || st.GetAppliedIndex() != n || st.GetCommitIndex() != n || st.GetLastLogIndex() != n {
		t.Fatalf("Status: applied %d, commit %d, last log %d; want %d each", st.GetAppliedIndex(), st.GetCommitIndex(), st.GetLastLogIndex(), n)
	}
	lm, err := h.svc.ListMembers(ctx, &metadv1.ListMembersRequest{})
	if err != nil || len(lm.GetMembers()) != 1 {
		t.Fatalf("ListMembers %v %v", lm, err)
	}
	tl, err := h.svc.TransferLeader(ctx, &metadv1.TransferLeaderRequest{})
	if err != nil || tl.GetLeaderAddress() != "self-addr" {
		t.Fatalf("TransferLeader %v %v", tl, err)
	}
	// The backend has no snapshots (service.Snapshots).
	if _, err := h.svc.OpenSnapshot(ctx, false); !errors.Is(err, service.ErrUnimplemented) {
		t.Fatalf("OpenSnapshot: %v, want ErrUnimplemented", err)
	}
}

// TestAuthAdminCalls: keys and role bindings through the Admin calls, as the replicated state
// records them; the token is returned once and verifies against the state.
func TestAuthAdminCalls(t *testing.T) {
	clock := servicetest.NewClock()
	h := start(t, servicetest.NewBackend(t, clock.Now), withClock(clock, testConfig()))
	ctx := tctx(t)

	k, err := h.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "alice", TtlMs: 3_600_000})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now().UnixMilli()
	if len(k.GetKeyId()) != auth.KeyIDLen || !strings.HasPrefix(k.GetToken(), auth.TokenPrefix+k.GetKeyId()+"_") ||
		k.GetExpiresMs() != now+3_600_000 {
		t.Fatalf("CreateKey: %v", k)
	}
	got, err := h.b.FSM().Auth().VerifyToken(k.GetToken(), now)
	if err != nil || got.Principal != "alice" || got.CreatedMs != now {
		t.Fatalf("the token does not verify: %+v, %v", got, err)
	}
	forever, err := h.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: auth.RootPrincipal})
	if err != nil || forever.GetExpiresMs() != 0 || forever.GetKeyId() == k.GetKeyId() || forever.GetToken() == k.GetToken() {
		t.Fatalf("second key: %v, %v", forever, err)
	}
	keys, err := h.svc.ListKeys(ctx, &metadv1.ListKeysRequest{})
	if err != nil || len(keys.GetKeys()) != 2 {
		t.Fatalf("ListKeys: %v, %v", keys, err)
	}
	for _, ki := range keys.GetKeys() {
		if ki.GetKeyId() == k.GetKeyId() && (ki.GetPrincipal() != "alice" || ki.GetCreatedMs() != now || ki.GetExpiresMs() != now+3_600_000) {
			t.Errorf("listed %v", ki)
		}
	}
	if keys.GetKeys()[0].GetKeyId() > keys.GetKeys()[1].GetKeyId() {
		t.Error("keys not sorted by id")
	}
	if _, err := h.svc.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: k.GetKeyId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.b.FSM().Auth().VerifyToken(k.GetToken(), now); err == nil {
		t.Fatal("a revoked key still verifies")
	}
	_, err = h.svc.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: k.GetKeyId()})
	wantReason(t, err, store.KeyNotFound)

	for _, g := range []*metadv1.GrantRoleRequest{
		{Principal: "alice", Role: "tenant:t1"},
		{Principal: "alice", Role: "worker:0A0A0A0A00004000800000000000000A"},
		{Principal: "alice", Role: "tenant:t1"}, // exists: a success
		{Principal: "bob", Role: "reader"},
	} {
		if _, err := h.svc.GrantRole(ctx, g); err != nil {
			t.Fatalf("GrantRole %v: %v", g, err)
		}
	}
	if _, err := h.svc.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "bob", Role: "reader"}); err != nil {
		t.Fatal(err)
	}
	roles, err := h.svc.ListRoles(ctx, &metadv1.ListRolesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// 2 keys, 1 revoke, 3 grants that changed the state, 1 revoke.
	if len(roles.GetBindings()) != 1 || roles.GetBindings()[0].GetPrincipal() != "alice" || roles.GetAuthRevision() != 7 ||
		strings.Join(roles.GetBindings()[0].GetRoles(), " ") != "tenant:t1 worker:0a0a0a0a-0000-4000-8000-00000000000a" {
		t.Fatalf("ListRoles: %v", roles)
	}
	stale, err := h.svc.ListRoles(ctx, &metadv1.ListRolesRequest{Stale: true})
	if err != nil || len(stale.GetBindings()) != 1 {
		t.Fatalf("stale ListRoles: %v, %v", stale, err)
	}
	_, err = h.svc.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: auth.RootPrincipal, Role: "admin"})
	wantReason(t, err, store.InvalidParams)
}

// TestAuthAdminCallsValidate: bad input is INVALID_PARAMS naming the field, with nothing
// proposed.
func TestAuthAdminCallsValidate(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	before := h.b.Proposals.Load()
	for _, tc := range []struct {
		field string
		call  func() error
	}{
		{"principal", func() error {
			_, err := h.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "a b"})
			return err
		}},
		{"ttl_ms", func() error {
			_, err := h.svc.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "a", TtlMs: uint64(auth.MaxKeyTTL.Milliseconds()) + 1})
			return err
		}},
		{"key_id", func() error {
			_, err := h.svc.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: "xyz"})
			return err
		}},
		{"principal", func() error {
			_, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "", Role: "admin"})
			return err
		}},
		{"role", func() error {
			_, err := h.svc.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "a", Role: "tenant:"})
			return err
		}},
		{"role", func() error {
			_, err := h.svc.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "a", Role: "superuser"})
			return err
		}},
	} {
		err := tc.call()
		wantReason(t, err, store.InvalidParams)
		if msg := err.Error(); !strings.Contains(msg, tc.field+": ") {
			t.Errorf("message %q does not name %s", msg, tc.field)
		}
	}
	// A refusal the leader's state gives costs no log entry.
	_, err := h.svc.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "a", Role: "admin"})
	wantReason(t, err, store.RoleNotFound)
	if n := h.b.Proposals.Load(); n != before {
		t.Fatalf("%d proposals for refused calls", n-before)
	}
}

// TestTenantLabelsBounded: past 100 tenants, the rest are summed under tenant="_other".
func TestTenantLabelsBounded(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	for i := range 120 {
		if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: fmt.Sprintf("t%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "metad_server_tenant_charged_bytes" && len(mf.GetMetric()) != 100+1 {
			t.Fatalf("%d tenant series, want %d", len(mf.GetMetric()), 100+1)
		}
	}
	if got := metricValue(t, h, "metad_server_tenant_charged_bytes", map[string]string{"tenant": "_other"}); got != 0 {
		t.Fatalf("_other series %v", got)
	}
}
