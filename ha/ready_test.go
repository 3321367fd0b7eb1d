package ha_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"metad/fsm"
	"metad/ha"
	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
	"metad/server"
	"metad/service"
	"metad/store"
)

// Nodes of a hatest cluster (in memory: raft's InmemTransport, in-memory logs, fast Raft timeouts)
// with the service and the gRPC server in front of each, on a loopback port: the servers forward
// to the leader by its client address. Tests poll observable conditions with deadlines; they never
// sleep to synchronise.

type srvNode struct {
	name string
	node *ha.Node
	f    *fsm.FSM
	srv  *server.Server
	g    *grpc.Server
	cc   *grpc.ClientConn
	meta metadv1.MetadataClient
}

type srvCluster struct {
	t     *testing.T
	raft  *hatest.Cluster
	nodes map[string]*srvNode // the running ones; written by the starts, on the test's goroutine
	gates map[string]func()   // the apply gate of a member's next start (none: apply runs)
	leads map[string]*service.Leadership
	lis   map[string]net.Listener
}

func newSrvCluster(t *testing.T, n int) *srvCluster {
	t.Helper()
	c := &srvCluster{t: t, nodes: map[string]*srvNode{}, gates: map[string]func(){},
		leads: map[string]*service.Leadership{}, lis: map[string]net.Listener{}}
	c.raft = hatest.New(t, n, hatest.Options{Config: c.configure, Start: c.startNode})
	t.Cleanup(func() { // before hatest stops the nodes
		for name := range c.nodes {
			c.stopServer(name)
		}
	})
	return c
}

// configure gives member cfg.Name a gRPC listener on a fresh loopback port, its client address,
// and the leadership hook a daemon registers.
func (c *srvCluster) configure(cfg *ha.Config, f *fsm.FSM) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.ClientAddr = lis.Addr().String()
	lead := service.NewLeadership(f.Store, nil)
	cfg.OnLeadership = lead.Changed
	c.lis[cfg.Name], c.leads[cfg.Name] = lis, lead
}

// startNode starts the node (with its apply gate, if one is set) and the service and gRPC server
// in front of it.
func (c *srvCluster) startNode(cfg ha.Config, f *fsm.FSM) (*ha.Node, error) {
	lis := c.lis[cfg.Name]
	node, err := ha.NewNodeWithApplyGate(cfg, f, nil, c.gates[cfg.Name])
	if err != nil {
		_ = lis.Close()
		return nil, err
	}
	svc, err := service.New(node, f, c.leads[cfg.Name], service.DefaultConfig(), nil, nil)
	if err != nil {
		_ = lis.Close()
		_ = node.Kill()
		return nil, err
	}
	srv, err := server.New(svc, node, server.DefaultConfig(), nil, nil)
	if err != nil {
		_ = lis.Close()
		_ = node.Kill()
		return nil, err
	}
	g := grpc.NewServer(append(srv.ServerOptions(), grpc.ChainUnaryInterceptor(srv.UnaryInterceptor()))...)
	srv.Register(g)
	go func() { _ = g.Serve(lis) }()
	cc, err := grpc.NewClient(cfg.ClientAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		g.Stop()
		srv.Close()
		_ = node.Kill()
		return nil, err
	}
	c.nodes[cfg.Name] = &srvNode{name: cfg.Name, node: node, f: f, srv: srv, g: g, cc: cc, meta: metadv1.NewMetadataClient(cc)}
	return node, nil
}

// restart starts the stopped node name again over its log and snapshots, with a gRPC server on a
// fresh loopback port; gate, if not nil, runs before each apply.
func (c *srvCluster) restart(name string, gate func()) *srvNode {
	c.t.Helper()
	c.gates[name] = gate
	c.raft.Restart(name)
	return c.nodes[name]
}

func (c *srvCluster) stopServer(name string) {
	sn := c.nodes[name]
	_ = sn.cc.Close()
	sn.g.Stop()
	sn.srv.Close()
	delete(c.nodes, name)
}

// stop stops node name abruptly, as kill -9 would (no leadership transfer).
func (c *srvCluster) stop(name string) {
	c.stopServer(name)
	c.raft.Stop(name)
}

func (c *srvCluster) waitFor(what string, d time.Duration, cond func() bool) {
	c.t.Helper()
	c.raft.WaitFor(what, d, cond)
}

// leader waits for a leader that serves linearizable reads.
func (c *srvCluster) leader() *srvNode {
	c.t.Helper()
	var l *srvNode
	c.waitFor("a ready leader", 10*time.Second, func() bool {
		for _, sn := range c.nodes {
			if !sn.node.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := sn.node.ReadBarrier(ctx)
			cancel()
			if err == nil {
				l = sn
				return true
			}
		}
		return false
	})
	return l
}

// sessionWriter returns a function that runs one write on the node that leads, in a session
// opened now, retrying it (with the same sequence number) while the answer is UNAVAILABLE: a
// leadership change, or a commit whose outcome was lost. Anything else fails the test.
func (c *srvCluster) sessionWriter(ctx context.Context) func(what string, fn func(metadv1.MetadataClient, *metadv1.SessionHeader) error) {
	c.t.Helper()
	var id, seq uint64
	open := func() error {
		r, err := c.leader().meta.OpenSession(ctx, &metadv1.OpenSessionRequest{})
		id = r.GetSessionId()
		return err
	}
	retry := func(what string, fn func() error) {
		c.t.Helper()
		for {
			err := fn()
			if err == nil {
				return
			}
			if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
				c.t.Fatalf("%s: %v", what, err)
			}
		}
	}
	retry("OpenSession", open)
	return func(what string, fn func(metadv1.MetadataClient, *metadv1.SessionHeader) error) {
		c.t.Helper()
		seq++
		h := &metadv1.SessionHeader{SessionId: id, Seq: seq, FirstUnackedSeq: seq}
		retry(what, func() error { return fn(c.leader().meta, h) })
	}
}

var (
	readyClient  = bytes.Repeat([]byte{0xc1}, 16)
	readySegment = bytes.Repeat([]byte{0x5e}, 16)
)

func readyKey(i int) []byte { return []byte(fmt.Sprintf("k%02d", i)) }

// A follower killed and restarted from its log, then made leader at once, takes office before
// it has applied the log it holds. Forced Removes of acknowledged objects and linearizable reads
// that reach it then wait until it has applied its term-start barrier: none is answered from the
// state it has not caught up with (OBJECT_NOT_FOUND for an acknowledged object), and none bounces
// (NOT_LEADER naming the node itself). The restarted node's apply is held back by a gate until every
// request waits, so the window in which the new leader has not caught up stays open as long as the
// test needs.
func TestNewLeaderAnswersOnlyOnceCaughtUp(t *testing.T) {
	c := newSrvCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The setup writes go to whichever node leads, in a session: one retried after a leadership
	// change under this machine's load is applied once.
	write := c.sessionWriter(ctx)
	write("MountSegment", func(m metadv1.MetadataClient, h *metadv1.SessionHeader) error {
		_, err := m.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: readyClient, Segment: &metadv1.SegmentDesc{
			Id: readySegment, Name: "s", Base: 1 << 32, Size: 64 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY}, Session: h})
		return err
	})
	const keys = 40
	for i := range keys {
		write("PutStart", func(m metadv1.MetadataClient, h *metadv1.SessionHeader) error {
			_, err := m.PutStart(ctx, &metadv1.PutStartRequest{ClientId: readyClient, Key: readyKey(i), Size: 100, Session: h})
			return err
		})
		write("PutEnd", func(m metadv1.MetadataClient, h *metadv1.SessionHeader) error {
			_, err := m.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: readyClient, Key: readyKey(i), Session: h})
			return err
		})
	}
	l := c.leader()
	var f *srvNode
	for _, sn := range c.nodes {
		if sn != l {
			f = sn
			break
		}
	}
	last := l.node.Status().AppliedIndex
	c.waitFor(f.name+" to hold the whole log", 10*time.Second, func() bool { return f.node.Status().AppliedIndex >= last })

	// Kill it and restart it from its log and snapshots with apply held: it holds the log but has
	// applied none of it.
	name := f.name
	c.stop(name)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	f = c.restart(name, func() { <-release })
	t.Cleanup(open) // before the nodes stop: a node stops only once its apply goroutine returns
	c.waitFor(name+" to learn the commit index", 10*time.Second, func() bool { return f.node.Status().CommitIndex >= last })
	for attempt := 0; !f.node.IsLeader(); attempt++ {
		if attempt == 20 {
			t.Fatalf("could not hand leadership to %s", name)
		}
		if _, err := l.node.TransferLeader(ctx, name); err != nil {
			t.Logf("transfer to %s: %v", name, err)
		}
		c.waitFor("the transfer to settle", 5*time.Second, func() bool { n, _ := l.node.Leader(); return n != "" })
	}
	if got := f.f.Store().Tenants().Lookup(store.DefaultTenant).Directory().Objects(); got != 0 {
		t.Fatalf("the new leader applied %d objects while its apply was held", got)
	}

	// Forced Removes of acknowledged objects, and linearizable Gets of others, all at once.
	const removes, gets = 10, 5
	type answer struct {
		what string
		err  error
	}
	answers := make(chan answer, removes+gets)
	for i := range removes {
		go func() {
			_, err := f.meta.Remove(ctx, &metadv1.RemoveRequest{Key: readyKey(i), Force: true})
			answers <- answer{fmt.Sprintf("Remove %s", readyKey(i)), err}
		}()
	}
	for i := range gets {
		go func() {
			_, err := f.meta.Get(ctx, &metadv1.GetRequest{Key: readyKey(20 + i)})
			answers <- answer{fmt.Sprintf("Get %s", readyKey(20+i)), err}
		}()
	}
	var early []answer
	c.waitFor("every request to wait for the new leader, or one to be answered", 10*time.Second, func() bool {
		select {
		case a := <-answers:
			early = append(early, a)
			return true
		default:
			return f.node.ReadyWaiters() == removes+gets
		}
	})
	open()
	got := early
	for len(got) < removes+gets {
		got = append(got, <-answers)
	}
	for _, a := range got {
		if a.err != nil {
			st := status.Convert(a.err)
			t.Errorf("%s on the new leader: %s %s (%d answered before it caught up)", a.what, st.Code(), st.Message(), len(early))
		}
	}
	for i := range keys {
		_, err := f.meta.Get(ctx, &metadv1.GetRequest{Key: readyKey(i)})
		want := metadv1.Reason_REASON_UNSPECIFIED
		if i < removes {
			want = metadv1.Reason_REASON_OBJECT_NOT_FOUND
		}
		if got := reasonOf(err); got != want {
			t.Errorf("Get %s after the removes: %v, want reason %s", readyKey(i), err, want)
		}
	}
}

// reasonOf is the reason in err's ErrorDetail (REASON_UNSPECIFIED for nil).
func reasonOf(err error) metadv1.Reason {
	for _, d := range status.Convert(err).Details() {
		if ed, ok := d.(*metadv1.ErrorDetail); ok {
			return ed.GetReason()
		}
	}
	return metadv1.Reason_REASON_UNSPECIFIED
}
