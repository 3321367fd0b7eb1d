package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
)

// Service is the leader's side of every unary call (package service implements it): each method
// validates its request, answers ErrForward (service.ErrForward) when this node does not lead and
// the call must run on the leader, and otherwise serves it. Its errors are *service.Error or
// ErrForward; toStatus maps them.
type Service interface {
	RegisterTenant(context.Context, *metadv1.RegisterTenantRequest) (*metadv1.RegisterTenantResponse, error)
	UnregisterTenant(context.Context, *metadv1.UnregisterTenantRequest) (*metadv1.UnregisterTenantResponse, error)
	ListTenants(context.Context, *metadv1.ListTenantsRequest) (*metadv1.ListTenantsResponse, error)
	SetQuota(context.Context, *metadv1.SetQuotaRequest) (*metadv1.SetQuotaResponse, error)
	GetQuota(context.Context, *metadv1.GetQuotaRequest) (*metadv1.GetQuotaResponse, error)
	ListSegments(context.Context, *metadv1.ListSegmentsRequest) (*metadv1.ListSegmentsResponse, error)
	ListMembers(context.Context, *metadv1.ListMembersRequest) (*metadv1.ListMembersResponse, error)
	AddMember(context.Context, *metadv1.AddMemberRequest) (*metadv1.AddMemberResponse, error)
	RemoveMember(context.Context, *metadv1.RemoveMemberRequest) (*metadv1.RemoveMemberResponse, error)
	TransferLeader(context.Context, *metadv1.TransferLeaderRequest) (*metadv1.TransferLeaderResponse, error)
	RecordMember(context.Context, *metadv1.RecordMemberRequest) (*metadv1.RecordMemberResponse, error)
	Status(context.Context, *metadv1.StatusRequest) (*metadv1.StatusResponse, error)
	PutStart(context.Context, *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error)
	PutEnd(context.Context, *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error)
	PutRevoke(context.Context, *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error)
	UpsertStart(context.Context, *metadv1.UpsertStartRequest) (*metadv1.UpsertStartResponse, error)
	UpsertEnd(context.Context, *metadv1.UpsertEndRequest) (*metadv1.UpsertEndResponse, error)
	UpsertRevoke(context.Context, *metadv1.UpsertRevokeRequest) (*metadv1.UpsertRevokeResponse, error)
	BatchPutStart(context.Context, *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error)
	BatchPutEnd(context.Context, *metadv1.BatchPutEndRequest) (*metadv1.BatchPutEndResponse, error)
	BatchPutRevoke(context.Context, *metadv1.BatchPutRevokeRequest) (*metadv1.BatchPutRevokeResponse, error)
	Get(context.Context, *metadv1.GetRequest) (*metadv1.GetResponse, error)
	Exist(context.Context, *metadv1.ExistRequest) (*metadv1.ExistResponse, error)
	BatchGet(context.Context, *metadv1.BatchGetRequest) (*metadv1.BatchGetResponse, error)
	BatchExist(context.Context, *metadv1.BatchExistRequest) (*metadv1.BatchExistResponse, error)
	ListGroup(context.Context, *metadv1.ListGroupRequest) (*metadv1.ListGroupResponse, error)
	Remove(context.Context, *metadv1.RemoveRequest) (*metadv1.RemoveResponse, error)
	BatchRemove(context.Context, *metadv1.BatchRemoveRequest) (*metadv1.BatchRemoveResponse, error)
	RemoveAll(context.Context, *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error)
	RemoveGroup(context.Context, *metadv1.RemoveGroupRequest) (*metadv1.RemoveGroupResponse, error)
	MountSegment(context.Context, *metadv1.MountSegmentRequest) (*metadv1.MountSegmentResponse, error)
	UnmountSegment(context.Context, *metadv1.UnmountSegmentRequest) (*metadv1.UnmountSegmentResponse, error)
	Ping(context.Context, *metadv1.PingRequest) (*metadv1.PingResponse, error)
	OpenSession(context.Context, *metadv1.OpenSessionRequest) (*metadv1.OpenSessionResponse, error)
	ListObjectKeys(context.Context, *metadv1.ListObjectKeysRequest) (*metadv1.ListObjectKeysResponse, error)
	GetByRegex(context.Context, *metadv1.GetByRegexRequest) (*metadv1.GetByRegexResponse, error)
	RemoveByRegex(context.Context, *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error)
	BatchReplicaClear(context.Context, *metadv1.BatchReplicaClearRequest) (*metadv1.BatchReplicaClearResponse, error)
	CopyStart(context.Context, *metadv1.CopyStartRequest) (*metadv1.CopyStartResponse, error)
	CopyEnd(context.Context, *metadv1.CopyEndRequest) (*metadv1.CopyEndResponse, error)
	CopyRevoke(context.Context, *metadv1.CopyRevokeRequest) (*metadv1.CopyRevokeResponse, error)
	MoveStart(context.Context, *metadv1.MoveStartRequest) (*metadv1.MoveStartResponse, error)
	MoveEnd(context.Context, *metadv1.MoveEndRequest) (*metadv1.MoveEndResponse, error)
	MoveRevoke(context.Context, *metadv1.MoveRevokeRequest) (*metadv1.MoveRevokeResponse, error)
	CreateCopyTask(context.Context, *metadv1.CreateCopyTaskRequest) (*metadv1.CreateCopyTaskResponse, error)
	CreateMoveTask(context.Context, *metadv1.CreateMoveTaskRequest) (*metadv1.CreateMoveTaskResponse, error)
	QueryTask(context.Context, *metadv1.QueryTaskRequest) (*metadv1.QueryTaskResponse, error)
	FetchTasks(context.Context, *metadv1.FetchTasksRequest) (*metadv1.FetchTasksResponse, error)
	MarkTaskToComplete(context.Context, *metadv1.MarkTaskToCompleteRequest) (*metadv1.MarkTaskToCompleteResponse, error)
	ListTasks(context.Context, *metadv1.ListTasksRequest) (*metadv1.ListTasksResponse, error)
	CreateKey(context.Context, *metadv1.CreateKeyRequest) (*metadv1.CreateKeyResponse, error)
	RevokeKey(context.Context, *metadv1.RevokeKeyRequest) (*metadv1.RevokeKeyResponse, error)
	ListKeys(context.Context, *metadv1.ListKeysRequest) (*metadv1.ListKeysResponse, error)
	GrantRole(context.Context, *metadv1.GrantRoleRequest) (*metadv1.GrantRoleResponse, error)
	RevokeRole(context.Context, *metadv1.RevokeRoleRequest) (*metadv1.RevokeRoleResponse, error)
	ListRoles(context.Context, *metadv1.ListRolesRequest) (*metadv1.ListRolesResponse, error)
	StartDrain(context.Context, *metadv1.StartDrainRequest) (*metadv1.StartDrainResponse, error)
	DrainStatus(context.Context, *metadv1.DrainStatusRequest) (*metadv1.DrainStatusResponse, error)
	CancelDrain(context.Context, *metadv1.CancelDrainRequest) (*metadv1.CancelDrainResponse, error)
	// OpenSnapshot and RestoreSnapshot serve the snapshot streams (see snapshot.go).
	OpenSnapshot(ctx context.Context, allowStale bool) (*ha.SnapshotStream, error)
	RestoreSnapshot(ctx context.Context, r io.Reader) (*ha.RestoreResult, error)
	// VerifyToken, AuthStale and Authorize authenticate and authorize calls (auth.go; package
	// service, authz.go).
	VerifyToken(token string) (service.Verified, error)
	AuthStale(v service.Verified) bool
	Authorize(ctx context.Context, c service.Caller, method string, req proto.Message) (context.Context, error)
}

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
}

var (
	_ Service = (*service.Service)(nil)
	_ Node    = (service.Backend)(nil)
)

// Health service names: "" is the node as a whole; healthLeader is SERVING only on the leader.
const healthLeader = "leader"

// Server is safe for concurrent use. It implements the Metadata and Admin gRPC services as an
// adapter over a Service: RPC handlers run on gRPC's goroutines and share only the Service, the
// Node, the forwarder's connection cache and the leader watch (each with its own lock, see
// forward.go); Run is called once and owns the background loops.
type Server struct {
	svc    Service
	node   Node
	cfg    Config
	log    *slog.Logger
	m      *metrics
	health *health.Server
	fwd    *forwarder
	watch  *leaderWatch
	meta   *metadataService
	admin  *adminService
}

// New returns a Server over svc, routing by node's view of the leader. reg receives the server's
// metrics (nil: not registered anywhere); log nil discards. Call SetLeader from the service's
// leadership hook (service.Service.OnLeadership) to keep the "leader" health status current.
func New(svc Service, node Node, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Server, error) {
	if svc == nil || node == nil {
		return nil, fmt.Errorf("server: nil service or node")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, node: node, cfg: cfg, log: log, health: health.NewServer(), fwd: newForwarder(cfg.DialCredentials), watch: newLeaderWatch()}
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
	return s, nil
}

// ServerOptions returns the grpc.Server options every server that Register is given must be built
// with (cmd/metad does): requests over 16 MiB (SEMANTICS section 1) are refused by gRPC before they
// reach a handler, the server's codec lets a request that does not decode be answered
// InvalidArgument (codec.go), and calls run on a pool of streamWorkers long-lived goroutines.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(store.MaxRequestBytes), grpc.ForceServerCodecV2(newServerCodec()),
		grpc.NumStreamWorkers(streamWorkers)}
}

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
	if err := s.forward(ctx, t, req, out); err != nil {
		return nil, err
	}
	return out, nil
}
