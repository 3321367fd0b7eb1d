package ha_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"metad/fsm"
	"metad/ha"
	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Cluster tests on package hatest's cluster: nodes in this process over raft's InmemTransport and
// in-memory logs, fast timeouts. Tests poll observable conditions with deadlines; they never sleep
// to synchronise. Those about the TCP transport, peer TLS and the log store on disk run on
// loopback (tcpcluster_test.go).

// newCluster is a hatest cluster of n members whose configs tweak adjusts (when not nil).
func newCluster(t testing.TB, n int, tweak func(*ha.Config)) *hatest.Cluster {
	t.Helper()
	var opts hatest.Options
	if tweak != nil {
		opts.Config = func(cfg *ha.Config, _ *fsm.FSM) { tweak(cfg) }
	}
	return hatest.New(t, n, opts)
}

// put puts the object key (PutStart, then PutEnd); an object a retried PutStart already made is
// taken as made.
func put(t testing.TB, c *hatest.Cluster, key string) {
	t.Helper()
	s, e := ha.PutCmds(key)
	if r := c.Propose(s); r.Reason != store.OK && r.Reason != store.ObjectAlreadyExists {
		t.Fatalf("put start %s: %s %s", key, r.Reason, r.Message)
	}
	if r := c.Propose(e); r.Reason != store.OK {
		t.Fatalf("put end %s: %s %s", key, r.Reason, r.Message)
	}
}

// readable reports whether m's store holds the object key.
func readable(m *hatest.Member, key string) bool {
	_, err := m.Store().Get(time.Now().UnixNano(), "", key)
	return err == nil
}

func TestReplicationAndReads(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.Propose(ha.MountCmd())
	for i := range 50 {
		put(t, c, fmt.Sprintf("k%02d", i))
	}
	c.WaitConverged()
	l := c.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Node().ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Followers() {
		n := f.Node()
		if err := n.ReadBarrier(ctx); !errors.Is(err, ha.ErrNotLeader) {
			t.Fatalf("follower read barrier: %v", err)
		}
		var nl *ha.NotLeaderError
		if errors.As(n.ReadBarrier(ctx), &nl) && nl.LeaderAddr != l.Config().ClientAddr {
			t.Fatalf("follower names leader %+v, want %s", nl, l.Config().ClientAddr)
		}
	}
	ms, err := l.Node().Members()
	if err != nil || len(ms) != 3 {
		t.Fatalf("members %v %v", ms, err)
	}
	for _, m := range c.Running() {
		if st := m.Node().Status(); st.LastLogIndex < st.AppliedIndex || st.AppliedIndex < 101 {
			t.Fatalf("%s: last log index %d, applied %d; want last >= applied >= 101 (a mount and 50 puts)",
				st.Name, st.LastLogIndex, st.AppliedIndex)
		}
	}
}

func TestProposerCoalesces(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.Propose(ha.MountCmd())
	l := c.WaitLeader().Node()
	// The leader records itself once it is ready: wait for that entry, so that only the puts count.
	c.WaitFor("the leader's own record", 5*time.Second, l.SelfRecorded)
	entries, commands := 0, 0
	var mu sync.Mutex
	l.Proposer().SetOnEntry(func(n int) { mu.Lock(); entries++; commands += n; mu.Unlock() })
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				s, _ := ha.PutCmds(fmt.Sprintf("g%d-%d", g, i))
				if _, err := l.Propose(context.Background(), s); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if commands != 640 || entries >= commands {
		t.Fatalf("%d commands in %d entries: no coalescing", commands, entries)
	}
	t.Logf("%d commands in %d entries (%.1f per entry)", commands, entries, float64(commands)/float64(entries))
}

// The leader keeps no entry's results once their callers have them. Raft's log cache holds the
// latest entries by pointers into their futures, and with them the FSM's responses; a bulk load's
// per-item results stayed on the leader's heap (hundreds of megabytes) until later entries pushed
// them out.
func TestProposerLeavesNoResultsBehind(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.Propose(ha.MountCmd())
	first := func() weak.Pointer[store.Result] {
		bs := &metadv1.BatchPutStart{ClientId: ha.TestClient, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}
		for i := range 64 {
			bs.Items = append(bs.Items, &metadv1.BatchPutStart_Item{Key: []byte(fmt.Sprintf("k%d", i)), Size: 100})
		}
		r := c.Propose(&metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: bs}})
		if len(r.Items) != 64 || r.Items[0].Reason != store.OK {
			t.Fatalf("batch put start: %d items, %+v", len(r.Items), r)
		}
		return weak.Make(&r.Items[0])
	}()
	runtime.GC()
	if first.Value() != nil {
		t.Fatal("the leader still holds the per-item results of an entry whose caller has them")
	}
}

func TestLeaderKillKeepsAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.Propose(ha.MountCmd())
	for i := range 20 {
		put(t, c, fmt.Sprintf("a%02d", i))
	}
	old := c.WaitLeader()
	c.Stop(old.Name)
	nl := c.WaitLeader()
	if nl == old {
		t.Fatal("killed node is leader")
	}
	for i := range 20 {
		if !readable(nl, fmt.Sprintf("a%02d", i)) {
			t.Fatalf("acknowledged a%02d lost after the leader died", i)
		}
	}
	put(t, c, "after-failover")
	// The old leader restarts from its log and snapshots and catches up.
	c.Restart(old.Name)
	c.WaitConverged()
	if !readable(old, "after-failover") {
		t.Fatal("restarted node did not catch up")
	}
}

func TestLeadershipTransferAndMembership(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.WaitLeader()
	target := c.Followers()[0].Name
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := l.Node().TransferLeader(ctx, target)
	if err != nil || got != target {
		t.Fatalf("transfer to %s: got %s, %v", target, got, err)
	}
	c.WaitFor("the target to be a ready leader", 5*time.Second, func() bool { x := c.Leader(); return x != nil && x.Name == target })
	// Add a fourth member, then remove it.
	n4 := c.Add("n4")
	before := c.WaitLeader().Node().Status().AppliedIndex
	idx, err := c.WaitLeader().Node().AddMember(ctx, "n4", n4.PeerAddr)
	if err != nil {
		t.Fatal(err)
	}
	if idx <= before {
		t.Fatalf("AddMember: configuration index %d, want one past the applied index %d before it", idx, before)
	}
	c.Propose(ha.MountCmd())
	put(t, c, "with-four")
	c.WaitConverged()
	if err := c.WaitLeader().Node().RemoveMember(ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	ms, _ := c.WaitLeader().Node().Members()
	if len(ms) != 3 {
		t.Fatalf("after remove: %d members", len(ms))
	}
	c.Stop("n4")
}

// A member that was down while the leader compacted its log past the member's last entry gets
// the state as a snapshot (the in-memory log store drops what a compaction deletes).
func TestSnapshotInstallToLaggingNode(t *testing.T) {
	c := newCluster(t, 3, func(cfg *ha.Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 20, 5, 50*time.Millisecond
	})
	c.Propose(ha.MountCmd())
	lagger := c.Followers()[0]
	c.Stop(lagger.Name)
	for i := range 100 {
		put(t, c, fmt.Sprintf("s%03d", i))
	}
	// Every running member, not only the leader: a loaded box may move leadership while the lagger
	// restarts, and a leader that had not compacted its log would catch it up from the log.
	c.WaitFor("a snapshot on every running member", 10*time.Second, func() bool {
		for _, m := range c.Running() {
			if m.Node().Status().LastSnapshotIndex == 0 {
				return false
			}
		}
		return true
	})
	c.Restart(lagger.Name)
	c.WaitConverged()
	if !readable(lagger, "s099") {
		t.Fatal("lagging node did not get the state")
	}
	if lagger.Node().Status().LastSnapshotIndex == 0 {
		t.Fatal("the lagging node caught up without a snapshot")
	}
}

func TestNotLeaderPropose(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.WaitLeader()
	for _, f := range c.Followers() {
		n := f.Node()
		// A follower learns who leads from the leader's first append; wait for it.
		c.WaitFor("the follower to know its leader", 5*time.Second, func() bool {
			name, _ := n.Leader()
			return name == l.Name
		})
		_, err := n.Propose(context.Background(), ha.MountCmd())
		var nle *ha.NotLeaderError
		if !errors.As(err, &nle) || nle.LeaderName != l.Name {
			t.Fatalf("follower propose: %v", err)
		}
		if _, ok := n.Proposer().TryReserve(); ok {
			t.Fatal("a follower handed out a slot")
		}
	}
	if s, ok := l.Node().Proposer().TryReserve(); !ok {
		t.Fatal("leader has no free slot")
	} else {
		s.Release()
	}
}

// TestRecordMember: the leader records the addresses of a server of the configuration (once: a
// repeat changes nothing), refuses any other name, and a follower is told who leads.
func TestRecordMember(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lm := c.WaitLeader()
	l := lm.Node()
	c.WaitFor("the leader's own record", 5*time.Second, l.SelfRecorded)
	fm := c.Followers()[0]
	f, fClient := fm.Node(), fm.Config().ClientAddr
	if err := f.RecordMember(ctx, f.Self()); !errors.Is(err, ha.ErrNotLeader) {
		t.Fatalf("RecordMember on a follower: %v", err)
	}
	if err := l.RecordMember(ctx, ha.MemberRecord{Name: "stranger", PeerAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2"}); !errors.Is(err, ha.ErrMemberNotFound) {
		t.Fatalf("RecordMember of a non-member: %v", err)
	}
	if err := l.RecordMember(ctx, f.Self()); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the follower to apply its record", 5*time.Second, f.SelfRecorded)
	before := l.Status().LastLogIndex
	if err := l.RecordMember(ctx, f.Self()); err != nil {
		t.Fatal(err)
	}
	if after := l.Status().LastLogIndex; after != before {
		t.Fatalf("recording the same addresses again appended entries %d..%d", before+1, after)
	}
	ms, err := l.Members()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == fm.Name && m.ClientAddr != fClient {
			t.Fatalf("member %s listed with client address %q, want %q", m.Name, m.ClientAddr, fClient)
		}
	}
}

// TestLeaseOnlyOnTheLeader: the leader holds a lease after a read barrier, a follower never does,
// and the old leader holds none once it starts a transfer.
func TestLeaseOnlyOnTheLeader(t *testing.T) {
	// A longer lease than the cluster's 100 ms (half its heartbeat timeout), so that a slow round
	// under the race detector still leaves some of it.
	c := newCluster(t, 3, func(cfg *ha.Config) { cfg.HeartbeatTimeout, cfg.ElectionTimeout = time.Second, time.Second })
	l := c.WaitLeader().Node()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if term := l.LeaseTerm(); term == 0 || term != l.Status().Term {
		t.Fatalf("leader's lease term %d, status term %d", term, l.Status().Term)
	}
	var target string
	for _, f := range c.Followers() {
		if f.Node().LeaseTerm() != 0 {
			t.Fatalf("follower %s holds a lease", f.Name)
		}
		target = f.Name
	}
	if _, err := l.TransferLeader(ctx, target); err != nil {
		t.Fatal(err)
	}
	if l.LeaseTerm() != 0 {
		t.Fatal("the old leader still holds a lease after the transfer")
	}
	nl := c.WaitLeader().Node()
	if err := nl.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if nl.LeaseTerm() == 0 {
		t.Fatal("the new leader holds no lease after a read barrier")
	}
}
