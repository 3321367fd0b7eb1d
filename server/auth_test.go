package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// TestAuthAdminCalls: keys and role bindings through the Admin RPCs, as the replicated state
// records them; the token is returned once and verifies against the state.
func TestAuthAdminCalls(t *testing.T) {
	clock := newFakeClock()
	h := start(t, newFakeBackend(t, clock.Now), withClock(clock, testConfig()))
	ctx := tctx(t)

	k, err := h.admin.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "alice", TtlMs: 3_600_000})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now().UnixMilli()
	if len(k.GetKeyId()) != fsm.KeyIDLen || !strings.HasPrefix(k.GetToken(), fsm.TokenPrefix+k.GetKeyId()+"_") ||
		k.GetExpiresMs() != now+3_600_000 {
		t.Fatalf("CreateKey: %v", k)
	}
	got, err := h.b.FSM().Auth().VerifyToken(k.GetToken(), now)
	if err != nil || got.Principal != "alice" || got.CreatedMs != now {
		t.Fatalf("the token does not verify: %+v, %v", got, err)
	}
	forever, err := h.admin.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: fsm.RootPrincipal})
	if err != nil || forever.GetExpiresMs() != 0 || forever.GetKeyId() == k.GetKeyId() || forever.GetToken() == k.GetToken() {
		t.Fatalf("second key: %v, %v", forever, err)
	}
	keys, err := h.admin.ListKeys(ctx, &metadv1.ListKeysRequest{})
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
	if _, err := h.admin.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: k.GetKeyId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.b.FSM().Auth().VerifyToken(k.GetToken(), now); err == nil {
		t.Fatal("a revoked key still verifies")
	}
	_, err = h.admin.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: k.GetKeyId()})
	wantErr(t, err, codes.NotFound, metadv1.Reason_REASON_KEY_NOT_FOUND)

	for _, g := range []*metadv1.GrantRoleRequest{
		{Principal: "alice", Role: "tenant:t1"},
		{Principal: "alice", Role: "worker:0A0A0A0A00004000800000000000000A"},
		{Principal: "alice", Role: "tenant:t1"}, // exists: a success
		{Principal: "bob", Role: "reader"},
	} {
		if _, err := h.admin.GrantRole(ctx, g); err != nil {
			t.Fatalf("GrantRole %v: %v", g, err)
		}
	}
	if _, err := h.admin.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "bob", Role: "reader"}); err != nil {
		t.Fatal(err)
	}
	roles, err := h.admin.ListRoles(ctx, &metadv1.ListRolesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// 2 keys, 1 revoke, 3 grants that changed the state, 1 revoke.
	if len(roles.GetBindings()) != 1 || roles.GetBindings()[0].GetPrincipal() != "alice" || roles.GetAuthRevision() != 7 ||
		strings.Join(roles.GetBindings()[0].GetRoles(), " ") != "tenant:t1 worker:0a0a0a0a-0000-4000-8000-00000000000a" {
		t.Fatalf("ListRoles: %v", roles)
	}
	stale, err := h.admin.ListRoles(ctx, &metadv1.ListRolesRequest{Stale: true})
	if err != nil || len(stale.GetBindings()) != 1 {
		t.Fatalf("stale ListRoles: %v, %v", stale, err)
	}
	_, err = h.admin.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: fsm.RootPrincipal, Role: "admin"})
	wantErr(t, err, codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS)
}

// TestAuthAdminCallsValidate: bad input is InvalidArgument naming the field, with nothing
// proposed.
func TestAuthAdminCallsValidate(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	before := h.b.Proposals.Load()
	for _, tc := range []struct {
		field string
		call  func() error
	}{
		{"principal", func() error {
			_, err := h.admin.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "a b"})
			return err
		}},
		{"ttl_ms", func() error {
			_, err := h.admin.CreateKey(ctx, &metadv1.CreateKeyRequest{Principal: "a", TtlMs: uint64(fsm.MaxKeyTTL.Milliseconds()) + 1})
			return err
		}},
		{"key_id", func() error {
			_, err := h.admin.RevokeKey(ctx, &metadv1.RevokeKeyRequest{KeyId: "xyz"})
			return err
		}},
		{"principal", func() error {
			_, err := h.admin.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "", Role: "admin"})
			return err
		}},
		{"role", func() error {
			_, err := h.admin.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "a", Role: "tenant:"})
			return err
		}},
		{"role", func() error {
			_, err := h.admin.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "a", Role: "superuser"})
			return err
		}},
	} {
		err := tc.call()
		wantErr(t, err, codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS)
		if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.field+": ") {
			t.Errorf("message %q does not name %s", msg, tc.field)
		}
	}
	// A refusal the leader's state gives costs no log entry.
	_, err := h.admin.RevokeRole(ctx, &metadv1.RevokeRoleRequest{Principal: "a", Role: "admin"})
	wantErr(t, err, codes.NotFound, metadv1.Reason_REASON_ROLE_NOT_FOUND)
	if n := h.b.Proposals.Load(); n != before {
		t.Fatalf("%d proposals for refused calls", n-before)
	}
}
