package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// Every metric of the package is declared in this file and registered on the Registerer given to
// New. Labels are bounded: method names and gRPC codes. The store's census and client expiry are
// package service's metrics.

// metrics is safe for concurrent use (prometheus collectors are).
type metrics struct {
	requests  *prometheus.CounterVec   // by method and code
	latency   *prometheus.HistogramVec // by method
	forwarded *prometheus.CounterVec   // by method

	authFailures      *prometheus.CounterVec // calls refused by authentication or authorization, by reason
	authVerifications prometheus.Counter     // API keys verified (hashed); cached per connection otherwise
	authDeferred      prometheus.Counter     // calls forwarded for the leader to authenticate (key unknown here)
	refusalsHeld      *prometheus.CounterVec // refusals held before their answer ("held") or answered at once for want of a slot ("full")

	// methods holds the series of each method of the Metadata and Admin services, by full method
	// name; built in newMetrics and never changed after, so it is read without a lock.
	methods map[string]*methodMetrics
}

// methodMetrics is safe for concurrent use: one method's request series, looked up in the vectors
// once (on the method's first call, so that a method never called exports no series) instead of
// hashing its labels on every call.
type methodMetrics struct {
	label   string
	once    sync.Once // resolves ok and latency
	ok      prometheus.Counter
	latency prometheus.Observer
}

// resolve returns the method's series of code OK and its latency, looking them up on first use.
func (mm *methodMetrics) resolve(m *metrics) (prometheus.Counter, prometheus.Observer) {
	mm.once.Do(func() {
		mm.ok = m.requests.WithLabelValues(mm.label, codes.OK.String())
		mm.latency = m.latency.WithLabelValues(mm.label)
	})
	return mm.ok, mm.latency
}

// observe counts one call of method (a full method name) that ended with err and took d.
func (m *metrics) observe(method string, err error, d time.Duration) {
	code := status.Code(err)
	if mm := m.methods[method]; mm != nil {
		ok, latency := mm.resolve(m)
		if code == codes.OK {
			ok.Inc()
		} else {
			m.requests.WithLabelValues(mm.label, code.String()).Inc()
		}
		latency.Observe(d.Seconds())
		return
	}
	label := methodLabel(method)
	m.requests.WithLabelValues(label, code.String()).Inc()
	m.latency.WithLabelValues(label).Observe(d.Seconds())
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
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_server_auth_failures_total",
			Help: "Calls refused by authentication or authorization, by reason (no_credentials, unknown_key, expired_key, bad_key, not_member, denied).",
		}, []string{"reason"}),
		authVerifications: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_server_auth_key_verifications_total",
			Help: "API keys verified against the auth state (a SHA-256 each); a connection reuses a verified key until the auth state changes.",
		}),
		authDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_server_auth_deferred_total",
			Help: "Calls with an API key this follower's state does not hold yet, forwarded for the leader to authenticate.",
		}),
		refusalsHeld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_server_refusals_held_total",
			Help: "Calls refused as UNAUTHENTICATED or RATE_LIMITED whose answer was held (outcome held), or answered at once because the most refusals were already held (outcome full).",
		}, []string{"outcome"}),
	}
	m.methods = make(map[string]*methodMetrics)
	for _, sd := range []*grpc.ServiceDesc{&metadv1.Metadata_ServiceDesc, &metadv1.Admin_ServiceDesc} {
		for _, md := range sd.Methods {
			full := "/" + sd.ServiceName + "/" + md.MethodName
			m.methods[full] = &methodMetrics{label: methodLabel(full)}
		}
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.forwarded, m.authFailures, m.authVerifications, m.authDeferred, m.refusalsHeld} {
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

// UnaryInterceptor records the request metrics and, with Config.Authenticate, authenticates and
// authorizes each call (auth.go) and charges it to its principal's rate limits (throttle);
// cmd/metad installs it with grpc.ChainUnaryInterceptor.
func (s *Server) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		var resp any
		var err error
		ctx, note := s.withAuditNote(ctx)
		if s.cfg.Authenticate && !openMethod(info.FullMethod) {
			pm, ok := req.(proto.Message)
			if !ok {
				err = internalStatus("%s: the request is no protobuf message", info.FullMethod)
			} else if ctx, err = s.admit(ctx, info.FullMethod, pm); err == nil {
				if err = s.throttle(ctx, pm); err == nil {
					resp, err = handler(ctx, req)
				}
			}
		} else {
			resp, err = handler(ctx, req)
		}
		d := time.Since(start)
		s.m.observe(info.FullMethod, err, d)
		if note != nil && audited(info.FullMethod, err) {
			s.audit(ctx, info.FullMethod, req, err, d, note)
		}
		return resp, s.holdRefusal(ctx, err)
	}
}
