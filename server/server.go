package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
)

// Node must be safe for concurrent use. It is what the adapter needs of the Raft node to route
// calls and keep its own member record; ha.Node (through service.Backend) implements it.
type Node interface {
	// IsLeader reports whether this node is the Raft leader.
	IsLeader() bool
	// Leader names the leader this node knows of and its client (gRPC) address; empty if none.
	Leader() (name, clientAddr string)
	// LeaderReachable reports whether the leader is this node, or has been heard from recently
	// enough that a call forwarded to it should be answered.
	LeaderReachable() bool
	// Status is this node's view of itself and the cluster.
	Status() ha.Status
	// InConfiguration reports whether name is a server of the Raft configuration as this node
	// knows it (auth.go believes a member's connection only while it is).
	InConfiguration(name string) bool
	// RecordMember records a member's addresses and feature level (leader only).
	RecordMember(ctx context.Context, m ha.MemberRecord) error
	// Self is this node's member record as it should be recorded.
	Self() ha.MemberRecord
	// SelfRecorded reports whether the member records hold this node's own current addresses.
	SelfRecorded() bool
	// Members lists the Raft configuration with each member's recorded feature level.
	Members() ([]ha.Member, error)
}

var (
	_ Node       = (service.Backend)(nil)
	_ authorizer = (*service.Service)(nil)
)

// authorizer authenticates and authorizes calls (auth.go, scrape.go; package service, authz.go):
// the service, or in the interceptor's benchmark one that allows everything.
type authorizer interface {
	VerifyToken(token string) (service.Verified, error)
	AuthStale(v service.Verified) bool
	Authorize(ctx context.Context, c service.Caller, method string, req proto.Message) (context.Context, error)
}

// Health service names: "" is the node as a whole; healthLeader is SERVING only on the leader.
const healthLeader = "leader"

// Server is safe for concurrent use. It implements the Metadata and Admin gRPC services as an
// adapter over a Service: RPC handlers run on gRPC's goroutines and share only the Service, the
// Node, the forwarder's connection cache and the leader watch (each with its own lock, see
// forward.go); Run is called once and owns the background loops.
type Server struct {
	svc    *service.Service // the leader's side of every call: validates, answers service.ErrForward off the leader, serves
	authz  authorizer       // svc, except in the interceptor\'s benchmark
	node   Node
	cfg    Config
	log    *slog.Logger
	m      *metrics
	health *health.Server
	fwd    *forwarder
	watch  *leaderWatch
	held   chan struct{} // a slot per refusal held (hold.go), maxHeldRefusals
	meta   *metadataService
	admin  *adminService
}

// New returns a Server over svc, routing by node's view of the leader. reg receives the server's
// metrics (nil: not registered anywhere); log nil discards. Call SetLeader from the service's
// leadership hook (service.Service.OnLeadership) to keep the "leader" health status current.
func New(svc *service.Service, node Node, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Server, error) {
	if svc == nil || node == nil {
		return nil, fmt.Errorf("server: nil service or node")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, authz: svc, node: node, cfg: cfg, log: log, health: health.NewServer(), fwd: newForwarder(cfg.DialCredentials), watch: newLeaderWatch(),
		held: make(chan struct{}, maxHeldRefusals)}
	s.meta = &metadataService{s: s}
	s.admin = &adminService{s: s}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s.m = m
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(metadv1.Metadata_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(metadv1.Admin_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.SetLeader(node.IsLeader())
	svc.SetMemberProgress(s.memberApplied)
	return s, nil
}

// memberApplied asks the member at addr (its client address) how far it has applied, over this
// member's connection to it (with TLS, this member's certificate: a member may ask Status as
// itself). It is the service's MemberProgress (learners, ListMembers).
func (s *Server) memberApplied(ctx context.Context, addr string) (uint64, error) {
	cc, err := s.fwd.conn(addr)
	if err != nil {
		return 0, err
	}
	st, err := metadv1.NewAdminClient(cc).Status(ctx, &metadv1.StatusRequest{})
	if err != nil {
		return 0, err
	}
	return st.GetAppliedIndex(), nil
}

// ServerOptions returns the grpc.Server options every server that Register is given must be built
// with (cmd/metad does): requests over 16 MiB (SEMANTICS section 1) are refused by gRPC before they
// reach a handler, the server's codec lets a request that does not decode be answered
// InvalidArgument (codec.go), calls run on a pool of streamWorkers long-lived goroutines, and the
// connection limits hold: at most Config.MaxConcurrentStreams calls open on one connection, at
// most Config.MaxHeaderListBytes of metadata per call, and the keepalive rules (keepaliveParams,
// keepalivePolicy).
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(store.MaxRequestBytes), grpc.ForceServerCodecV2(newServerCodec()),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.InitialWindowSize(StreamWindowBytes), grpc.InitialConnWindowSize(ConnWindowBytes),
		grpc.MaxConcurrentStreams(s.cfg.MaxConcurrentStreams), grpc.MaxHeaderListSize(s.cfg.MaxHeaderListBytes),
		grpc.KeepaliveParams(keepaliveParams), grpc.KeepaliveEnforcementPolicy(keepalivePolicy)}
}

// The keepalive rules of client connections. The server pings a connection that has been silent
// for keepaliveParams.Time and closes it when the ping goes unanswered for Timeout, so the calls
// (and watch streams) of a peer that vanished without closing its connection end within about
// 80 s instead of holding their resources until TCP gives up. A client may ping (a gRPC client
// with keepalive on) at most every keepalivePolicy.MinTime, with or without calls open; one that
// pings more often is sent GOAWAY (too_many_pings) and disconnected, so pings cannot be used to
// keep the server busy. The Go and Python clients send no pings of their own.
var (
	keepaliveParams = keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}
	keepalivePolicy = keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}
)

// StreamWindowBytes and ConnWindowBytes are the HTTP/2 flow-control windows of a call and of a
// connection, on the server and in the Go client. Setting them turns off gRPC's bandwidth-delay
// estimator, which otherwise answers a call's data with a PING of its own, and so costs every
// small unary call two more writes and two more reads between the peers (one round trip each
// way). A stream window of 4 MiB holds a 16 MiB request in four updates; on the networks metad
// runs on (one data centre, round trips well under a millisecond) that is no limit.
const (
	StreamWindowBytes = 4 << 20
	ConnWindowBytes   = 16 << 20
)

// streamWorkers is how many goroutines gRPC keeps to run calls on (grpc.NumStreamWorkers); a call
// that finds them all busy runs on a goroutine of its own, as without the pool. A call's path
// (decode, authorize, validate, propose, apply, encode) needs a stack of several times a new
// goroutine's, so a call on a fresh goroutine spends a large share of its CPU growing and copying
// its stack; a pooled goroutine keeps the stack it grew. A call holds its worker while it waits
// for its Raft round, so the pool is sized for calls in flight (clients), not for cores: an idle
// worker costs only its stack.
const streamWorkers = 256

// Register registers the Metadata and Admin services, gRPC health (the node as a whole, and
// "leader", SERVING only on the leader) and reflection on g, which must have been built with
// ServerOptions (without its codec every call of the two services fails with Internal).
func (s *Server) Register(g *grpc.Server) {
	g.RegisterService(decodingServiceDesc(&metadv1.Metadata_ServiceDesc), s.meta)
	g.RegisterService(decodingServiceDesc(&metadv1.Admin_ServiceDesc), s.admin)
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
}

// SetNotServing is step 1 of a graceful shutdown: every health service turns NOT_SERVING and stays
// so, so that load balancers and clients move away before the node stops.
func (s *Server) SetNotServing() { s.health.Shutdown() }

// Close releases the connections used to forward calls to the leader. Call it after the gRPC
// server has stopped; forwards after Close fail with UNAVAILABLE.
func (s *Server) Close() {
	s.watch.stop()
	s.fwd.close()
}

// Run runs the adapter's background loops until ctx is done: every SweepInterval, while this
// node's member record is missing or stale, it asks the leader to record it (members.go); every
// leaderWatchInterval it checks that the leader is still heard from (forwards in flight are
// abandoned when it is not). It returns when both have stopped. Call it once.
func (s *Server) Run(ctx context.Context) {
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watchLeader(ctx)
	}()
	s.recordLoop(ctx)
	<-watched
}

// SetLeader publishes whether this node leads (health service "leader").
func (s *Server) SetLeader(leader bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if leader {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus(healthLeader, st)
}

// unary runs a unary call: the Service's answer here, or, when this node does not lead
// (service.ErrForward), the leader's answer to the same call forwarded there (forward.go).
//
// A call whose authentication was deferred to the leader (auth.go: its API key is unknown here)
// goes to the leader without the Service seeing it, even one this node would serve itself.
func unary[Req proto.Message, Resp any, P interface {
	*Resp
	proto.Message
}](ctx context.Context, s *Server, req Req, call func(context.Context, Req) (P, error)) (P, error) {
	deferred := deferredAuth(ctx)
	if !deferred {
		resp, err := call(ctx, req)
		if !errors.Is(err, service.ErrForward) {
			if err != nil {
				return nil, toStatus(err)
			}
			return resp, nil
		}
	}
	t, err := s.leaderTarget(ctx)
	if err != nil {
		return nil, err
	}
	if t.local { // this node took office since the service (or the authentication) looked
		if deferred {
			if ctx, err = s.readmit(ctx, req); err != nil {
				return nil, err
			}
		}
		resp, err := call(ctx, req)
		if err != nil {
			return nil, toStatus(err)
		}
		return resp, nil
	}
	out := P(new(Resp))
	noteForward(ctx, t.name)
	if err := s.forward(ctx, t, req, out); err != nil {
		return nil, err
	}
	return out, nil
}
