package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// An in-process cluster on loopback: real TCP transport, log stores in t.TempDir(), fast timeouts.
// Tests poll observable conditions with deadlines; they never sleep to synchronise.

type testCluster struct {
	t     testing.TB
	nodes map[string]*Node
	dirs  map[string]string
	cfgs  map[string]Config
}

func testConfig(name, dir string) Config {
	c := DefaultConfig()
	c.Name, c.DataDir = name, dir
	c.PeerListen, c.PeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	c.ClientAddr = "client-of-" + name
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 150*time.Millisecond, 150*time.Millisecond, 100*time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	return c
}

func newTestCluster(t testing.TB, n int, tweak func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: map[string]*Node{}, dirs: map[string]string{}, cfgs: map[string]Config{}}
	var peers []Peer
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		cfg := testConfig(name, t.TempDir())
		if tweak != nil {
			tweak(&cfg)
		}
		c.cfgs[name] = cfg
		node := c.start(name)
		peers = append(peers, Peer{Name: name, PeerAddr: node.PeerAddr()})
	}
	if err := c.nodes["n1"].BootstrapCluster(peers); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stopAll)
	c.waitLeader()
	return c
}

func (c *testCluster) start(name string) *Node {
	c.t.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	node, err := NewNode(withSoftState(c.cfgs[name], f), f, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	// Restarts keep the port they were given first, so the others can still reach them.
	cfg := c.cfgs[name]
	cfg.PeerListen, cfg.PeerAddr = node.PeerAddr(), node.PeerAddr()
	c.cfgs[name] = cfg
	c.nodes[name] = node
	return node
}

var _ StateMachine = (*fsm.FSM)(nil)

// withSoftState is cfg with the leadership hook a daemon registers: a node that gains leadership
// starts the store's leader soft state afresh.
func withSoftState(cfg Config, f *fsm.FSM) Config {
	cfg.OnLeadership = func(leading bool, _ uint64) {
		if leading {
			f.Store().ResetSoftState(time.Now().UnixNano())
		}
	}
	return cfg
}

// storeOf is n's current store.
func storeOf(n *Node) *store.Store { return n.sm.(*fsm.FSM).Store() }

func (c *testCluster) stopAll() {
	for name, n := range c.nodes {
		_ = n.Kill()
		delete(c.nodes, name)
	}
}

// waitFor polls cond every few milliseconds until it holds or the deadline passes.
func (c *testCluster) waitFor(what string, d time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *testCluster) leader() *Node {
	for _, n := range c.nodes {
		if n.isReady() {
			return n
		}
	}
	return nil
}

func (c *testCluster) waitLeader() *Node {
	c.t.Helper()
	var l *Node
	c.waitFor("a ready leader", 10*time.Second, func() bool { l = c.leader(); return l != nil })
	return l
}

func (c *testCluster) propose(cmd *metadv1.Command) store.Result {
	c.t.Helper()
	for attempt := 0; ; attempt++ {
		l := c.waitLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := l.Propose(ctx, cmd)
		cancel()
		if err == nil {
			return r
		}
		if attempt > 20 || !(errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnknown)) {
			c.t.Fatalf("propose: %v", err)
		}
	}
}

var testClient = bytes.Repeat([]byte{0xc1}, 16)

func mountCmd() *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: bytes.Repeat([]byte{0x5e}, 16), Name: "s", Base: 1 << 32, Size: 64 << 20, Endpoint: "e",
		Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: testClient}}}}
}

func putCmds(key string) (*metadv1.Command, *metadv1.Command) {
	return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: testClient, Key: []byte(key), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
		&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: testClient, Key: []byte(key)}}}
}

func (c *testCluster) put(key string) {
	c.t.Helper()
	s, e := putCmds(key)
	if r := c.propose(s); r.Reason != store.OK && r.Reason != store.ObjectAlreadyExists {
		c.t.Fatalf("put start %s: %s %s", key, r.Reason, r.Message)
	}
	if r := c.propose(e); r.Reason != store.OK {
		c.t.Fatalf("put end %s: %s %s", key, r.Reason, r.Message)
	}
}

// digest is a node's replicated state as snapshot bytes (index and term left out).
func digest(n *Node) []byte {
	snap, _ := n.sm.Snapshot()
	var buf bytes.Buffer
	_, _ = fsm.WriteCapture(&buf, snap.(interface{ Capture() *store.Capture }).Capture(), nil, 0, 0, 0)
	return buf.Bytes()
}

// digestAt is digest as if n's state had the given state epoch (to compare a restored state with
// the one it was saved from: the restore advanced the epoch).
func digestAt(n *Node, epoch uint64) []byte {
	snap, _ := n.sm.Snapshot()
	c := snap.(interface{ Capture() *store.Capture }).Capture()
	c.Epoch = epoch
	var buf bytes.Buffer
	_, _ = fsm.WriteCapture(&buf, c, nil, 0, 0, 0)
	return buf.Bytes()
}

// waitConverged waits until every node has applied the same index and holds the same state.
func (c *testCluster) waitConverged() {
	c.t.Helper()
	c.waitFor("all nodes to converge", 10*time.Second, func() bool {
		var first []byte
		var idx uint64
		i := 0
		for _, n := range c.nodes {
			a, _ := n.sm.Applied()
			d := digest(n)
			if i == 0 {
				first, idx = d, a
			} else if a != idx || !bytes.Equal(d, first) {
				return false
			}
			i++
		}
		return true
	})
}

func (c *testCluster) readable(n *Node, key string) bool {
	_, err := storeOf(n).Get(time.Now().UnixNano(), "", key)
	return err == nil
}

func TestReplicationAndReads(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose(mountCmd())
	for i := range 50 {
		c.put(fmt.Sprintf("k%02d", i))
	}
	c.waitConverged()
	l := c.waitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if !n.IsLeader() {
			if err := n.ReadBarrier(ctx); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("follower read barrier: %v", err)
			}
			var nl *NotLeaderError
			if errors.As(n.ReadBarrier(ctx), &nl) && nl.LeaderAddr != "client-of-"+l.cfg.Name {
				t.Fatalf("follower names leader %+v, want client-of-%s", nl, l.cfg.Name)
			}
		}
	}
	ms, err := l.Members()
	if err != nil || len(ms) != 3 {
		t.Fatalf("members %v %v", ms, err)
	}
	for _, n := range c.nodes {
		if st := n.Status(); st.LastLogIndex < st.AppliedIndex || st.AppliedIndex < 101 {
			t.Fatalf("%s: last log index %d, applied %d; want last >= applied >= 101 (a mount and 50 puts)",
				st.Name, st.LastLogIndex, st.AppliedIndex)
		}
	}
}

func TestProposerCoalesces(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose(mountCmd())
	l := c.waitLeader()
	entries, commands := 0, 0
	var mu sync.Mutex
	l.proposer.onEntry = func(n int) { mu.Lock(); entries++; commands += n; mu.Unlock() }
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				s, _ := putCmds(fmt.Sprintf("g%d-%d", g, i))
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
	c := newTestCluster(t, 1, nil)
	c.propose(mountCmd())
	first := func() weak.Pointer[store.Result] {
		bs := &metadv1.BatchPutStart{ClientId: testClient, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}
		for i := range 64 {
			bs.Items = append(bs.Items, &metadv1.BatchPutStart_Item{Key: []byte(fmt.Sprintf("k%d", i)), Size: 100})
		}
		r := c.propose(&metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: bs}})
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
	c := newTestCluster(t, 3, nil)
	c.propose(mountCmd())
	for i := range 20 {
		c.put(fmt.Sprintf("a%02d", i))
	}
	old := c.waitLeader()
	oldName := old.cfg.Name
	_ = old.Kill()
	delete(c.nodes, oldName)
	nl := c.waitLeader()
	if nl.cfg.Name == oldName {
		t.Fatal("killed node is leader")
	}
	for i := range 20 {
		if !c.readable(nl, fmt.Sprintf("a%02d", i)) {
			t.Fatalf("acknowledged a%02d lost after the leader died", i)
		}
	}
	c.put("after-failover")
	// The old leader restarts from its data dir and catches up.
	c.start(oldName)
	c.waitConverged()
	if !c.readable(c.nodes[oldName], "after-failover") {
		t.Fatal("restarted node did not catch up")
	}
}

func TestLeadershipTransferAndMembership(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.waitLeader()
	var target string
	for name := range c.nodes {
		if name != l.cfg.Name {
			target = name
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := l.TransferLeader(ctx, target)
	if err != nil || got != target {
		t.Fatalf("transfer to %s: got %s, %v", target, got, err)
	}
	c.waitFor("the target to be a ready leader", 5*time.Second, func() bool { x := c.leader(); return x != nil && x.cfg.Name == target })
	// Add a fourth member, then remove it.
	cfg := testConfig("n4", t.TempDir())
	c.cfgs["n4"] = cfg
	n4 := c.start("n4")
	nl := c.waitLeader()
	if err := nl.AddMember(ctx, "n4", n4.PeerAddr()); err != nil {
		t.Fatal(err)
	}
	c.propose(mountCmd())
	c.put("with-four")
	c.waitConverged()
	if err := c.waitLeader().RemoveMember(ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	ms, _ := c.waitLeader().Members()
	if len(ms) != 3 {
		t.Fatalf("after remove: %d members", len(ms))
	}
	_ = n4.Kill()
	delete(c.nodes, "n4")
}

func TestSnapshotInstallToLaggingNode(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 20, 5, 50*time.Millisecond
	})
	c.propose(mountCmd())
	l := c.waitLeader()
	var lagger string
	for name := range c.nodes {
		if name != l.cfg.Name {
			lagger = name
			break
		}
	}
	_ = c.nodes[lagger].Kill()
	delete(c.nodes, lagger)
	for i := range 100 {
		c.put(fmt.Sprintf("s%03d", i))
	}
	c.waitFor("a snapshot on the leader", 10*time.Second, func() bool { return c.waitLeader().Status().LastSnapshotIndex > 0 })
	c.start(lagger)
	c.waitConverged()
	if !c.readable(c.nodes[lagger], "s099") {
		t.Fatal("lagging node did not get the state")
	}
}

func TestNotLeaderPropose(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.waitLeader()
	for _, n := range c.nodes {
		if n == l {
			continue
		}
		// A follower learns who leads from the leader's first append; wait for it.
		c.waitFor("the follower to know its leader", 5*time.Second, func() bool {
			name, _ := n.Leader()
			return name == l.cfg.Name
		})
		_, err := n.Propose(context.Background(), mountCmd())
		var nle *NotLeaderError
		if !errors.As(err, &nle) || nle.LeaderName != l.cfg.Name {
			t.Fatalf("follower propose: %v", err)
		}
		if _, ok := n.proposer.TryReserve(); ok {
			t.Fatal("a follower handed out a slot")
		}
	}
	if s, ok := l.proposer.TryReserve(); !ok {
		t.Fatal("leader has no free slot")
	} else {
		s.Release()
	}
	_ = raft.ErrNotLeader
}

// TestRecordMember: the leader records the addresses of a server of the configuration (once: a
// repeat changes nothing), refuses any other name, and a follower is told who leads.
func TestRecordMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := c.waitLeader()
	c.waitFor("the leader's own record", 5*time.Second, l.SelfRecorded)
	var f *Node
	for _, n := range c.nodes {
		if n != l {
			f = n
		}
	}
	if err := f.RecordMember(ctx, f.cfg.Name, f.cfg.PeerAddr, f.cfg.ClientAddr); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("RecordMember on a follower: %v", err)
	}
	if err := l.RecordMember(ctx, "stranger", "127.0.0.1:1", "127.0.0.1:2"); !errors.Is(err, ErrMemberNotFound) {
		t.Fatalf("RecordMember of a non-member: %v", err)
	}
	if err := l.RecordMember(ctx, f.cfg.Name, f.cfg.PeerAddr, f.cfg.ClientAddr); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the follower to apply its record", 5*time.Second, f.SelfRecorded)
	before := l.Status().LastLogIndex
	if err := l.RecordMember(ctx, f.cfg.Name, f.cfg.PeerAddr, f.cfg.ClientAddr); err != nil {
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
		if m.Name == f.cfg.Name && m.ClientAddr != f.cfg.ClientAddr {
			t.Fatalf("member %s listed with client address %q, want %q", m.Name, m.ClientAddr, f.cfg.ClientAddr)
		}
	}
}
