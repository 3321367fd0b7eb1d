package server

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Every metric of the package is declared in this file and registered on the Registerer given to
// New. Labels are bounded: method names and gRPC codes. The store's census and client expiry are
// package service's metrics.

// metrics is safe for concurrent use (prometheus collectors are).
type metrics struct {
	requests  *prometheus.CounterVec   // by method and code
	latency   *prometheus.HistogramVec // by method
	forwarded *prometheus.CounterVec   // by method
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_server_requests_total",
			Help: "gRPC requests served by this node, by method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "metad_server_request_duration_seconds",
			Help:    "Time to serve a gRPC request on this node (including forwarding to the leader), by method.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50 µs .. ~6.5 s
		}, []string{"method"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_server_forwarded_requests_total",
			Help: "Requests this node forwarded to the leader, by method.",
		}, []string{"method"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.forwarded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// methodLabel shortens a gRPC full method name: "/metad.v1.Metadata/Get" -> "Metadata/Get".
func methodLabel(full string) string {
	full = strings.TrimPrefix(full, "/")
	return strings.TrimPrefix(full, "metad.v1.")
}

// UnaryInterceptor records the request metrics; cmd/metad installs it with
// grpc.ChainUnaryInterceptor.
func (s *Server) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		method := methodLabel(info.FullMethod)
		s.m.requests.WithLabelValues(method, status.Code(err).String()).Inc()
		s.m.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
		return resp, err
	}
}
