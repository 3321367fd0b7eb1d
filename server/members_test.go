package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
)

// liveNode is one member of an in-process cluster: a real Raft node (loopback TCP transport, bolt
// in a temp dir) behind a real Server on a loopback gRPC port.
type liveNode struct {
	name, addr string
	node       *ha.Node
	admin      metadv1.AdminClient
}

// startLiveCluster starts three members, bootstraps them and stops everything when the test ends.
func startLiveCluster(t *testing.T) []*liveNode {
	t.Helper()
	var nodes []*liveNode
	var peers []ha.Peer
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("n%d", i)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsm.New(store.DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		hc := ha.DefaultConfig()
		hc.Name, hc.DataDir = name, t.TempDir()
		hc.PeerListen, hc.PeerAddr, hc.ClientAddr = "127.0.0.1:0", "127.0.0.1:0", lis.Addr().String()
		lead := service.NewLeadership(f.Store, nil)
		hc.OnLeadership = lead.Changed
		n, err := ha.NewNode(hc, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown() }) // runs after the server's cleanup below
		cfg := config{Config: service.DefaultConfig(), Server: DefaultConfig()}
		cfg.SweepInterval, cfg.Server.SweepInterval = 20*time.Millisecond, 20*time.Millisecond
		_, _, cc := serve(t, n, f, lead, cfg, lis)
		nodes = append(nodes, &liveNode{name: name, addr: lis.Addr().String(), node: n, admin: metadv1.NewAdminClient(cc)})
		peers = append(peers, ha.Peer{Name: name, PeerAddr: n.PeerAddr()})
	}
	if err := nodes[0].node.BootstrapCluster(peers); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// pollUntil polls cond every 10 ms until it holds or d passes.
func pollUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEveryMemberRecordedWhileTheFirstLeaderLeads: the members that never led ask the leader to
// record their addresses, so every member's client address is listed while the first leader still
// leads, and a leadership transfer names the new leader's address.
func TestEveryMemberRecordedWhileTheFirstLeaderLeads(t *testing.T) {
	nodes := startLiveCluster(t)
	ctx := tctx(t)
	var leader *liveNode
	pollUntil(t, "a leader", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.node.IsLeader() {
				leader = n
				return true
			}
		}
		return false
	})
	term := leader.node.Status().Term
	var follower *liveNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	var last []*metadv1.Member
	defer func() {
		if t.Failed() {
			t.Logf("last members listed: %v", last)
		}
	}()
	pollUntil(t, "every member's client address to be listed", 10*time.Second, func() bool {
		lm, err := follower.admin.ListMembers(ctx, &metadv1.ListMembersRequest{}) // forwarded to the leader
		if err != nil {
			return false // no leader known yet, or its own address is not recorded yet
		}
		last = lm.GetMembers()
		if len(last) != len(nodes) {
			return false
		}
		for i, m := range last {
			if m.GetName() != nodes[i].name || m.GetClientAddress() != nodes[i].addr {
				return false
			}
		}
		return true
	})
	if st := leader.node.Status(); st.Role != ha.RoleLeader || st.Term != term {
		t.Fatalf("the first leader %s (term %d) no longer leads: %+v; members %v", leader.name, term, st, last)
	}
	tl, err := follower.admin.TransferLeader(ctx, &metadv1.TransferLeaderRequest{Target: follower.name})
	if err != nil || tl.GetLeaderName() != follower.name || tl.GetLeaderAddress() != follower.addr {
		t.Fatalf("TransferLeader to %s at %s: %v %v", follower.name, follower.addr, tl, err)
	}
}

// TestRecordMemberRefusesANonMember: the leader records only servers of the Raft configuration, and
// bad addresses are InvalidArgument naming the field.
func TestRecordMemberRefusesANonMember(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	_, err := h.admin.RecordMember(ctx, &metadv1.RecordMemberRequest{Name: "stranger", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"})
	wantErr(t, err, codes.NotFound, metadv1.Reason_REASON_MEMBER_NOT_FOUND)
	_, err = h.admin.RecordMember(ctx, &metadv1.RecordMemberRequest{Name: "self", PeerAddress: "127.0.0.1:1", ClientAddress: "nowhere"})
	wantErr(t, err, codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS)
	if _, err := h.admin.RecordMember(ctx, &metadv1.RecordMemberRequest{Name: "self", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
}

// TestNewerMemberWarnedOnce: a member that records a feature level above this binary's is logged
// once per level, naming it; members at this level or below are not.
func TestNewerMemberWarnedOnce(t *testing.T) {
	b := newFakeBackend(t, nil)
	cfg := testConfig()
	lead := service.NewLeadership(b.Store, cfg.Now)
	svc, err := service.New(b, b.FSM(), lead, cfg.Config, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := New(svc, b, cfg.Server, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	own := b.Self().Level
	b.SetMembers("self", "old", "new")
	b.SetMemberLevel("old", own-1)
	b.SetMemberLevel("new", own+1)
	warned := map[string]uint32{}
	s.warnNewer(warned)
	s.warnNewer(warned)
	if out := logs.String(); strings.Count(out, "newer release") != 1 || !strings.Contains(out, "member=new") {
		t.Fatalf("warnings:\n%s", out)
	}
	b.SetMemberLevel("new", own+2)
	s.warnNewer(warned)
	if n := strings.Count(logs.String(), "newer release"); n != 2 {
		t.Fatalf("a higher level again: %d warnings, want 2", n)
	}
}
