package server

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store/alloc"
)

// fakeBackend is the backend of the adapter's tests: the service's tests use the same one
// (package servicetest).
type fakeBackend = servicetest.Backend

func newFakeBackend(t testing.TB, now func() time.Time) *fakeBackend {
	return servicetest.NewBackend(t, now)
}

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
	b.SetLeadershipHook(lead.Changed)
	srv, reg, cc := serve(t, b, b.FSM(), lead, cfg, lis)
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
	g := grpc.NewServer(append(srv.ServerOptions(), grpc.ChainUnaryInterceptor(srv.UnaryInterceptor()))...)
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
func tctx(t testing.TB) context.Context { return servicetest.Context(t) }

var clientA, clientB, segA, segB = servicetest.ClientA, servicetest.ClientB, servicetest.SegA, servicetest.SegB

func idb(id alloc.ID) []byte { return id[:] }

// mount mounts a 1 MiB MEMORY segment for client.
func (h *harness) mount(t testing.TB, client, seg alloc.ID) {
	t.Helper()
	_, err := h.meta.MountSegment(tctx(t), servicetest.MountRequest(client, seg))
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

// segDesc is a valid MEMORY segment descriptor of size bytes at base (owner set by the server).
func segDesc(id alloc.ID, base, size uint64) *metadv1.SegmentDesc {
	return &metadv1.SegmentDesc{Id: idb(id), Name: "seg-" + id.String()[:8], Base: base, Size: size,
		Endpoint: "10.0.0.1:7000", Tier: metadv1.Tier_TIER_MEMORY}
}

// wantInvalid checks err is InvalidArgument with INVALID_PARAMS and a message that starts with field.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	wantErr(t, err, codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS)
	if msg := strings.TrimPrefix(status.Convert(err).Message(), "INVALID_PARAMS: "); !strings.HasPrefix(msg, field) {
		t.Fatalf("message %q does not name %q", msg, field)
	}
}
