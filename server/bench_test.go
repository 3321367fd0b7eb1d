package server

import (
	"context"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/tlsconf"
)

// authorizeAll authorizes every call.
type authorizeAll struct{ authorizer }

func (authorizeAll) Authorize(ctx context.Context, _ service.Caller, _ string, _ proto.Message) (context.Context, error) {
	return ctx, nil
}

// BenchmarkUnaryInterceptor is the adapter's own work around every unary call (metrics, and with
// authentication the per-call lookup of a certificate principal's identity) with a handler that
// does nothing: plaintext, and a connection whose client certificate was already verified.
func BenchmarkUnaryInterceptor(b *testing.B) {
	for _, tc := range []struct {
		name string
		auth bool
	}{{"plaintext", false}, {"certificate", true}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := newMetrics(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			s := &Server{authz: authorizeAll{}, cfg: Config{Authenticate: tc.auth}, m: m}
			ca := &connAuth{}
			ca.once.Do(func() { ca.id = tlsconf.Identity{Kind: tlsconf.Principal, Name: "worker"} })
			ctx := metadata.NewIncomingContext(peer.NewContext(context.Background(), &peer.Peer{AuthInfo: connInfo{auth: ca}}), metadata.Pairs(
				":authority", "127.0.0.1:6001", "content-type", "application/grpc", "user-agent", "grpc-go/1.85.0"))
			icp := s.UnaryInterceptor()
			info := &grpc.UnaryServerInfo{FullMethod: metadv1.Metadata_Get_FullMethodName}
			handler := func(_ context.Context, req any) (any, error) { return req, nil }
			req := &metadv1.GetRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := icp(ctx, req, info, handler); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCall is a whole unary call on a real gRPC server over loopback TCP, client included,
// from 8 connections with 64 calls in flight: Get of one key (the fake backend serves it without
// Raft), so the figure is the adapter's and gRPC's share of a call plus the service's read path.
// It runs in plaintext, and with TLS and authentication as cmd/metad serves it (TLSCredentials,
// AuthOptions) for a caller with a client certificate. cpu-ns/op is the process's CPU time per
// call (client and server), the figure to compare on a shared machine.
func BenchmarkCall(b *testing.B) {
	b.Run("plaintext", func(b *testing.B) {
		fb := newFakeBackend(b, nil)
		h := start(b, fb, testConfig())
		h.mount(b, clientA, segA)
		h.put(b, "", "k", 64)
		benchGets(b, func() *grpc.ClientConn {
			cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cc.Close() })
			return cc
		})
	})
	b.Run("tls-certificate", func(b *testing.B) {
		p := newPKI(b)
		n := startAuth(b, p, newFakeBackend(b, nil), "n1")
		root := p.client(b, auth.RootPrincipal)
		c := n.clients(b, root)
		ctx := context.Background()
		if _, err := c.meta.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k"), Size: 64}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k")}); err != nil {
			b.Fatal(err)
		}
		benchGets(b, func() *grpc.ClientConn { return n.conn(b, root) })
	})
}

// benchGets runs Gets of key "k" of the default tenant from 64 goroutines over 8 connections
// that dial opens, and reports the process's CPU time per call.
func benchGets(b *testing.B, dial func() *grpc.ClientConn) {
	conns := make([]metadv1.MetadataClient, 8)
	for i := range conns {
		conns[i] = metadv1.NewMetadataClient(dial())
	}
	var next atomic.Int64
	req := &metadv1.GetRequest{Key: []byte("k")}
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		c := conns[next.Add(1)%int64(len(conns))]
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Get(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used (user and system), in ns: a figure that other
// load on the machine changes far less than wall time.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
