package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// An in-process cluster on loopback: real TCP transport (mutual TLS under PeerTLS), log stores in
// t.TempDir(), fast timeouts, for the tests whose subject is the transport, peer TLS or the log
// store on disk, and the commit-round benchmark. Every other cluster test runs in memory over
// package hatest (cluster_test.go). Tests poll observable conditions with deadlines; they never
// sleep to synchronise.

type testCluster struct {
	t     testing.TB
	nodes map[string]*Node
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
	c := &testCluster{t: t, nodes: map[string]*Node{}, cfgs: map[string]Config{}}
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
