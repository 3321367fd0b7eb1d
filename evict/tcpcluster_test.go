package evict

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"metad/fsm"
	"metad/ha"
	"metad/store"
)

// The foreground benchmark's cluster (bench_test.go): the cluster of cluster_test.go with its
// members on the daemon's transport and log, real Raft over loopback TCP with each member's log
// and snapshots in a t.TempDir() data dir.

// liveNode is a member of newTCPCluster's cluster: the node with its state machine.
type liveNode struct {
	node *ha.Node
	f    *fsm.FSM
}

// Node returns the member's node.
func (n *liveNode) Node() *ha.Node { return n.node }

// FSM returns the member's state machine.
func (n *liveNode) FSM() *fsm.FSM { return n.f }

// Store returns the member's current store.
func (n *liveNode) Store() *store.Store { return n.f.Store() }

// newTCPCluster builds the cluster over loopback TCP with the given read lease ttl and ha's default
// Raft timeouts (the benchmark's million-object heaps and load would starve fast heartbeats on a
// small machine), and waits for a leader that serves linearizable reads. stop, or the end of the
// test, stops the evictors and then the members.
func newTCPCluster(t testing.TB, evCfg Config, leaseTTL time.Duration) *cluster {
	t.Helper()
	c := emptyCluster(t)
	c.stopNode = func(name string) error { return c.nodes[name].Node().Shutdown() }
	t.Cleanup(c.stop)
	var peers []ha.Peer
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("n%d", i)
		cfg := ha.DefaultConfig()
		cfg.Name, cfg.DataDir = name, t.TempDir()
		cfg.PeerListen, cfg.PeerAddr, cfg.ClientAddr = "127.0.0.1:0", "127.0.0.1:0", "client-of-"+name
		f, err := fsm.New(store.Config{LeaseTTL: leaseTTL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		evp := new(atomic.Pointer[Evictor])
		cfg.OnLeadership = leadershipHook(f, evp)
		hn, err := ha.NewNode(cfg, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := &liveNode{node: hn, f: f}
		c.names = append(c.names, name)
		c.nodes[name] = n
		ev, err := New(evCfg, FromHA(hn, f.Store), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		evp.Store(ev)
		c.evs[name] = ev
		peers = append(peers, ha.Peer{Name: name, PeerAddr: hn.PeerAddr()})
	}
	if err := c.nodes["n1"].Node().BootstrapCluster(peers); err != nil {
		t.Fatal(err)
	}
	c.leader()
	return c
}

// stop stops every evictor loop, then shuts every running member down.
func (c *cluster) stop() {
	c.stopEvictors()
	for name := range c.nodes {
		_ = c.shutdown(name)
	}
}
