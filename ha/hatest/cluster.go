package hatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// The Raft timeouts of a cluster's members: a first election or a failover settles within about
// twice HeartbeatTimeout, and a leader keeps its term through the pauses of a loaded two-core
// machine under the race detector. Options.Config may change them (a benchmark takes
// ha.DefaultConfig's).
const (
	HeartbeatTimeout   = 200 * time.Millisecond
	ElectionTimeout    = 200 * time.Millisecond
	LeaderLeaseTimeout = 150 * time.Millisecond
	CommitTimeout      = 5 * time.Millisecond
)

// WaitTimeout bounds each wait of the cluster's helpers (a ready leader, convergence).
const WaitTimeout = 10 * time.Second

// rpcTimeout bounds one RPC between members (raft's InmemTransport gives an InstallSnapshot and a
// TimeoutNow ten times as long). A stopped or cut-off member is disconnected, and a stopping one
// fails what it has not taken (transport.go), so RPCs to it fail at once; the bound is for a member
// slow to take an RPC on a loaded machine.
const rpcTimeout = 2 * time.Second

// Options shapes a cluster; the zero value is a plain one.
type Options struct {
	// FSM makes member name's state machine, at each start: a restarted member starts over a new
	// one, into which Raft restores its snapshot and log, as a restarted process does. Default:
	// fsm.New(store.DefaultConfig(), nil).
	FSM func(name string) (*fsm.FSM, error)
	// Config, when set, adjusts a member's config before each start, after the cluster has set
	// its name, data dir, transport, log stores, addresses, timeouts and leadership hook; f is the
	// state machine the node runs over (a hook that reaches the store, such as
	// service.Leadership's, is built from it). The default hook starts the store's leader soft
	// state afresh when the member gains leadership, as a daemon's does.
	Config func(cfg *ha.Config, f *fsm.FSM)
	// Start starts a member's node. Default: ha.NewNode(cfg, f, nil).
	Start func(cfg ha.Config, f *fsm.FSM) (*ha.Node, error)
}

// Cluster is safe for concurrent use; the helpers that wait (WaitLeader, Propose, WaitFor,
// WaitConverged) and those that start members fail the test with t.Fatal, so call them from the
// test's goroutine. It is a set of ha.Node members in this process, over raft's InmemTransport and
// in-memory log stores, each over a real fsm.FSM, with snapshots in a t.TempDir() data dir.
type Cluster struct {
	t     testing.TB
	opts  Options
	dir   string    // the members' data dirs live here; removed after StopAll has run
	peers []ha.Peer // the initial members, which bootstrap the cluster

	mu      sync.Mutex // guards members and the running state of each
	members []*Member  // in the order they were made
}

// Member is one member of a Cluster, running or stopped; safe for concurrent use. Its log, term
// and vote and its data dir last as long as the cluster, so a stopped member starts again where it
// stopped (Cluster.Restart).
type Member struct {
	Name     string
	PeerAddr string // its Raft address: "<name>.raft:7000", a host:port nothing listens on
	DataDir  string // its snapshots, and the spool of an online restore; in the test's temp dir

	c         *Cluster
	stores    *ha.LogStores // its Raft log and stable store, kept across restarts
	bootstrap bool          // an initial member: started with the initial cluster

	// Guarded by c.mu.
	node  *ha.Node // nil while stopped
	f     *fsm.FSM // of the last start
	cfg   ha.Config
	trans *raft.InmemTransport // the routes of the last start's transport (Connect, Disconnect)
	cut   bool                 // partitioned from the others
}

// New starts a cluster of n members, n1..n<n>, bootstrapped together as a daemon's initial cluster
// is, and waits for a ready leader. Every member is stopped when the test ends (t.Cleanup).
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if opts.FSM == nil {
		opts.FSM = func(string) (*fsm.FSM, error) { return fsm.New(store.DefaultConfig(), nil) }
	}
	if opts.Start == nil {
		opts.Start = func(cfg ha.Config, f *fsm.FSM) (*ha.Node, error) { return ha.NewNode(cfg, f, nil) }
	}
	// The directory's removal is registered first, so that it runs after StopAll: a member may
	// be writing a snapshot until it stops.
	c := &Cluster{t: t, opts: opts, dir: t.TempDir()}
	t.Cleanup(c.StopAll)
	for i := 1; i <= n; i++ {
		m := c.newMember(fmt.Sprintf("n%d", i))
		m.bootstrap = true
		c.peers = append(c.peers, ha.Peer{Name: m.Name, PeerAddr: m.PeerAddr})
	}
	for _, m := range c.Members() {
		c.start(m)
	}
	c.WaitLeader()
	return c
}

func (c *Cluster) newMember(name string) *Member {
	c.t.Helper()
	dir, err := os.MkdirTemp(c.dir, name+"-")
	if err != nil {
		c.t.Fatalf("hatest: %v", err)
	}
	m := &Member{Name: name, PeerAddr: name + ".raft:7000", DataDir: dir, c: c, stores: ha.InmemLogStores()}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.members {
		if o.Name == name {
			c.t.Fatalf("hatest: a member %s already exists", name)
		}
	}
	c.members = append(c.members, m)
	return m
}

// Add starts a new member that is in no configuration yet, over an empty log: the caller adds it
// (the leader's AddMember with its Name and PeerAddr) as an operator adds a process started with
// --initial-cluster-state existing.
func (c *Cluster) Add(name string) *Member {
	c.t.Helper()
	m := c.newMember(name)
	c.start(m)
	return m
}

// start runs m's node over its stores and data dir with a new transport and state machine.
func (c *Cluster) start(m *Member) {
	c.t.Helper()
	f, err := c.opts.FSM(m.Name)
	if err != nil {
		c.t.Fatalf("hatest: %s: state machine: %v", m.Name, err)
	}
	tr, routes := newTransport(raft.ServerAddress(m.PeerAddr))
	cfg := ha.DefaultConfig()
	cfg.Name, cfg.DataDir, cfg.ClientAddr = m.Name, m.DataDir, m.Name+".client:7001"
	cfg.Transport, cfg.LogStores = tr, m.stores
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout
	cfg.CommitTimeout = CommitTimeout
	cfg.OnLeadership = func(leading bool, _ uint64) {
		if leading {
			f.Store().ResetSoftState(time.Now().UnixNano())
		}
	}
	if m.bootstrap {
		cfg.Bootstrap, cfg.InitialCluster = true, c.peers
	}
	if c.opts.Config != nil {
		c.opts.Config(&cfg, f)
	}
	c.mu.Lock()
	if m.node != nil {
		c.mu.Unlock()
		c.t.Fatalf("hatest: %s is running", m.Name)
	}
	m.f, m.cfg, m.trans = f, cfg, routes
	c.connectLocked(m) // before Raft starts, so that its first RPCs reach the others
	c.mu.Unlock()
	node, err := c.opts.Start(cfg, f)
	if err != nil {
		c.mu.Lock()
		c.cutInboundLocked(m)
		c.mu.Unlock()
		_ = tr.Close()
		c.t.Fatalf("hatest: start %s: %v", m.Name, err)
	}
	c.mu.Lock()
	m.node = node
	c.mu.Unlock()
}

// connectLocked connects m's transport with every other running member's, both ways, unless
// either is cut off.
func (c *Cluster) connectLocked(m *Member) {
	if m.cut {
		return
	}
	for _, o := range c.members {
		if o == m || o.trans == nil || o.node == nil || o.cut {
			continue
		}
		m.trans.Connect(raft.ServerAddress(o.PeerAddr), o.trans)
		o.trans.Connect(raft.ServerAddress(m.PeerAddr), m.trans)
	}
}

// cutInboundLocked disconnects every other member's transport from m's: their RPCs to m fail at
// once, as to a process that is gone.
func (c *Cluster) cutInboundLocked(m *Member) {
	for _, o := range c.members {
		if o != m && o.trans != nil {
			o.trans.Disconnect(raft.ServerAddress(m.PeerAddr))
		}
	}
}

// Stop stops member name as a crash would (ha.Node.Kill: no leadership transfer), its
// connections dropped first.
func (c *Cluster) Stop(name string) {
	c.t.Helper()
	m := c.Member(name)
	c.mu.Lock()
	node := m.node
	m.node = nil
	if node != nil {
		c.cutInboundLocked(m)
		m.trans.DisconnectAll()
	}
	c.mu.Unlock()
	if node == nil {
		c.t.Fatalf("hatest: %s is not running", name)
	}
	_ = node.Kill()
}

// Shutdown stops member name as a planned stop does (ha.Node.Shutdown: a leader hands leadership
// over first). The others stop reaching it first; its own RPCs, the handover's among them, go out
// until it stops.
func (c *Cluster) Shutdown(name string) error {
	c.t.Helper()
	m := c.Member(name)
	c.mu.Lock()
	node := m.node
	m.node = nil
	if node != nil {
		c.cutInboundLocked(m)
	}
	c.mu.Unlock()
	if node == nil {
		c.t.Fatalf("hatest: %s is not running", name)
	}
	err := node.Shutdown()
	m.trans.DisconnectAll()
	return err
}

// Restart starts the stopped member name again over its log, term, vote and data dir, with a
// new state machine, at the same address. A member that was cut off stays cut off.
func (c *Cluster) Restart(name string) *Member {
	c.t.Helper()
	m := c.Member(name)
	c.start(m)
	return m
}

// Partition cuts member name off from every other member: RPCs either way fail at once. It keeps
// running (a leader steps down once LeaderLeaseTimeout passes without a quorum).
func (c *Cluster) Partition(name string) {
	m := c.Member(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.cut = true
	if m.trans != nil {
		c.cutInboundLocked(m)
		m.trans.DisconnectAll()
	}
}

// Heal connects member name with the running members that are not cut off.
func (c *Cluster) Heal(name string) {
	m := c.Member(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	m.cut = false
	if m.node != nil {
		c.connectLocked(m)
	}
}

// StopAll stops every running member as a crash would; New registers it with t.Cleanup.
func (c *Cluster) StopAll() {
	c.mu.Lock()
	var nodes []*ha.Node
	for _, m := range c.members {
		if m.node != nil {
			c.cutInboundLocked(m)
			m.trans.DisconnectAll()
			nodes = append(nodes, m.node)
			m.node = nil
		}
	}
	c.mu.Unlock()
	for _, n := range nodes {
		_ = n.Kill()
	}
}

// Member returns member name; the test fails if there is none.
func (c *Cluster) Member(name string) *Member {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.Name == name {
			return m
		}
	}
	c.t.Fatalf("hatest: no member %s", name)
	return nil
}

// Members returns every member, running or stopped, in the order they were made.
func (c *Cluster) Members() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Member(nil), c.members...)
}

// Running returns the running members, in the order they were made.
func (c *Cluster) Running() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Member
	for _, m := range c.members {
		if m.node != nil {
			out = append(out, m)
		}
	}
	return out
}

// Leader returns the running member that leads and has applied its term-start barrier
// (ha.Node.Ready), or nil.
func (c *Cluster) Leader() *Member {
	for _, m := range c.Running() {
		if n := m.Node(); n != nil && n.Ready() {
			return m
		}
	}
	return nil
}

// WaitLeader polls until a running member is a ready leader (within WaitTimeout) and returns it.
func (c *Cluster) WaitLeader() *Member {
	c.t.Helper()
	var l *Member
	c.WaitFor("a ready leader", WaitTimeout, func() bool { l = c.Leader(); return l != nil })
	return l
}

// Followers returns the running members other than the ready leader, which it waits for.
func (c *Cluster) Followers() []*Member {
	c.t.Helper()
	l := c.WaitLeader()
	var out []*Member
	for _, m := range c.Running() {
		if m != l {
			out = append(out, m)
		}
	}
	return out
}

// Propose proposes cmd on the ready leader and returns its result. A proposal that fails because
// leadership moved (ha.ErrNotLeader, or ha.ErrUnknown: it may have committed) is made again on the
// next leader, up to 20 times; any other error fails the test. A command that must apply once
// whatever happens belongs in a client session.
func (c *Cluster) Propose(cmd *metadv1.Command) store.Result {
	c.t.Helper()
	for attempt := 0; ; attempt++ {
		l := c.WaitLeader()
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		r, err := l.Node().Propose(ctx, cmd)
		cancel()
		if err == nil {
			return r
		}
		if attempt >= 20 || !(errors.Is(err, ha.ErrNotLeader) || errors.Is(err, ha.ErrUnknown) || errors.Is(err, ha.ErrShutdown)) {
			c.t.Fatalf("hatest: propose: %v", err)
		}
	}
}

// WaitFor polls cond every few milliseconds until it holds; the test fails when d passes first.
func (c *Cluster) WaitFor(what string, d time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("hatest: timed out after %s waiting for %s", d, what)
		}
		<-tick.C
	}
}

// WaitConverged polls until every running member has applied the same index and holds the same
// state (Digest).
func (c *Cluster) WaitConverged() {
	c.t.Helper()
	c.WaitFor("the running members to converge", WaitTimeout, func() bool {
		var first []byte
		var idx uint64
		for i, m := range c.Running() {
			a, _ := m.FSM().Applied()
			d := Digest(m.FSM())
			if d == nil {
				return false
			}
			if i == 0 {
				first, idx = d, a
			} else if a != idx || !bytes.Equal(d, first) {
				return false
			}
		}
		return true
	})
}

// Digest is the store's state in f (fsm.WriteCapture's bytes: segments, tenants and objects; no
// members, sessions or auth state, no Raft index or term): equal for two state machines whose
// stores hold the same state. It is taken off Raft's apply goroutine, so a state being restored
// meanwhile may not write whole: Digest is then nil.
func Digest(f *fsm.FSM) []byte { return digest(f, nil) }

// DigestAt is Digest as if f's state had the given state epoch (to compare a restored state with
// the one it was saved from: the restore advanced the epoch).
func DigestAt(f *fsm.FSM, epoch uint64) []byte { return digest(f, &epoch) }

func digest(f *fsm.FSM, epoch *uint64) []byte {
	snap, err := f.Snapshot()
	if err != nil {
		return nil
	}
	capt := snap.(interface{ Capture() *store.Capture }).Capture()
	if epoch != nil {
		capt.Epoch = *epoch
	}
	var buf bytes.Buffer
	if _, err := fsm.WriteCapture(&buf, capt, nil, 0, 0, 0); err != nil {
		return nil
	}
	return buf.Bytes()
}

// Node returns the member's node, nil while it is stopped.
func (m *Member) Node() *ha.Node {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.node
}

// Running reports whether the member runs.
func (m *Member) Running() bool { return m.Node() != nil }

// FSM returns the state machine of the member's last start.
func (m *Member) FSM() *fsm.FSM {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.f
}

// Store returns the current store of the member's state machine.
func (m *Member) Store() *store.Store { return m.FSM().Store() }

// Config returns the config of the member's last start (its client address: "<name>.client:7001"
// unless Options.Config set another).
func (m *Member) Config() ha.Config {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.cfg
}
