package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

// Principals of the session-ownership tests, as the adapter authenticates them.
var (
	alice = service.Caller{Principal: "alice"} // tenant alpha
	bob   = service.Caller{Principal: "bob"}   // tenant beta
	carol = service.Caller{Principal: "carol"} // tenant beta
)

// withOwners gives b's state tenants alpha and beta, alice of tenant alpha, and bob and carol of
// tenant beta.
func withOwners(t *testing.T, b *servicetest.Backend) {
	t.Helper()
	for _, cmd := range []*metadv1.Command{
		servicetest.RegisterTenant("alpha"), servicetest.RegisterTenant("beta"),
		servicetest.Grant("alice", "tenant:alpha"), servicetest.Grant("bob", "tenant:beta"), servicetest.Grant("carol", "tenant:beta"),
	} {
		b.MustApply(t, cmd)
	}
}

func shdr(id, seq, unacked uint64) *metadv1.SessionHeader {
	return &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: unacked}
}

// Calls as a principal (authed).

func (h *harness) openSessionAs(t *testing.T, c service.Caller) uint64 {
	t.Helper()
	open, err := authed(tctx(t), h, c, metadv1.Metadata_OpenSession_FullMethodName, &metadv1.OpenSessionRequest{}, h.svc.OpenSession)
	if err != nil {
		t.Fatal(err)
	}
	return open.GetSessionId()
}

func (h *harness) putStartAs(c service.Caller, ctx context.Context, req *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	return authed(ctx, h, c, metadv1.Metadata_PutStart_FullMethodName, req, h.svc.PutStart)
}

func (h *harness) putEndAs(c service.Caller, ctx context.Context, req *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	return authed(ctx, h, c, metadv1.Metadata_PutEnd_FullMethodName, req, h.svc.PutEnd)
}

func (h *harness) upsertStartAs(c service.Caller, ctx context.Context, req *metadv1.UpsertStartRequest) (*metadv1.UpsertStartResponse, error) {
	return authed(ctx, h, c, metadv1.Metadata_UpsertStart_FullMethodName, req, h.svc.UpsertStart)
}

func (h *harness) removeAs(c service.Caller, ctx context.Context, req *metadv1.RemoveRequest) (*metadv1.RemoveResponse, error) {
	return authed(ctx, h, c, metadv1.Metadata_Remove_FullMethodName, req, h.svc.Remove)
}

func (h *harness) removeByRegexAs(c service.Caller, ctx context.Context, req *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error) {
	return authed(ctx, h, c, metadv1.Metadata_RemoveByRegex_FullMethodName, req, h.svc.RemoveByRegex)
}

// putAs writes a complete object key in tenant as c, without a session.
func (h *harness) putAs(t *testing.T, c service.Caller, tenant, key string) {
	t.Helper()
	ctx := tctx(t)
	if _, err := h.putStartAs(c, ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: 4096}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.putEndAs(c, ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key)}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionOfAnotherPrincipal: alice, naming the session bob opened, gets neither bob's kept
// answers (the keys a RemoveByRegex removed, an upsert's placement) nor plants an answer in it nor
// raises its floor: every such request is answered SESSION_EXPIRED, word for word as for a session
// that does not exist, and none reaches the log; a follower answers none of them from its own
// state (it passes them to the leader). Bob's later writes in the session apply as if alice had
// sent nothing.
func TestSessionOfAnotherPrincipal(t *testing.T) {
	h := newHarness(t, nil)
	withOwners(t, h.b)
	h.mount(t, clientA, segA)
	fb := servicetest.NewBackend(t, nil)
	fb.SetLeader(false, "n1", "n1-addr")
	withOwners(t, fb)
	follower := start(t, fb, testConfig())
	ctx := tctx(t)

	s := h.openSessionAs(t, bob)
	for _, k := range []string{"bk1", "bk2"} {
		h.putAs(t, bob, "beta", k)
	}
	h.putAs(t, alice, "alpha", "ak")
	rm, err := h.removeByRegexAs(bob, ctx, &metadv1.RemoveByRegexRequest{Tenant: "beta", Pattern: "^bk1$", Force: true, Session: shdr(s, 1, 1)})
	if err != nil || len(rm.GetResults()) != 1 {
		t.Fatalf("bob's RemoveByRegex: %v %v", rm, err)
	}
	if _, err := h.upsertStartAs(bob, ctx, &metadv1.UpsertStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bu"), Size: 4096,
		Session: shdr(s, 2, 1)}); err != nil {
		t.Fatal(err)
	}

	// What alice gets for a session that does not exist: the same words must answer bob's.
	_, err = h.removeAs(alice, ctx, &metadv1.RemoveRequest{Tenant: "alpha", Key: []byte("ak"), Force: true, Session: shdr(s+100, 3, 1)})
	wantReason(t, err, store.SessionExpired)
	unknown := strings.ReplaceAll(err.Error(), fmt.Sprint(s+100), "ID")

	props, fprops := h.b.Proposals.Load(), fb.Proposals.Load()
	attacks := map[string]func(h *harness) error{
		"RemoveByRegex replaying bob's seq 1": func(h *harness) error {
			_, err := h.removeByRegexAs(alice, ctx, &metadv1.RemoveByRegexRequest{Tenant: "alpha", Pattern: "^zz$", Force: true, Session: shdr(s, 1, 1)})
			return err
		},
		"UpsertStart replaying bob's seq 2": func(h *harness) error {
			_, err := h.upsertStartAs(alice, ctx, &metadv1.UpsertStartRequest{Tenant: "alpha", ClientId: idb(clientA), Key: []byte("au"), Size: 4096,
				Session: shdr(s, 2, 1)})
			return err
		},
		"Remove planting seq 3": func(h *harness) error {
			_, err := h.removeAs(alice, ctx, &metadv1.RemoveRequest{Tenant: "alpha", Key: []byte("ak"), Force: true, Session: shdr(s, 3, 1)})
			return err
		},
		"PutStart raising the floor to 1000": func(h *harness) error {
			_, err := h.putStartAs(alice, ctx, &metadv1.PutStartRequest{Tenant: "alpha", ClientId: idb(clientA), Key: []byte("a2"), Size: 4096,
				Session: shdr(s, 1000, 1000)})
			return err
		},
	}
	for name, attack := range attacks {
		err := attack(h)
		if reasonOf(err) != store.SessionExpired {
			t.Errorf("alice, %s: %v, want SESSION_EXPIRED", name, err)
		} else if got := strings.ReplaceAll(err.Error(), fmt.Sprint(s), "ID"); got != unknown {
			t.Errorf("alice, %s: %q, not the answer of an unknown session %q", name, got, unknown)
		}
		if err := attack(follower); !errors.Is(err, service.ErrForward) {
			t.Errorf("alice, %s, to a follower: %v, want ErrForward (the leader answers)", name, err)
		}
	}
	if got := h.b.Proposals.Load(); got != props {
		t.Errorf("alice's requests in bob's session reached the log: %d proposals", got-props)
	}
	if got := fb.Proposals.Load(); got != fprops {
		t.Errorf("the follower proposed %d commands", got-fprops)
	}
	if _, err := h.b.Store().Peek("alpha", "ak"); err != nil {
		t.Errorf("alice's key: %v", err)
	}

	// Bob's session is as he left it: seq 3 removes (not alice's planted answer), seq 4 is in the
	// window (no floor at 1000), and his retry of seq 2 still gets his own placement.
	if _, err := h.removeAs(bob, ctx, &metadv1.RemoveRequest{Tenant: "beta", Key: []byte("bk2"), Force: true, Session: shdr(s, 3, 1)}); err != nil {
		t.Fatalf("bob's Remove at seq 3: %v", err)
	}
	if _, err := h.b.Store().Peek("beta", "bk2"); err == nil {
		t.Fatal("bob's Remove at seq 3 answered OK and removed nothing")
	}
	if _, err := h.putStartAs(bob, ctx, &metadv1.PutStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bk3"), Size: 4096,
		Session: shdr(s, 4, 1)}); err != nil {
		t.Fatalf("bob's seq 4: %v", err)
	}
	again, err := h.upsertStartAs(bob, ctx, &metadv1.UpsertStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bu"), Size: 4096,
		Session: shdr(s, 2, 1)})
	if err != nil || len(again.GetReplicas()) != 1 {
		t.Fatalf("bob's retry of seq 2: %v %v", again, err)
	}
}

// TestSessionOfAnotherPrincipalOnArenas: on a leader that answers PutStarts from its arenas, a
// PutStart naming a session that is not its caller's is answered SESSION_EXPIRED, as the log path
// answers it, and is not reserved: carol, of bob's tenant, cannot plant a reservation under bob's
// (session, seq) that bob's PutStart of the same key would then take for its own (another size),
// and alice gets no placement in bob's session. Bob's own retry still gets his reservation.
func TestSessionOfAnotherPrincipalOnArenas(t *testing.T) {
	h := arenaHarness(t)
	withOwners(t, h.b)
	h.mount(t, clientA, segA)
	h.awaitArenas(t, segA)
	ctx := tctx(t)
	s := h.openSessionAs(t, bob)
	putStart := func(c service.Caller, tenant, key string, size, seq uint64) (*metadv1.PutStartResponse, error) {
		return h.putStartAs(c, ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size,
			Session: shdr(s, seq, 1)})
	}
	for _, who := range []struct {
		c      service.Caller
		tenant string
	}{{carol, "beta"}, {alice, "alpha"}} {
		if _, err := putStart(who.c, who.tenant, "k", 64, 1); reasonOf(err) != store.SessionExpired {
			t.Errorf("%s's PutStart in bob's session: %v, want SESSION_EXPIRED", who.c, err)
		}
	}
	mine, err := putStart(bob, "beta", "k", 4096, 1)
	if err != nil || !reserved(mine.GetReplicas()) || mine.GetReplicas()[0].GetSize() != 4096 {
		t.Fatalf("bob's PutStart at seq 1: %v %v, want a reservation of its own size", mine, err)
	}
	again, err := putStart(bob, "beta", "k", 4096, 1)
	if err != nil || len(again.GetReplicas()) != 1 || again.GetReplicas()[0].GetOffset() != mine.GetReplicas()[0].GetOffset() {
		t.Fatalf("bob's retry of seq 1: %v %v, want his reservation %v", again, err, mine)
	}
	// Carol's PutEnd of bob's reserved write in bob's session is refused before its PutCommit is
	// proposed (an older member would apply it), and bob's own commits it.
	props := h.b.Proposals.Load()
	end := func(c service.Caller) error {
		_, err := h.putEndAs(c, ctx, &metadv1.PutEndRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("k"), Session: shdr(s, 2, 1)})
		return err
	}
	if err := end(carol); reasonOf(err) != store.SessionExpired {
		t.Fatalf("carol's PutEnd in bob's session: %v, want SESSION_EXPIRED", err)
	}
	if got := h.b.Proposals.Load(); got != props {
		t.Fatalf("carol's PutEnd in bob's session was proposed (%d proposals)", got-props)
	}
	if err := end(bob); err != nil {
		t.Fatalf("bob's PutEnd: %v", err)
	}
	if _, err := h.b.Store().Peek("beta", "k"); err != nil {
		t.Fatalf("bob's object: %v", err)
	}
}
