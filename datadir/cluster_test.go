package datadir

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/snapshot/snapshottest"
	"metad/store"
)

// An in-process cluster on loopback (real TCP transport, bolt files in t.TempDir(), fast timeouts)
// whose data dirs the tools work on. Tests poll observable conditions with deadlines.

type member struct {
	f *fsm.FSM
	n *ha.Node
}

type cluster struct {
	t     *testing.T
	nodes map[string]*member
	cfgs  map[string]ha.Config
}

func testConfig(name, dir string) ha.Config {
	c := ha.DefaultConfig()
	c.Name, c.DataDir = name, dir
	c.PeerListen, c.PeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	c.ClientAddr = "client-of-" + name
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 150*time.Millisecond, 150*time.Millisecond, 100*time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	return c
}

func emptyCluster(t *testing.T) *cluster {
	c := &cluster{t: t, nodes: map[string]*member{}, cfgs: map[string]ha.Config{}}
	t.Cleanup(c.stopAll)
	return c
}

// newCluster starts n members (n1, n2...) on new data dirs and bootstraps them.
func newCluster(t *testing.T, n int, tweak func(*ha.Config)) *cluster {
	t.Helper()
	c := emptyCluster(t)
	var peers []ha.Peer
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		cfg := testConfig(name, t.TempDir())
		if tweak != nil {
			tweak(&cfg)
		}
		c.cfgs[name] = cfg
		m := c.start(name)
		peers = append(peers, ha.Peer{Name: name, PeerAddr: m.n.PeerAddr()})
	}
	if err := c.nodes["n1"].n.BootstrapCluster(peers); err != nil {
		t.Fatal(err)
	}
	c.waitLeader()
	return c
}

// start starts the named member on its config, as metad does.
func (c *cluster) start(name string) *member {
	c.t.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	n, err := ha.NewNode(c.cfgs[name], f, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	// Restarts keep the port they were given first, so the others can still reach them.
	cfg := c.cfgs[name]
	cfg.PeerListen, cfg.PeerAddr = n.PeerAddr(), n.PeerAddr()
	c.cfgs[name] = cfg
	m := &member{f: f, n: n}
	c.nodes[name] = m
	return m
}

func (c *cluster) stopAll() {
	for name, m := range c.nodes {
		_ = m.n.Shutdown()
		delete(c.nodes, name)
	}
}

// waitFor polls cond every few milliseconds until it holds or the deadline passes.
func (c *cluster) waitFor(what string, d time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLeader waits for a leader that has applied its term-start barrier.
func (c *cluster) waitLeader() *member {
	c.t.Helper()
	var l *member
	c.waitFor("a ready leader", 10*time.Second, func() bool {
		for _, m := range c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			err := m.n.LeaderReady(ctx)
			cancel()
			if err == nil {
				l = m
				return true
			}
		}
		return false
	})
	return l
}

func (c *cluster) propose(cmd *metadv1.Command) store.Result {
	c.t.Helper()
	for attempt := 0; ; attempt++ {
		l := c.waitLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := l.n.Propose(ctx, cmd)
		cancel()
		if err == nil {
			return r
		}
		if attempt > 20 || !(errors.Is(err, ha.ErrNotLeader) || errors.Is(err, ha.ErrUnknown)) {
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

func (c *cluster) put(key string) {
	c.t.Helper()
	s := &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: testClient, Key: []byte(key), Size: 100,
		Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
	e := &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: testClient, Key: []byte(key)}}}
	if r := c.propose(s); r.Reason != store.OK && r.Reason != store.ObjectAlreadyExists {
		c.t.Fatalf("put start %s: %s %s", key, r.Reason, r.Message)
	}
	if r := c.propose(e); r.Reason != store.OK {
		c.t.Fatalf("put end %s: %s %s", key, r.Reason, r.Message)
	}
}

// digest is a member's replicated state as snapshot bytes (index and term left out).
func digest(m *member) []byte {
	snap, _ := m.f.Snapshot()
	var buf bytes.Buffer
	_, _ = fsm.WriteCapture(&buf, snap.(interface{ Capture() *store.Capture }).Capture(), nil, 0, 0, 0)
	return buf.Bytes()
}

// anyNode returns some member of the cluster.
func (c *cluster) anyNode() *member {
	for _, m := range c.nodes {
		return m
	}
	return nil
}

// waitConverged waits until every member has applied the same index and holds the same state.
func (c *cluster) waitConverged() {
	c.t.Helper()
	c.waitFor("all nodes to converge", 10*time.Second, func() bool {
		var first []byte
		var idx uint64
		i := 0
		for _, m := range c.nodes {
			a, _ := m.f.Applied()
			d := digest(m)
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

func (c *cluster) readable(m *member, key string) bool {
	_, err := m.f.Store().Get(time.Now().UnixNano(), "", key)
	return err == nil
}

// saveSnapshot streams a fresh snapshot from the leader into memory.
func (c *cluster) saveSnapshot() []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.waitLeader().n.OpenSnapshot(ctx, false)
	if err != nil {
		c.t.Fatal(err)
	}
	defer s.Close()
	b, err := io.ReadAll(s)
	if err != nil || int64(len(b)) != s.Size {
		c.t.Fatalf("read snapshot: %d of %d bytes, %v", len(b), s.Size, err)
	}
	return b
}

// freeAddrs returns n loopback addresses that were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().String())
		defer l.Close()
	}
	return out
}

// badSnapshots are broken versions of good, each with the error it must be refused with.
func badSnapshots(t *testing.T, good []byte) map[string]struct {
	file []byte
	kind error
} {
	future := bytes.Clone(good)
	binary.BigEndian.PutUint32(future[8:], snapshot.FormatVersion+1)
	checksum := bytes.Clone(good)
	checksum[len(checksum)-1] ^= 0xff
	return map[string]struct {
		file []byte
		kind error
	}{
		"empty":       {nil, snapshot.ErrTruncated},
		"truncated":   {good[:len(good)/2], snapshot.ErrTruncated},
		"foreign":     {[]byte(`{"this": "is a JSON file, not a snapshot"}`), snapshot.ErrBadMagic},
		"future":      {future, snapshot.ErrFutureVersion},
		"checksum":    {checksum, snapshot.ErrChecksum},
		"overlapping": {snapshottest.Overlapping(t, good), snapshot.ErrCorrupt},
	}
}
