package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// ownerPair is a leader n1 and a follower n2 that forwards to it, both authenticating, with
// tenants alpha and beta, principal alice of tenant alpha and bob of tenant beta (their API
// keys), and one segment mounted on the leader.
type ownerPair struct {
	leader, follower *authNode
	alice, bob       string // tokens
}

func newOwnerPair(t *testing.T) *ownerPair {
	p := newPKI(t)
	leader := startAuth(t, p, newFakeBackend(t, nil), "n1")
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	follower := startAuth(t, p, fb, "n2")
	for _, n := range []*authNode{leader, follower} {
		n.b.SetMembers("n1", "n2")
		for _, cmd := range []*metadv1.Command{
			{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "alpha"}}},
			{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "beta"}}},
			servicetest.Grant("alice", "tenant:alpha"),
			servicetest.Grant("bob", "tenant:beta"),
		} {
			n.b.MustApply(t, cmd)
		}
	}
	o := &ownerPair{leader: leader, follower: follower}
	var aliceKey, bobKey *metadv1.Command
	o.alice, aliceKey = servicetest.NewKey(t, leader.b, "alice", 0)
	o.bob, bobKey = servicetest.NewKey(t, leader.b, "bob", 0)
	follower.b.MustApply(t, aliceKey)
	follower.b.MustApply(t, bobKey)
	root := leader.clients(t, p.client(t, fsm.RootPrincipal))
	if _, err := root.meta.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	return o
}

// putAs writes a complete object key in tenant as the principal of ctx, without a session.
func putAs(t *testing.T, c clients, ctx context.Context, tenant, key string) {
	t.Helper()
	if _, err := c.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: 4096}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key)}); err != nil {
		t.Fatal(err)
	}
}

func shdr(id, seq, unacked uint64) *metadv1.SessionHeader {
	return &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: unacked}
}

// TestSessionOfAnotherPrincipal: alice, naming the session bob opened, gets neither bob's kept
// answers (the keys a RemoveByRegex removed, an upsert's placement) nor plants an answer in it nor
// raises its floor: every such request is answered SESSION_EXPIRED, word for word as for a session
// that does not exist, on the leader and through a follower, and none reaches the log; bob's
// later writes in the session apply as if alice had sent nothing.
func TestSessionOfAnotherPrincipal(t *testing.T) {
	o := newOwnerPair(t)
	c := o.leader.clients(t)
	alice, bob := withKey(t, o.alice), withKey(t, o.bob)
	open, err := c.meta.OpenSession(bob, &metadv1.OpenSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s := open.GetSessionId()
	for _, k := range []string{"bk1", "bk2"} {
		putAs(t, c, bob, "beta", k)
	}
	putAs(t, c, alice, "alpha", "ak")
	rm, err := c.meta.RemoveByRegex(bob, &metadv1.RemoveByRegexRequest{Tenant: "beta", Pattern: "^bk1$", Force: true, Session: shdr(s, 1, 1)})
	if err != nil || len(rm.GetResults()) != 1 {
		t.Fatalf("bob's RemoveByRegex: %v %v", rm, err)
	}
	if _, err := c.meta.UpsertStart(bob, &metadv1.UpsertStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bu"), Size: 4096,
		Session: shdr(s, 2, 1)}); err != nil {
		t.Fatal(err)
	}

	// What alice gets for a session that does not exist: the same words must answer bob's.
	_, err = c.meta.Remove(alice, &metadv1.RemoveRequest{Tenant: "alpha", Key: []byte("ak"), Force: true, Session: shdr(s+100, 3, 1)})
	wantErr(t, err, codes.FailedPrecondition, metadv1.Reason_REASON_SESSION_EXPIRED)
	unknown := strings.ReplaceAll(status.Convert(err).Message(), fmt.Sprint(s+100), "ID")

	props := o.leader.b.Proposals.Load()
	attacks := map[string]func(clients) error{
		"RemoveByRegex replaying bob's seq 1": func(c clients) error {
			_, err := c.meta.RemoveByRegex(alice, &metadv1.RemoveByRegexRequest{Tenant: "alpha", Pattern: "^zz$", Force: true, Session: shdr(s, 1, 1)})
			return err
		},
		"UpsertStart replaying bob's seq 2": func(c clients) error {
			_, err := c.meta.UpsertStart(alice, &metadv1.UpsertStartRequest{Tenant: "alpha", ClientId: idb(clientA), Key: []byte("au"), Size: 4096,
				Session: shdr(s, 2, 1)})
			return err
		},
		"Remove planting seq 3": func(c clients) error {
			_, err := c.meta.Remove(alice, &metadv1.RemoveRequest{Tenant: "alpha", Key: []byte("ak"), Force: true, Session: shdr(s, 3, 1)})
			return err
		},
		"PutStart raising the floor to 1000": func(c clients) error {
			_, err := c.meta.PutStart(alice, &metadv1.PutStartRequest{Tenant: "alpha", ClientId: idb(clientA), Key: []byte("a2"), Size: 4096,
				Session: shdr(s, 1000, 1000)})
			return err
		},
	}
	for name, attack := range attacks {
		for via, n := range map[string]*authNode{"the leader": o.leader, "the follower": o.follower} {
			err := attack(n.clients(t))
			if status.Code(err) != codes.FailedPrecondition || detailOf(err).GetReason() != metadv1.Reason_REASON_SESSION_EXPIRED {
				t.Errorf("alice, %s (to %s): %v, want SESSION_EXPIRED", name, via, err)
				continue
			}
			if got := strings.ReplaceAll(status.Convert(err).Message(), fmt.Sprint(s), "ID"); got != unknown {
				t.Errorf("alice, %s: %q, not the answer of an unknown session %q", name, got, unknown)
			}
		}
	}
	if got := o.leader.b.Proposals.Load(); got != props {
		t.Errorf("alice's requests in bob's session reached the log: %d proposals", got-props)
	}
	if _, err := o.leader.b.Store().Peek("alpha", "ak"); err != nil {
		t.Errorf("alice's key: %v", err)
	}

	// Bob's session is as he left it: seq 3 removes (not alice's planted answer), seq 4 is in the
	// window (no floor at 1000), and his retry of seq 2 still gets his own placement.
	if _, err := c.meta.Remove(bob, &metadv1.RemoveRequest{Tenant: "beta", Key: []byte("bk2"), Force: true, Session: shdr(s, 3, 1)}); err != nil {
		t.Fatalf("bob's Remove at seq 3: %v", err)
	}
	if _, err := o.leader.b.Store().Peek("beta", "bk2"); err == nil {
		t.Fatal("bob's Remove at seq 3 answered OK and removed nothing")
	}
	if _, err := o.follower.clients(t).meta.PutStart(bob, &metadv1.PutStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bk3"), Size: 4096,
		Session: shdr(s, 4, 1)}); err != nil {
		t.Fatalf("bob's seq 4 through the follower: %v", err)
	}
	again, err := c.meta.UpsertStart(bob, &metadv1.UpsertStartRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("bu"), Size: 4096,
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
	p := newPKI(t)
	b := newFakeBackend(t, nil)
	b.Lease.Store(true)
	n := startAuthWith(t, p, b, "n1", func(c *config) { c.NoArenas = false })
	for _, cmd := range []*metadv1.Command{
		{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "alpha"}}},
		{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "beta"}}},
		servicetest.Grant("alice", "tenant:alpha"), servicetest.Grant("bob", "tenant:beta"), servicetest.Grant("carol", "tenant:beta"),
	} {
		b.MustApply(t, cmd)
	}
	toks := map[string]string{}
	for _, who := range []string{"alice", "bob", "carol"} {
		toks[who], _ = servicetest.NewKey(t, b, who, 0)
	}
	alice, bob, carol := withKey(t, toks["alice"]), withKey(t, toks["bob"]), withKey(t, toks["carol"])
	c := n.clients(t)
	root := n.clients(t, p.client(t, fsm.RootPrincipal))
	if _, err := root.meta.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ { // until the keeper has granted an arena
		key := []byte(fmt.Sprintf("warm-%d", i))
		resp, err := root.meta.PutStart(tctx(t), &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64})
		if err != nil {
			t.Fatal(err)
		}
		if reserved(resp.GetReplicas()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no PutStart answered from an arena after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	open, err := c.meta.OpenSession(bob, &metadv1.OpenSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s := open.GetSessionId()
	putStart := func(ctx context.Context, tenant, key string, size, seq uint64) (*metadv1.PutStartResponse, error) {
		return c.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size,
			Session: shdr(s, seq, 1)})
	}
	for who, ctx := range map[string]context.Context{"carol": carol, "alice": alice} {
		tenant := map[string]string{"carol": "beta", "alice": "alpha"}[who]
		if _, err := putStart(ctx, tenant, "k", 64, 1); reasonOf(err) != metadv1.Reason_REASON_SESSION_EXPIRED {
			t.Errorf("%s's PutStart in bob's session: %v, want SESSION_EXPIRED", who, err)
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
	props := b.Proposals.Load()
	end := func(ctx context.Context) error {
		_, err := c.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: "beta", ClientId: idb(clientA), Key: []byte("k"), Session: shdr(s, 2, 1)})
		return err
	}
	if err := end(carol); reasonOf(err) != metadv1.Reason_REASON_SESSION_EXPIRED {
		t.Fatalf("carol's PutEnd in bob's session: %v, want SESSION_EXPIRED", err)
	}
	if got := b.Proposals.Load(); got != props {
		t.Fatalf("carol's PutEnd in bob's session was proposed (%d proposals)", got-props)
	}
	if err := end(bob); err != nil {
		t.Fatalf("bob's PutEnd: %v", err)
	}
	if _, err := b.Store().Peek("beta", "k"); err != nil {
		t.Fatalf("bob's object: %v", err)
	}
}
