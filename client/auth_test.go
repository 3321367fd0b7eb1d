package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

// The fake node's auth calls answer from what the request carried, so a test sees what the
// client sent.

func (a *fakeAdmin) CreateKey(_ context.Context, req *metadv1.CreateKeyRequest) (*metadv1.CreateKeyResponse, error) {
	if err := a.n.enter("CreateKey"); err != nil {
		return nil, err
	}
	return &metadv1.CreateKeyResponse{KeyId: "00000000000000aa", Token: "mtd_00000000000000aa_" + req.GetPrincipal(),
		ExpiresMs: int64(req.GetTtlMs())}, nil
}

func (a *fakeAdmin) RevokeKey(_ context.Context, req *metadv1.RevokeKeyRequest) (*metadv1.RevokeKeyResponse, error) {
	if err := a.n.enter("RevokeKey"); err != nil {
		return nil, err
	}
	if req.GetKeyId() != "00000000000000aa" {
		return nil, status.Error(codes.NotFound, "no key "+req.GetKeyId())
	}
	return &metadv1.RevokeKeyResponse{}, nil
}

func (a *fakeAdmin) ListKeys(_ context.Context, req *metadv1.ListKeysRequest) (*metadv1.ListKeysResponse, error) {
	if err := a.n.enter("ListKeys"); err != nil {
		return nil, err
	}
	principal := "linear"
	if req.GetStale() {
		principal = "stale"
	}
	return &metadv1.ListKeysResponse{Keys: []*metadv1.KeyInfo{{KeyId: "00000000000000aa", Principal: principal}}}, nil
}

func (a *fakeAdmin) GrantRole(_ context.Context, req *metadv1.GrantRoleRequest) (*metadv1.GrantRoleResponse, error) {
	if err := a.n.enter("GrantRole " + req.GetPrincipal() + " " + req.GetRole()); err != nil {
		return nil, err
	}
	return &metadv1.GrantRoleResponse{}, nil
}

func (a *fakeAdmin) RevokeRole(_ context.Context, req *metadv1.RevokeRoleRequest) (*metadv1.RevokeRoleResponse, error) {
	if err := a.n.enter("RevokeRole " + req.GetPrincipal() + " " + req.GetRole()); err != nil {
		return nil, err
	}
	return &metadv1.RevokeRoleResponse{}, nil
}

func (a *fakeAdmin) ListRoles(_ context.Context, req *metadv1.ListRolesRequest) (*metadv1.ListRolesResponse, error) {
	if err := a.n.enter("ListRoles"); err != nil {
		return nil, err
	}
	return &metadv1.ListRolesResponse{AuthRevision: 3, Bindings: []*metadv1.RoleBinding{{Principal: "alice", Roles: []string{"reader"}}}}, nil
}

func TestAuthCalls(t *testing.T) {
	n := startFake(t)
	var mu sync.Mutex // guards seen
	var seen []string
	n.mu.Lock()
	n.fail = func(method string) error { mu.Lock(); defer mu.Unlock(); seen = append(seen, method); return nil }
	n.mu.Unlock()
	c := newTestClient(t, Config{Endpoints: []string{n.addr}})
	ctx := testCtx(t)

	k, err := c.CreateKey(ctx, "alice", 90*time.Minute)
	if err != nil || k.GetToken() != "mtd_00000000000000aa_alice" || k.GetExpiresMs() != 90*60*1000 {
		t.Fatalf("CreateKey: %v, %v", k, err)
	}
	if err := c.RevokeKey(ctx, "00000000000000aa"); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeKey(ctx, "00000000000000bb"); status.Code(err) != codes.NotFound {
		t.Fatalf("RevokeKey of an unknown key: %v", err)
	}
	keys, err := c.ListKeys(ctx, Stale())
	if err != nil || len(keys) != 1 || keys[0].GetPrincipal() != "stale" {
		t.Fatalf("ListKeys(Stale): %v, %v", keys, err)
	}
	if keys, err := c.ListKeys(ctx); err != nil || keys[0].GetPrincipal() != "linear" {
		t.Fatalf("ListKeys: %v, %v", keys, err)
	}
	if err := c.GrantRole(ctx, "alice", "tenant:t1"); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeRole(ctx, "alice", "reader"); err != nil {
		t.Fatal(err)
	}
	roles, err := c.ListRoles(ctx)
	if err != nil || roles.GetAuthRevision() != 3 || len(roles.GetBindings()) != 1 {
		t.Fatalf("ListRoles: %v, %v", roles, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"CreateKey", "RevokeKey", "RevokeKey", "ListKeys", "ListKeys", "GrantRole alice tenant:t1", "RevokeRole alice reader", "ListRoles"}
	if len(seen) != len(want) {
		t.Fatalf("calls %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("calls %q, want %q", seen, want)
		}
	}
}
