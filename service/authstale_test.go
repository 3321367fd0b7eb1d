package service_test

import (
	"context"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
)

// keyCaller is principal authenticated by the API key token, as the adapter authenticates it.
func keyCaller(principal, token string) service.Caller {
	return service.Caller{Principal: principal, KeyID: servicetest.KeyID(token)}
}

// TestStaleRevisionCheckedAgain: a command checked before an auth change and applied after it is
// refused at apply (AUTH_REVISION_STALE); the service checks the call again: still allowed, it is
// proposed again and succeeds; no longer allowed, the caller gets ErrPermissionDenied or
// ErrUnauthenticated and nothing applied.
func TestStaleRevisionCheckedAgain(t *testing.T) {
	h := newHarness(t, nil)
	h.b.MustApply(t, servicetest.Grant("ops", "admin"))
	h.b.MustApply(t, servicetest.Grant("alice", "admin"))
	opsTok, _ := servicetest.NewKey(t, h.b, "ops", 0)
	aliceTok, _ := servicetest.NewKey(t, h.b, "alice", 0)
	ops, alice := keyCaller("ops", opsTok), keyCaller("alice", aliceTok)
	register := func(c service.Caller, name string) error {
		_, err := authed(tctx(t), h, c, metadv1.Admin_RegisterTenant_FullMethodName, &metadv1.RegisterTenantRequest{Name: name}, h.svc.RegisterTenant)
		return err
	}
	// Between the check and the commit: someone else's role changes; the call is still allowed.
	before := h.b.Proposals.Load()
	h.b.BeforeNextApply(func() { h.b.ApplyLocked(t, servicetest.Grant("bob", "reader")) })
	if err := register(ops, "t1"); err != nil {
		t.Fatalf("a call still allowed after an unrelated auth change: %v", err)
	}
	if got := h.b.Proposals.Load() - before; got != 2 {
		t.Fatalf("%d proposals, want 2 (refused stale, then applied)", got)
	}
	if _, ok := h.b.Store().Tenant("t1"); !ok {
		t.Fatal("tenant t1 not registered")
	}
	// Between the check and the commit: the caller's admin role is revoked.
	h.b.BeforeNextApply(func() { h.b.ApplyLocked(t, servicetest.RevokeRole("ops", "admin")) })
	wantErrContains(t, register(ops, "t2"), service.ErrPermissionDenied, "admin")
	if _, ok := h.b.Store().Tenant("t2"); ok {
		t.Fatal("tenant t2 registered by a principal whose role was revoked before the commit")
	}
	// Between the check and the commit: the caller's key is revoked.
	h.b.BeforeNextApply(func() { h.b.ApplyLocked(t, servicetest.RevokeKey(aliceTok)) })
	wantErrContains(t, register(alice, "t3"), service.ErrUnauthenticated, "unknown")
	if _, ok := h.b.Store().Tenant("t3"); ok {
		t.Fatal("tenant t3 registered with a key revoked before the commit")
	}
}

// TestStaleRemovalDeniedClearsMarks: a removal whose caller loses its role between the leader's
// prepare and the commit is refused (ErrPermissionDenied after the recheck), the object stays, and
// the leader's unlink mark is cleared: reads find it at once.
func TestStaleRemovalDeniedClearsMarks(t *testing.T) {
	h := newHarness(t, nil)
	h.b.MustApply(t, servicetest.RegisterTenant("a"))
	h.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	tok, _ := servicetest.NewKey(t, h.b, "alice", 0)
	alice := keyCaller("alice", tok)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	for _, k := range []string{"k1", "k2"} {
		h.put(t, "a", k, 4096)
	}
	revoke := func() { h.b.ApplyLocked(t, servicetest.RevokeRole("alice", "tenant:a")) }
	h.b.BeforeNextApply(revoke)
	_, err := authed(ctx, h, alice, metadv1.Metadata_Remove_FullMethodName, &metadv1.RemoveRequest{Key: []byte("k1"), Force: true}, h.svc.Remove)
	wantErrContains(t, err, service.ErrPermissionDenied, "holds no tenant role")
	h.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	h.b.BeforeNextApply(revoke)
	_, err = authed(ctx, h, alice, metadv1.Metadata_BatchRemove_FullMethodName,
		&metadv1.BatchRemoveRequest{Keys: [][]byte{[]byte("k2")}, Force: true}, h.svc.BatchRemove)
	wantErrContains(t, err, service.ErrPermissionDenied, "holds no tenant role")
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, k := range []string{"k1", "k2"} {
		if _, err := h.svc.Get(short, &metadv1.GetRequest{Tenant: "a", Key: []byte(k)}); err != nil {
			t.Fatalf("%s after the refused removal: %v", k, err)
		}
	}
}
