package server

import (
	"google.golang.org/grpc"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	metadv1 "metad/proto/metadv1"
)

func TestNoLeaderIsUnavailable(t *testing.T) {
	b := newFakeBackend(t, nil)
	b.setLeader(false, "", "")
	h := start(t, b, testConfig())
	ctx := tctx(t)
	_, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 1})
	wantErr(t, err, codes.Unavailable, rUnavail)
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantErr(t, err, codes.Unavailable, rUnavail)
	// A stale read needs no leader.
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k"), Stale: true})
	wantErr(t, err, codes.NotFound, rNotFound)
	if n := b.proposals.Load(); n != 0 {
		t.Fatalf("%d proposals without a leader", n)
	}
}

// TestFollowerForwardsToLeader: a write and a linearizable read sent to a follower are served by
// the leader; a stale read is served by the follower from its own (here empty) state.
func TestFollowerForwardsToLeader(t *testing.T) {
	leader := start(t, newFakeBackend(t, nil), testConfig())
	fb := newFakeBackend(t, nil)
	fb.setLeader(false, "n1", leader.addr)
	follower := start(t, fb, testConfig())
	ctx := tctx(t)

	follower.mount(t, clientA, segA)
	ps, err := follower.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 10})
	if err != nil || len(ps.GetReplicas()) != 1 {
		t.Fatalf("forwarded PutStart: %v %v", ps, err)
	}
	if _, err := follower.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	var hdr metadata.MD
	g, err := follower.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")}, grpc.Header(&hdr))
	if err != nil || g.GetSize() != 10 || g.GetLeaseTtlMs() == 0 {
		t.Fatalf("forwarded Get: %v %v", g, err)
	}
	if got := hdr.Get(LeaderHeader); len(got) != 1 || got[0] != leader.addr {
		t.Fatalf("forwarded call's %s header = %v, want %s", LeaderHeader, got, leader.addr)
	}
	if n := fb.proposals.Load(); n != 0 {
		t.Fatalf("the follower proposed %d commands", n)
	}
	if n := leader.b.proposals.Load(); n != 3 {
		t.Fatalf("the leader proposed %d commands, want 3", n)
	}
	_, err = follower.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k"), Stale: true})
	wantErr(t, err, codes.NotFound, rNotFound)
	// The leader's rejections reach the client through the follower unchanged.
	_, err = follower.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 10})
	wantErr(t, err, codes.AlreadyExists, rExists)
	lm, err := follower.admin.ListMembers(ctx, &metadv1.ListMembersRequest{})
	if err != nil || !lm.GetMembers()[0].GetLeader() {
		t.Fatalf("forwarded ListMembers: %v %v", lm, err)
	}
	st, err := follower.admin.Status(ctx, &metadv1.StatusRequest{})
	if err != nil || st.GetRole() != metadv1.NodeRole_NODE_ROLE_FOLLOWER {
		t.Fatalf("Status is served by the node asked: %v %v", st, err)
	}
}

// TestForwardedCallIsNotForwardedAgain: a forwarded call reaching a node that is not the leader is
// answered NOT_LEADER (naming the leader that node knows), never forwarded a second time.
func TestForwardedCallIsNotForwardedAgain(t *testing.T) {
	leader := start(t, newFakeBackend(t, nil), testConfig())
	b2 := newFakeBackend(t, nil)
	b2.setLeader(false, "n1", leader.addr)
	second := start(t, b2, testConfig())
	b1 := newFakeBackend(t, nil)
	b1.setLeader(false, "n2", second.addr) // a stale view: it thinks the follower is the leader
	first := start(t, b1, testConfig())
	ctx := tctx(t)

	_, err := first.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 10})
	d := wantErr(t, err, codes.Unavailable, rNotLeader)
	if d.GetLeaderName() != "n1" || d.GetLeaderAddress() != leader.addr {
		t.Fatalf("NOT_LEADER names %s at %s, want n1 at %s", d.GetLeaderName(), d.GetLeaderAddress(), leader.addr)
	}
	// A call marked as forwarded, sent straight to a follower.
	fctx := metadata.AppendToOutgoingContext(ctx, forwardedKey, "1")
	_, err = second.meta.Get(fctx, &metadv1.GetRequest{Key: []byte("k")})
	wantErr(t, err, codes.Unavailable, rNotLeader)
	if n := leader.b.proposals.Load() + leader.b.barriers.Load(); n != 0 {
		t.Fatalf("the leader saw %d proposals and barriers, want 0", n)
	}
}
