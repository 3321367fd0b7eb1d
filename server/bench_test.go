package server

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/tlsconf"
)

// authorizeAll is a Service that authorizes every call and serves none.
type authorizeAll struct{ Service }

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
			s := &Server{svc: authorizeAll{}, cfg: Config{Authenticate: tc.auth}, m: m}
			ca := &connAuth{}
			ca.once.Do(func() { ca.id = tlsconf.Identity{Kind: tlsconf.Principal, Name: "worker"} })
			ctx := metadata.NewIncomingContext(context.WithValue(context.Background(), connAuthKey{}, ca), metadata.Pairs(
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
