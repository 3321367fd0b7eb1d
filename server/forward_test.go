package server

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
)

func TestNoLeaderIsUnavailable(t *testing.T) {
	b := newFakeBackend(t, nil)
	b.SetLeader(false, "", "")
	h := start(t, b, testConfig())
	ctx := tctx(t)
	_, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 1})
	wantErr(t, err, codes.Unavailable, rUnavail)
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantErr(t, err, codes.Unavailable, rUnavail)
	// A stale read needs no leader.
	_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k"), Stale: true})
	wantErr(t, err, codes.NotFound, rNotFound)
	if n := b.Proposals.Load(); n != 0 {
		t.Fatalf("%d proposals without a leader", n)
	}
}

// TestFollowerForwardsToLeader: a write and a linearizable read sent to a follower are served by
// the leader; a stale read is served by the follower from its own (here empty) state.
func TestFollowerForwardsToLeader(t *testing.T) {
	leader := start(t, newFakeBackend(t, nil), testConfig())
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
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
	if n := fb.Proposals.Load(); n != 0 {
		t.Fatalf("the follower proposed %d commands", n)
	}
	if n := leader.b.Proposals.Load(); n != 3 {
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
	b2.SetLeader(false, "n1", leader.addr)
	second := start(t, b2, testConfig())
	b1 := newFakeBackend(t, nil)
	b1.SetLeader(false, "n2", second.addr) // a stale view: it thinks the follower is the leader
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
	if n := leader.b.Proposals.Load() + leader.b.Barriers.Load(); n != 0 {
		t.Fatalf("the leader saw %d proposals and barriers, want 0", n)
	}
}

// hangingLeader is a gRPC server whose Metadata calls never answer until their context ends, as a
// paused or cut-off leader behaves; it records whether each call it got carried a deadline.
type hangingLeader struct {
	metadv1.UnimplementedMetadataServer
	addr      string
	calls     atomic.Int64
	deadlines atomic.Int64 // calls that arrived with a deadline
}

func startHanging(t *testing.T) *hangingLeader {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingLeader{addr: lis.Addr().String()}
	g := grpc.NewServer()
	metadv1.RegisterMetadataServer(g, h)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return h
}

func (h *hangingLeader) hang(ctx context.Context) error {
	h.calls.Add(1)
	if _, ok := ctx.Deadline(); ok {
		h.deadlines.Add(1)
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingLeader) PutEnd(ctx context.Context, _ *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	return nil, h.hang(ctx)
}

func (h *hangingLeader) RemoveAll(ctx context.Context, _ *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error) {
	return nil, h.hang(ctx)
}

// TestSilentLeaderIsNotForwardedTo: a follower that has not heard from its leader recently
// answers UNAVAILABLE at once, naming no leader (so the client tries another node, not the silent
// one), and forwards nothing.
func TestSilentLeaderIsNotForwardedTo(t *testing.T) {
	leader := startHanging(t)
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	fb.Silent.Store(true)
	follower := start(t, fb, testConfig())
	start := time.Now()
	_, err := follower.meta.PutEnd(tctx(t), &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")})
	d := wantErr(t, err, codes.Unavailable, rUnavail)
	if d.GetLeaderAddress() != "" || !strings.Contains(status.Convert(err).Message(), "nothing was forwarded") {
		t.Fatalf("answer %v names a leader or does not say nothing was sent", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the answer took %s", took)
	}
	if n := leader.calls.Load(); n != 0 {
		t.Fatalf("the silent leader got %d calls", n)
	}
}

// TestForwardAbandonedWhenLeaderGoesSilent: a forward in flight to a leader that stops answering
// ends with UNAVAILABLE (outcome unknown) soon after the follower stops hearing from it, well
// within the caller's deadline.
func TestForwardAbandonedWhenLeaderGoesSilent(t *testing.T) {
	leader := startHanging(t)
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	cfg := testConfig()
	cfg.Server.ForwardTimeout = time.Minute
	follower := start(t, fb, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := follower.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")})
		errc <- err
	}()
	pollUntil(t, "the forward to reach the leader", 10*time.Second, func() bool { return leader.calls.Load() == 1 })
	fb.Silent.Store(true)
	silent := time.Now()
	select {
	case err := <-errc:
		wantErr(t, err, codes.Unavailable, rUnavail)
		if !strings.Contains(status.Convert(err).Message(), "outcome is unknown") {
			t.Fatalf("abandoned forward: %v, want an unknown outcome", err)
		}
		if took := time.Since(silent); took > 5*time.Second {
			t.Fatalf("the forward was abandoned %s after the leader went silent", took)
		}
	case <-ctx.Done():
		t.Fatal("the forward was not abandoned when the leader went silent")
	}
}

// TestForwardTimeoutBoundsShortCalls: a forward of a short call to a leader that never answers
// ends after ForwardTimeout even when the caller set no deadline; a long call (RemoveAll) carries
// only the caller's deadline (none here) and is ended by the caller.
func TestForwardTimeoutBoundsShortCalls(t *testing.T) {
	leader := startHanging(t)
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	cfg := testConfig()
	cfg.Server.ForwardTimeout = 200 * time.Millisecond
	follower := start(t, fb, cfg)

	start := time.Now()
	_, err := follower.meta.PutEnd(context.Background(), &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")})
	wantErr(t, err, codes.Unavailable, rUnavail)
	if !strings.Contains(status.Convert(err).Message(), "no answer within 200ms") {
		t.Fatalf("bounded forward: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a forward bounded by 200ms took %s", took)
	}
	if leader.deadlines.Load() != 1 {
		t.Fatal("the forwarded short call carried no deadline")
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := follower.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
		errc <- err
	}()
	pollUntil(t, "the RemoveAll forward to reach the leader", 10*time.Second, func() bool { return leader.calls.Load() == 2 })
	if leader.deadlines.Load() != 1 {
		t.Fatal("the forwarded long call carried a deadline the caller did not set")
	}
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("RemoveAll cancelled by its caller: %v", err)
	}
}
