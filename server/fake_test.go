package server

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
	"metad/store/alloc"
)

// fakeBackend is safe for concurrent use. It is a Backend over a real fsm.FSM with no Raft: Propose encodes the command in an
// envelope and applies it as the next log entry. It is the leader unless told otherwise.
type fakeBackend struct {
	f   *fsm.FSM
	now func() time.Time

	mu    sync.Mutex // serializes apply, as Raft's single apply goroutine does; guards index
	index uint64

	proposals  atomic.Int64
	loseAnswer atomic.Bool // the next proposal applies, and its answer is lost
	barriers   atomic.Int64
	leader     atomic.Bool
	failNext   atomic.Pointer[error] // the next Propose fails with this error
	// beforeApply, when set, runs once just before the next proposal applies (with apply held), as
	// a snapshot restore committed between a leader's check and its command's commit would.
	beforeApply atomic.Pointer[func()]
	// deposed makes a leader that has lost its leadership without noticing: it still believes it
	// leads (IsLeader, LeaderReady), but confirming leadership and proposing fail with NOT_LEADER.
	deposed atomic.Bool

	term         atomic.Uint64                                   // the current term (Status)
	onLeadership atomic.Pointer[func(leading bool, term uint64)] // the leadership hook; nil until the harness sets it

	// silent makes a follower report that it has not heard from its leader recently.
	silent atomic.Bool
	// lease makes the leader hold the leader lease while it leads (not deposed): PutStarts are
	// answered from arenas when the harness runs them (arenaHarness).
	lease atomic.Bool
	// staleAuth, when not 0, is the auth revision every proposal carries, as if the leader had
	// authorized it against that revision before auth commands committed.
	staleAuth atomic.Uint64

	// members, when set, names the servers of the configuration (Members); nil: "self" alone.
	members atomic.Pointer[[]string]

	// olderMember, when not 0, is the feature level of a member of an older binary (ClusterLevel),
	// and Propose refuses a command that needs more, as ha.Node does.
	olderMember atomic.Uint32

	// lastProposed is the last command given to Propose, whatever became of it.
	lastProposed atomic.Pointer[metadv1.Command]

	leaderMu   sync.Mutex // guards leaderName and leaderAddr
	leaderName string
	leaderAddr string
}

var _ service.Backend = (*fakeBackend)(nil)

func newFakeBackend(t testing.TB, now func() time.Time) *fakeBackend {
	t.Helper()
	f, err := fsm.New(store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if now == nil {
		now = time.Now
	}
	b := &fakeBackend{f: f, now: now}
	b.leader.Store(true)
	b.term.Store(1)
	return b
}

// setLeader makes the backend a follower that knows the leader (name, addr), or the leader.
// A change of leadership runs the leadership hook, as ha.Node does; gaining it starts a new term.
func (b *fakeBackend) setLeader(isLeader bool, name, addr string) {
	b.leaderMu.Lock()
	b.leaderName, b.leaderAddr = name, addr
	b.leaderMu.Unlock()
	if b.leader.Swap(isLeader) == isLeader {
		return
	}
	term := b.term.Load()
	if isLeader {
		term = b.term.Add(1)
	}
	if fn := b.onLeadership.Load(); fn != nil {
		(*fn)(isLeader, term)
	}
}

func (b *fakeBackend) failNextPropose(err error) { b.failNext.Store(&err) }

func (b *fakeBackend) notLeader() error {
	name, addr := b.Leader()
	return &ha.NotLeaderError{LeaderName: name, LeaderAddr: addr}
}

func (b *fakeBackend) Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	b.proposals.Add(1)
	b.lastProposed.Store(cmd)
	if errp := b.failNext.Swap(nil); errp != nil {
		return store.Result{}, *errp
	}
	if !b.IsLeader() || b.deposed.Load() {
		return store.Result{}, b.notLeader()
	}
	if err := ctx.Err(); err != nil {
		return store.Result{}, err
	}
	if have, member := b.ClusterLevel(); fsm.LevelOf(cmd) > have {
		return store.Result{}, &ha.FeatureLevelError{Command: cmd, Need: fsm.LevelOf(cmd), Have: have, Member: member}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn := b.beforeApply.Swap(nil); fn != nil {
		(*fn)()
	}
	b.index++
	if rev := b.staleAuth.Load(); rev != 0 {
		cmd = proto.CloneOf(cmd)
		cmd.AuthRevision = rev
	}
	data, err := fsm.EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: b.now().UnixNano(), Seed: b.index,
		Commands: []*metadv1.Command{cmd}})
	if err != nil {
		return store.Result{}, err
	}
	out := b.f.Apply(&raft.Log{Index: b.index, Term: 1, Type: raft.LogCommand, Data: data})
	if b.loseAnswer.Swap(false) {
		// Applied, and the answer lost on its way back (a leader killed after the commit).
		return store.Result{}, fmt.Errorf("%w: answer lost after apply (test fault)", ha.ErrUnknown)
	}
	return out.(*fsm.EntryResult).Results[0], nil
}

func (b *fakeBackend) ReadBarrier(ctx context.Context) error {
	b.barriers.Add(1)
	if !b.IsLeader() || b.deposed.Load() {
		return b.notLeader()
	}
	return ctx.Err()
}

func (b *fakeBackend) LeaderReady(ctx context.Context) error {
	if !b.IsLeader() {
		return b.notLeader()
	}
	return ctx.Err()
}

// appliedIndex is the index of the last log entry the backend's FSM applied.
func (b *fakeBackend) appliedIndex() uint64 {
	idx, _ := b.f.Applied()
	return idx
}

func (b *fakeBackend) Store() *store.Store { return b.f.Store() }
func (b *fakeBackend) IsLeader() bool      { return b.leader.Load() }

func (b *fakeBackend) Leader() (string, string) {
	if b.IsLeader() {
		return "self", "self-addr"
	}
	b.leaderMu.Lock()
	defer b.leaderMu.Unlock()
	return b.leaderName, b.leaderAddr
}

func (b *fakeBackend) LeaseTerm() uint64 {
	if b.lease.Load() && b.IsLeader() && !b.deposed.Load() {
		return b.term.Load()
	}
	return 0
}

func (b *fakeBackend) LeaseDuration() time.Duration { return 200 * time.Millisecond }

func (b *fakeBackend) LeaderReachable() bool { return b.IsLeader() || !b.silent.Load() }

func (b *fakeBackend) Status() ha.Status {
	role := ha.RoleFollower
	if b.IsLeader() {
		role = ha.RoleLeader
	}
	name, addr := b.Leader()
	b.mu.Lock()
	defer b.mu.Unlock()
	return ha.Status{Name: "self", ClientAddr: "self-addr", Role: role, Term: b.term.Load(), AppliedIndex: b.index,
		CommitIndex: b.index, LastLogIndex: b.index, LeaderName: name, LeaderAddr: addr}
}

func (b *fakeBackend) Members() ([]ha.Member, error) {
	names := b.members.Load()
	if names == nil {
		return []ha.Member{{Name: "self", PeerAddr: "self-peer", ClientAddr: "self-addr", Voter: true, Leader: b.IsLeader()}}, nil
	}
	var ms []ha.Member
	for _, n := range *names {
		ms = append(ms, ha.Member{Name: n, PeerAddr: n + "-peer", ClientAddr: n + "-addr", Voter: true})
	}
	return ms, nil
}

func (b *fakeBackend) InConfiguration(name string) bool {
	ms, _ := b.Members()
	return slices.ContainsFunc(ms, func(m ha.Member) bool { return m.Name == name })
}

// setMembers makes names the servers of the fake's configuration (Members, InConfiguration).
func (b *fakeBackend) setMembers(names ...string) { b.members.Store(&names) }

func (b *fakeBackend) AddMember(context.Context, string, string) error { return nil }

func (b *fakeBackend) RemoveMember(_ context.Context, name string) error { return knownMember(name) }

func (b *fakeBackend) TransferLeader(_ context.Context, to string) (string, error) {
	if to == "" {
		return "self", nil
	}
	if err := knownMember(to); err != nil {
		return "", err
	}
	return to, nil
}

// knownMember is MEMBER_NOT_FOUND for any name but "self", the fake's one member, as ha.Node
// answers for a name that is not in its configuration.
func knownMember(name string) error {
	if name != "self" {
		return &ha.MemberNotFoundError{Name: name}
	}
	return nil
}

// RecordMember records nothing: the fake's only member, "self", is always recorded.
func (b *fakeBackend) RecordMember(_ context.Context, m ha.MemberRecord) error {
	if !b.IsLeader() {
		return b.notLeader()
	}
	if name := m.Name; name != "self" {
		return &ha.MemberNotFoundError{Name: name}
	}
	return nil
}

func (b *fakeBackend) SelfRecorded() bool { return true }

func (b *fakeBackend) Self() ha.MemberRecord {
	return ha.MemberRecord{Name: "self", PeerAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2", Level: metadv1.FeatureLevel}
}

// ClusterLevel is this binary's level unless the test set olderMember.
func (b *fakeBackend) ClusterLevel() (uint32, string) {
	if l := b.olderMember.Load(); l != 0 {
		return l, "older"
	}
	return metadv1.FeatureLevel, "self"
}

// fakeClock is a settable clock for tests.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time           { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration)  { c.ns.Add(int64(d)) }
func (c *fakeClock) config(cfg config) config { cfg.Now = c.Now; return cfg }

// harness is one Server on a real gRPC server on a loopback port, with clients.
type harness struct {
	b     *fakeBackend
	srv   *Server
	reg   *prometheus.Registry
	addr  string
	meta  metadv1.MetadataClient
	admin metadv1.AdminClient
	cc    *grpc.ClientConn
}

// config is a harness's settings: the service's, and the adapter's in Server.
type config struct {
	service.Config
	Server Config
}

// testConfig is the defaults with fast sweeps and a client ttl long enough that tests which move
// the fake clock past leases do not expire their clients.
func testConfig() config {
	cfg := config{Config: service.DefaultConfig(), Server: DefaultConfig()}
	cfg.SweepInterval, cfg.Server.SweepInterval = 5*time.Millisecond, 5*time.Millisecond
	cfg.ClientTTL = time.Hour
	// The fake backend grants no leader lease: every PutStart goes through the log, and no keeper
	// round adds read barriers to the ones the tests count. Arenas run on real nodes (cmd/metad,
	// test/e2e).
	cfg.NoArenas = true
	return cfg
}

// start serves a Server over b with cfg; the Run loop runs until the test ends.
func start(t testing.TB, b *fakeBackend, cfg config) *harness {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lead := service.NewLeadership(b.Store, cfg.Now)
	changed := lead.Changed
	b.onLeadership.Store(&changed)
	srv, reg, cc := serve(t, b, b.f, lead, cfg, lis)
	return &harness{b: b, srv: srv, reg: reg, addr: lis.Addr().String(), meta: metadv1.NewMetadataClient(cc),
		admin: metadv1.NewAdminClient(cc), cc: cc}
}

// serve runs a Service over b, state and the leadership hook lead, and a Server over it on lis (gRPC server, both Run loops,
// metrics on a fresh registry, wired as cmd/metad wires them) and returns the Server with a client
// connection to it; everything stops when the test ends.
func serve(t testing.TB, b service.Backend, state service.State, lead *service.Leadership, cfg config, lis net.Listener) (*Server, *prometheus.Registry, *grpc.ClientConn) {
	t.Helper()
	reg := prometheus.NewRegistry()
	svc, err := service.New(b, state, lead, cfg.Config, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(svc, b, cfg.Server, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.OnLeadership(srv.SetLeader)
	g := grpc.NewServer(append(ServerOptions(), grpc.ChainUnaryInterceptor(srv.UnaryInterceptor()))...)
	srv.Register(g)
	go func() { _ = g.Serve(lis) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { svc.Run(ctx); done <- struct{}{} }()
	go func() { srv.Run(ctx); done <- struct{}{} }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		_ = cc.Close()
		g.Stop()
		srv.Close()
	})
	return srv, reg, cc
}

// tctx returns a context that ends with the test or after 10 s.
func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var (
	clientA = alloc.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	clientB = alloc.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	segA    = alloc.MustParseID("5a5a5a5a-0000-4000-8000-00000000005a")
	segB    = alloc.MustParseID("5b5b5b5b-0000-4000-8000-00000000005b")
)

func idb(id alloc.ID) []byte { return id[:] }

// mount mounts a 1 MiB MEMORY segment for client.
func (h *harness) mount(t testing.TB, client, seg alloc.ID) {
	t.Helper()
	_, err := h.meta.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(client), Segment: &metadv1.SegmentDesc{
		Id: idb(seg), Name: "seg", Base: 1 << 20, Size: 1 << 20, Endpoint: "ep-" + seg.String()[:4], Tier: metadv1.Tier_TIER_MEMORY}})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
}

// put writes a complete object of size bytes.
func (h *harness) put(t testing.TB, tenant, key string, size uint64) {
	t.Helper()
	ctx := tctx(t)
	if _, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size}); err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key)}); err != nil {
		t.Fatalf("PutEnd %q: %v", key, err)
	}
}
