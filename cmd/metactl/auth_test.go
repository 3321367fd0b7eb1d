package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"metad/proto/metadv1"
)

// fakeAuth is a fake cluster's keys and role bindings. Safe for concurrent use.
type fakeAuth struct {
	mu    sync.Mutex // guards everything below
	keys  []*metadv1.KeyInfo
	roles map[string][]string
	rev   uint64
}

// fakeAuths holds each fake cluster's auth state (*fakeCluster -> *fakeAuth).
var fakeAuths sync.Map

func authOf(c *fakeCluster) *fakeAuth {
	a, _ := fakeAuths.LoadOrStore(c, &fakeAuth{roles: map[string][]string{}})
	return a.(*fakeAuth)
}

func (a *fakeAdmin) CreateKey(_ context.Context, r *metadv1.CreateKeyRequest) (*metadv1.CreateKeyResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("%016x", len(s.keys)+1)
	s.keys = append(s.keys, &metadv1.KeyInfo{KeyId: id, Principal: r.GetPrincipal(), CreatedMs: 1_700_000_000_000,
		ExpiresMs: map[bool]int64{true: 1_700_000_000_000 + int64(r.GetTtlMs())}[r.GetTtlMs() > 0]})
	s.rev++
	return &metadv1.CreateKeyResponse{KeyId: id, Token: "mtd_" + id + "_" + strings.Repeat("s", 43), ExpiresMs: s.keys[len(s.keys)-1].GetExpiresMs()}, nil
}

func (a *fakeAdmin) RevokeKey(_ context.Context, r *metadv1.RevokeKeyRequest) (*metadv1.RevokeKeyResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.keys, func(k *metadv1.KeyInfo) bool { return k.GetKeyId() == r.GetKeyId() })
	if i < 0 {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_KEY_NOT_FOUND, "key %q is not recorded", r.GetKeyId())
	}
	s.keys = slices.Delete(s.keys, i, i+1)
	s.rev++
	return &metadv1.RevokeKeyResponse{}, nil
}

func (a *fakeAdmin) ListKeys(context.Context, *metadv1.ListKeysRequest) (*metadv1.ListKeysResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	return &metadv1.ListKeysResponse{Keys: slices.Clone(s.keys)}, nil
}

func (a *fakeAdmin) GrantRole(_ context.Context, r *metadv1.GrantRoleRequest) (*metadv1.GrantRoleResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.roles[r.GetPrincipal()], r.GetRole()) {
		s.roles[r.GetPrincipal()] = append(s.roles[r.GetPrincipal()], r.GetRole())
		slices.Sort(s.roles[r.GetPrincipal()])
		s.rev++
	}
	return &metadv1.GrantRoleResponse{}, nil
}

func (a *fakeAdmin) RevokeRole(_ context.Context, r *metadv1.RevokeRoleRequest) (*metadv1.RevokeRoleResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[r.GetPrincipal()]
	i := slices.Index(rs, r.GetRole())
	if i < 0 {
		return nil, reject(codes.NotFound, metadv1.Reason_REASON_ROLE_NOT_FOUND, "principal %s has no role %s", r.GetPrincipal(), r.GetRole())
	}
	if rs = slices.Delete(rs, i, i+1); len(rs) == 0 {
		delete(s.roles, r.GetPrincipal())
	} else {
		s.roles[r.GetPrincipal()] = rs
	}
	s.rev++
	return &metadv1.RevokeRoleResponse{}, nil
}

func (a *fakeAdmin) ListRoles(context.Context, *metadv1.ListRolesRequest) (*metadv1.ListRolesResponse, error) {
	s := authOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &metadv1.ListRolesResponse{AuthRevision: s.rev}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range s.roles {
			if !yield(p) {
				return
			}
		}
	}) {
		out.Bindings = append(out.Bindings, &metadv1.RoleBinding{Principal: p, Roles: slices.Clone(s.roles[p])})
	}
	return out, nil
}

func TestKeyVerbs(t *testing.T) {
	c := startCluster(t)
	r := metactl(t, c.addr, "key", "create", "--principal", "alice", "--ttl", "1h").ok(t)
	if !strings.Contains(r.stdout, "created key 0000000000000001 for alice (expires 2023-11-14T23:13:20Z)") ||
		!strings.Contains(r.stdout, "token: mtd_0000000000000001_") || !strings.Contains(r.stdout, "shown this once") {
		t.Fatalf("key create:\n%s", r.stdout)
	}
	var created map[string]any
	metactl(t, c.addr, "key", "create", "--principal", "root", "-o", "json").ok(t).json(t, &created)
	if created["key_id"] != "0000000000000002" || !strings.HasPrefix(created["token"].(string), "mtd_0000000000000002_") || created["expires_ms"] != float64(0) {
		t.Fatalf("key create -o json: %v", created)
	}
	var keys []keyView
	metactl(t, c.addr, "key", "ls", "-o", "json").ok(t).json(t, &keys)
	if len(keys) != 2 || keys[0].Principal != "alice" || keys[1].ExpiresMs != 0 {
		t.Fatalf("key ls: %+v", keys)
	}
	if r := metactl(t, c.addr, "key", "ls").ok(t); !strings.Contains(r.stdout, "PRINCIPAL") || !strings.Contains(r.stdout, "never") ||
		strings.Contains(r.stdout, "mtd_") {
		t.Fatalf("key ls table:\n%s", r.stdout)
	}
	metactl(t, c.addr, "key", "revoke", "0000000000000001").ok(t)
	if r := metactl(t, c.addr, "key", "revoke", "0000000000000001"); r.code != exitError || !strings.HasPrefix(r.stderr, "error: KEY_NOT_FOUND: ") {
		t.Fatalf("second revoke: %+v", r)
	}
	for _, args := range [][]string{{"key", "create"}, {"key", "create", "--principal", "a", "--ttl", "-1h"}, {"key", "revoke"}} {
		if r := metactl(t, c.addr, args...); r.code != exitUsage {
			t.Errorf("metactl %s: exit %d, want usage", strings.Join(args, " "), r.code)
		}
	}
}

func TestRoleVerbs(t *testing.T) {
	c := startCluster(t)
	metactl(t, c.addr, "role", "grant", "alice", "tenant:t1").ok(t)
	if r := metactl(t, c.addr, "role", "grant", "alice", "reader").ok(t); !strings.Contains(r.stdout, "granted role reader of alice") {
		t.Fatalf("role grant:\n%s", r.stdout)
	}
	metactl(t, c.addr, "role", "grant", "bob", "admin").ok(t)
	if r := metactl(t, c.addr, "role", "revoke", "bob", "admin").ok(t); !strings.Contains(r.stdout, "revoked role admin of bob") {
		t.Fatalf("role revoke:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "role", "revoke", "bob", "admin"); !strings.HasPrefix(r.stderr, "error: ROLE_NOT_FOUND: ") {
		t.Fatalf("second revoke: %+v", r)
	}
	var ls struct {
		AuthRevision uint64     `json:"auth_revision"`
		Bindings     []roleView `json:"bindings"`
	}
	metactl(t, c.addr, "role", "ls", "-o", "json").ok(t).json(t, &ls)
	if ls.AuthRevision != 4 || len(ls.Bindings) != 1 || ls.Bindings[0].Principal != "alice" || strings.Join(ls.Bindings[0].Roles, " ") != "reader tenant:t1" {
		t.Fatalf("role ls: %+v", ls)
	}
	if r := metactl(t, c.addr, "role", "ls").ok(t); !strings.Contains(r.stdout, "reader,tenant:t1") || !strings.Contains(r.stdout, "auth revision 4") {
		t.Fatalf("role ls table:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "role", "grant", "alice"); r.code != exitUsage {
		t.Fatalf("role grant without a role: exit %d", r.code)
	}
}
