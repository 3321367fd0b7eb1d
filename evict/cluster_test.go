package evict

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/fsm"
	"metad/ha"
	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// A 3-node cluster with an evictor on every member; only the leader's works. The tests run it in
// memory (newCluster: hatest's members over raft's InmemTransport and in-memory logs, fast
// timeouts); the foreground benchmark runs it over loopback TCP with its logs on disk
// (newTCPCluster, tcpcluster_test.go). Tests poll observable conditions with deadlines and never
// sleep to synchronise.

const clusterLeaseTTL = 100 * time.Millisecond // a new leader's lease floor lasts this long

// clusterMember is a member of a cluster: a *hatest.Member in the tests, a *liveNode in the
// benchmark.
type clusterMember interface {
	Node() *ha.Node // nil once the member is stopped
	FSM() *fsm.FSM
	Store() *store.Store
}

type cluster struct {
	t      testing.TB
	names  []string
	nodes  map[string]clusterMember // the running members
	evs    map[string]*Evictor
	cancel map[string]context.CancelFunc
	wg     sync.WaitGroup
	// stopNode stops member name as a planned stop does (a leader hands leadership over first).
	stopNode func(name string) error

	// The test's client session: propose numbers every command in it, so that a command retried
	// after an unknown outcome (a leadership change mid-commit) is applied once.
	sessMu   sync.Mutex
	sess     uint64
	nextSeq  uint64
	inflight map[uint64]struct{}
}

// emptyCluster is a cluster with no members yet, for newCluster and newTCPCluster to fill.
func emptyCluster(t testing.TB) *cluster {
	return &cluster{t: t, nodes: map[string]clusterMember{}, evs: map[string]*Evictor{}, cancel: map[string]context.CancelFunc{}}
}

// newCluster builds the cluster in memory (hatest) with the tests' read lease ttl and waits for a
// leader that serves linearizable reads. When the test ends the evictors stop, then the members.
func newCluster(t testing.TB, evCfg Config) *cluster {
	t.Helper()
	c := emptyCluster(t)
	kicks := map[string]*atomic.Pointer[Evictor]{} // written by Config and Start, on the test's goroutine
	raft := hatest.New(t, 3, hatest.Options{
		FSM: func(string) (*fsm.FSM, error) { return fsm.New(store.Config{LeaseTTL: clusterLeaseTTL}, nil) },
		Config: func(cfg *ha.Config, f *fsm.FSM) {
			kicks[cfg.Name] = new(atomic.Pointer[Evictor])
			cfg.OnLeadership = leadershipHook(f, kicks[cfg.Name])
		},
		Start: func(cfg ha.Config, f *fsm.FSM) (*ha.Node, error) {
			node, err := ha.NewNode(cfg, f, nil)
			if err != nil {
				return nil, err
			}
			ev, err := New(evCfg, FromHA(node, f.Store), nil, nil)
			if err != nil {
				_ = node.Kill()
				return nil, err
			}
			kicks[cfg.Name].Store(ev)
			c.evs[cfg.Name] = ev
			return node, nil
		},
	})
	t.Cleanup(c.stopEvictors) // registered after hatest's, so it runs before the members stop
	for _, m := range raft.Members() {
		c.names = append(c.names, m.Name)
		c.nodes[m.Name] = m
	}
	c.stopNode = raft.Shutdown
	c.leader()
	return c
}

// leadershipHook is the leadership hook a daemon registers (a new leader starts the store's soft
// state afresh) and a kick for the member's evictor, once ev holds it.
func leadershipHook(f *fsm.FSM, ev *atomic.Pointer[Evictor]) func(bool, uint64) {
	return func(leading bool, _ uint64) {
		if leading {
			f.Store().ResetSoftState(time.Now().UnixNano())
		}
		if e := ev.Load(); e != nil {
			e.Kick()
		}
	}
}

// start runs every node's evictor loop.
func (c *cluster) start() {
	for _, name := range c.names {
		ctx, cancel := context.WithCancel(context.Background())
		c.cancel[name] = cancel
		ev := c.evs[name]
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_ = ev.Run(ctx)
		}()
	}
}

// stopEvictors stops every evictor loop and waits for them.
func (c *cluster) stopEvictors() {
	for _, cancel := range c.cancel {
		cancel()
	}
	c.wg.Wait()
}

// shutdown stops the running member name as a planned stop does; it is no longer in c.nodes.
func (c *cluster) shutdown(name string) error {
	err := c.stopNode(name)
	delete(c.nodes, name)
	return err
}

// leader waits for a leader that serves linearizable reads.
func (c *cluster) leader() clusterMember {
	c.t.Helper()
	var l clusterMember
	waitFor(c.t, "a ready leader", 10*time.Second, func() bool {
		for _, n := range c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := n.Node().ReadBarrier(ctx)
			cancel()
			if n.Node().IsLeader() && err == nil {
				l = n
				return true
			}
		}
		return false
	})
	return l
}

func (c *cluster) propose(cmd *metadv1.Command) store.Result {
	c.t.Helper()
	if cmd.GetOpenSession() == nil {
		h := c.begin()
		defer c.end(h)
		cmd.Session = h
	}
	for attempt := 0; ; attempt++ {
		l := c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := l.Node().Propose(ctx, cmd)
		cancel()
		if err == nil {
			return r
		}
		if attempt > 20 || !(errors.Is(err, ha.ErrNotLeader) || errors.Is(err, ha.ErrUnknown)) {
			c.t.Fatalf("propose: %v", err)
		}
	}
}

// begin takes the next number of the test's session, opening it with the first command.
func (c *cluster) begin() *metadv1.SessionHeader {
	c.t.Helper()
	c.sessMu.Lock()
	defer c.sessMu.Unlock()
	if c.sess == 0 {
		r := c.propose(&metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{TtlMs: 3_600_000, Window: 4096}}})
		if r.Reason != store.OK {
			c.t.Fatalf("open session: %s %s", r.Reason, r.Message)
		}
		c.sess, c.nextSeq, c.inflight = r.Session, 1, map[uint64]struct{}{}
	}
	seq := c.nextSeq
	c.nextSeq++
	c.inflight[seq] = struct{}{}
	floor := seq
	for s := range c.inflight {
		floor = min(floor, s)
	}
	return &metadv1.SessionHeader{SessionId: c.sess, Seq: seq, FirstUnackedSeq: floor}
}

func (c *cluster) end(h *metadv1.SessionHeader) {
	c.sessMu.Lock()
	delete(c.inflight, h.GetSeq())
	c.sessMu.Unlock()
}

// fill mounts a MEMORY segment of 100 slots and writes groups x size objects (group "" = singletons)
// through the log, concurrently so the proposer coalesces them.
func (c *cluster) fill(groups, size int) {
	c.t.Helper()
	c.propose(&metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: memSeg[:], Name: "s", Base: 1 << 32, Size: slots * slot, Endpoint: "e",
		Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: client[:]}}}})
	var wg sync.WaitGroup
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range size {
				k := []byte(fmt.Sprintf("g%02d-m%d", g, m))
				r := c.propose(&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: client[:], Key: k,
					Group: []byte(fmt.Sprintf("g%02d", g)), Size: slot, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}})
				if r.Reason != store.OK {
					c.t.Errorf("PutStart %s: %s %s", k, r.Reason, r.Message)
					return
				}
				if r := c.propose(&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: client[:], Key: k}}}); r.Reason != store.OK {
					c.t.Errorf("PutEnd %s: %s %s", k, r.Reason, r.Message)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.t.Failed() {
		c.t.FailNow()
	}
}

func usedSlots(s *store.Store) uint64 { return s.Segments().Used(alloc.TierMemory) / slot }

// digest is a node's replicated state as snapshot bytes (index, term and members left out).
func digest(s *store.Store) []byte {
	var buf bytes.Buffer
	if _, err := fsm.WriteCapture(&buf, s.Capture(), nil, 0, 0, 0); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// converged waits until the live nodes have applied the same index and hold the same state, then
// checks each: invariants, no unlink mark, every group whole (size members) or gone.
func (c *cluster) converged(groups, size int) {
	c.t.Helper()
	waitFor(c.t, "the nodes to converge", 10*time.Second, func() bool {
		var first []byte
		var idx uint64
		i := 0
		for _, n := range c.nodes {
			a, _ := n.FSM().Applied()
			d := digest(n.Store())
			if i == 0 {
				first, idx = d, a
			} else if a != idx || !bytes.Equal(d, first) {
				return false
			}
			i++
		}
		return true
	})
	for name, n := range c.nodes {
		s := n.Store()
		if err := s.CheckInvariants(); err != nil {
			c.t.Fatalf("%s: %v", name, err)
		}
		if m := marks(s); m != 0 {
			c.t.Fatalf("%s: %d unlink marks left", name, m)
		}
		for g := range groups {
			ks, err := s.ListGroup("", fmt.Sprintf("g%02d", g))
			if err == nil && len(ks) != size {
				c.t.Fatalf("%s: group g%02d half evicted: %v", name, g, ks)
			}
		}
	}
}

// TestReplicatedEviction: memory filled over the watermark is brought under it by the leader's
// evictor, and every node applies the same evictions: equal state, no marks, groups whole.
func TestReplicatedEviction(t *testing.T) {
	c := newCluster(t, DefaultConfig())
	c.fill(19, 5) // 95 slots: target 10, two groups
	c.start()
	waitFor(t, "the round to free its target", 10*time.Second, func() bool { return usedSlots(c.leader().Store()) <= 85 })
	c.stopEvictors()
	c.converged(19, 5)
	if got := usedSlots(c.leader().Store()); got != 85 {
		t.Fatalf("%d slots used, want 85 (exactly two groups evicted)", got)
	}
}

// TestLeaderChangeMidEviction: the leader is shut down while its evictor is between proposals (one
// group per proposal); the new leader finishes the work after its lease floor, and the survivors
// converge with no marks and no half-evicted group.
func TestLeaderChangeMidEviction(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HighWatermark, cfg.BatchSize = 0.5, 5 // target 50 slots: ten proposals of one group each
	c := newCluster(t, cfg)
	c.fill(19, 5)
	old := c.leader()
	var oldName string
	for name, n := range c.nodes {
		if n == old {
			oldName = name
		}
	}
	// Hold the old leader's evictor just before its third proposal until the node is gone.
	gate := make(chan struct{})
	proposals := 0
	c.evs[oldName].beforePropose = func([]store.ObjectToken) {
		if proposals++; proposals == 3 {
			<-gate
		}
	}
	c.start()
	waitFor(t, "two evictions by the old leader", 10*time.Second, func() bool { return usedSlots(old.Store()) <= 85 })
	if err := c.shutdown(oldName); err != nil {
		t.Logf("shutdown: %v", err)
	}
	close(gate)
	nl := c.leader()
	t.Logf("leader %s shut down at %d slots used; new leader %s", oldName, usedSlots(old.Store()), nl.Node().Status().Name)
	waitFor(t, "the new leader to finish", 10*time.Second, func() bool { return usedSlots(c.leader().Store()) <= 45 })
	c.stopEvictors()
	if m := marks(old.Store()); m != 0 {
		t.Fatalf("the old leader kept %d marks after its proposal failed", m)
	}
	c.converged(19, 5)
	if got := usedSlots(c.leader().Store()); got != 45 {
		t.Fatalf("%d slots used, want 45 (ten groups evicted in all)", got)
	}
}

// putOne writes one slot-sized singleton through the log (PutStart, then PutEnd).
func (c *cluster) putOne(k string) {
	c.t.Helper()
	if r := c.propose(&metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: client[:], Key: []byte(k),
		Size: slot, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}); r.Reason != store.OK {
		c.t.Fatalf("PutStart %s: %s %s", k, r.Reason, r.Message)
	}
	if r := c.propose(&metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: client[:], Key: []byte(k)}}}); r.Reason != store.OK {
		c.t.Fatalf("PutEnd %s: %s %s", k, r.Reason, r.Message)
	}
}

// TestFreshWritesSurviveEviction: objects read a while ago (their leases expired) are evicted
// before objects written after their leases ran out and never read: a write ranks at the time the
// leader stamped into the log, on every node alike.
func TestFreshWritesSurviveEviction(t *testing.T) {
	c := newCluster(t, DefaultConfig())
	c.propose(&metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: memSeg[:], Name: "s", Base: 1 << 32, Size: slots * slot, Endpoint: "e",
		Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: client[:]}}}})
	var read, fresh []string
	for i := range 50 {
		k := fmt.Sprintf("read-%02d", i)
		c.putOne(k)
		read = append(read, k)
	}
	l := c.leader()
	for _, k := range read { // read in write order: leases in the same order as the object ids
		if _, err := l.Store().Get(time.Now().UnixNano(), "", k); err != nil {
			t.Fatalf("Get %s: %v", k, err)
		}
	}
	var leaseEnd int64
	l.Store().VisitHandles(0, func(hs []store.ObjectHandle) bool {
		for _, h := range hs {
			leaseEnd = max(leaseEnd, h.LeaseDeadline())
		}
		return true
	})
	waitFor(t, "the read leases to expire", 5*time.Second, func() bool { return time.Now().UnixNano() > leaseEnd })
	for i := range 45 {
		k := fmt.Sprintf("fresh-%02d", i)
		c.putOne(k)
		fresh = append(fresh, k)
	}
	c.start() // 95 slots used: target 10
	waitFor(t, "the round to free its target", 10*time.Second, func() bool { return usedSlots(c.leader().Store()) <= 85 })
	c.stopEvictors()
	c.converged(0, 0)
	for name, n := range c.nodes {
		var gone []string
		for _, k := range append(slices.Clone(read), fresh...) {
			if _, err := n.Store().Peek("", k); store.ReasonOf(err) == store.ObjectNotFound {
				gone = append(gone, k)
			}
		}
		if want := read[:10]; !slices.Equal(gone, want) {
			t.Fatalf("%s: evicted %v, want the 10 read longest ago %v (no fresh write)", name, gone, want)
		}
	}
}
