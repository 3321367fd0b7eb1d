package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Backend must be safe for concurrent use. It is what the services need from the node: ha.Node
// implements all of it but Store, which cmd/metad adds from the state machine.
type Backend interface {
	// Propose commits one command through the Raft log and returns its result as applied on this
	// node. Raft-level failures are errors: *ha.NotLeaderError (errors.Is ha.ErrNotLeader),
	// ha.ErrShutdown, ha.ErrTimeout, ha.ErrUnknown, or the context's error; a deterministic
	// rejection is a Result with a reason, never an error.
	Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error)
	// ReadBarrier is a linearizable read point: it returns once leadership is confirmed and
	// everything committed before the call has been applied to the store. A leader that has not
	// applied its term-start barrier yet waits for it.
	ReadBarrier(ctx context.Context) error
	// LeaderReady returns once this node leads and has applied its term-start barrier (its store
	// holds everything committed before its term), waiting while it leads but is not ready yet;
	// *ha.NotLeaderError when it does not lead or stops leading meanwhile. It does not confirm
	// leadership (ReadBarrier does): a deposed leader that has not noticed is still ready.
	LeaderReady(ctx context.Context) error
	// Store returns the current store; fetch it per request (a snapshot restore swaps it).
	Store() *store.Store
	// IsLeader reports whether this node is the Raft leader.
	IsLeader() bool
	// Leader names the leader this node knows of and its client (gRPC) address; empty if none.
	Leader() (name, clientAddr string)
	// LeaderReachable reports whether the leader is this node, or has been heard from recently
	// enough that a call forwarded to it should be answered (ha.Node: within one heartbeat
	// timeout).
	LeaderReachable() bool
	// Status is this node's view of itself and the cluster.
	Status() ha.Status
	// Members lists the Raft configuration.
	Members() ([]ha.Member, error)
	// AddMember adds a voter (leader only).
	AddMember(ctx context.Context, name, peerAddr string) error
	// RemoveMember removes a member (leader only).
	RemoveMember(ctx context.Context, name string) error
	// TransferLeader hands leadership to the named member ("" = the most up-to-date follower) and
	// returns the new leader's name (leader only).
	TransferLeader(ctx context.Context, to string) (newLeader string, err error)
	// RecordMember records a member's peer and client addresses in the replicated member records
	// (leader only); the name must be in the Raft configuration (MEMBER_NOT_FOUND otherwise).
	RecordMember(ctx context.Context, name, peerAddr, clientAddr string) error
	// SelfRecorded reports whether the member records this node has applied hold its own current
	// addresses (Status's Name, PeerAddr and ClientAddr).
	SelfRecorded() bool
}

// Health service names: "" is the node as a whole; healthLeader is SERVING only on the leader.
const healthLeader = "leader"

// Server is safe for concurrent use. It implements the Metadata and Admin gRPC services over a
// Backend. RPC handlers run on gRPC's goroutines and share only the
// Backend, the forwarder's connection cache and the client-liveness table (each with its own
// lock, see forward.go and clients.go); Run is called once and owns the background loop.
type Server struct {
	b      Backend
	cfg    Config
	log    *slog.Logger
	m      *metrics
	health *health.Server
	fwd    *forwarder
	watch  *leaderWatch
	live   *liveness
	meta   *metadataService
	admin  *adminService
}

// New returns a Server over b. reg receives the server's metrics (nil: not registered anywhere);
// log nil discards.
func New(b Backend, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Server, error) {
	if b == nil {
		return nil, fmt.Errorf("server: nil backend")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if got := b.Store().LeaseTTL(); got != cfg.LeaseTTL {
		return nil, fmt.Errorf("server: lease_ttl %s differs from the store's %s", cfg.LeaseTTL, got)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{b: b, cfg: cfg, log: log, health: health.NewServer(), fwd: newForwarder(), watch: newLeaderWatch(), live: newLiveness()}
	s.meta = &metadataService{s: s}
	s.admin = &adminService{s: s}
	m, err := newMetrics(reg, b)
	if err != nil {
		return nil, err
	}
	s.m = m
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(metadv1.Metadata_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(metadv1.Admin_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.setLeaderHealth(b.IsLeader())
	return s, nil
}

// ServerOptions returns the grpc.Server options every server that Register is given must be built
// with (cmd/metad does): requests over 16 MiB (SEMANTICS section 1) are refused by gRPC before they
// reach a handler, and the server's codec lets a request that does not decode be answered
// InvalidArgument (codec.go).
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(store.MaxRequestBytes), grpc.ForceServerCodecV2(newServerCodec())}
}

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

// Run is the background loop: every SweepInterval it publishes whether this node is the leader
// (health service "leader") and, on the leader, expires silent clients. Beside it run two more
// loops: every SweepInterval, while this node's member record is missing or stale, it asks the
// leader to record it (members.go); every leaderWatchInterval it checks that the leader is still
// heard from (forwards in flight are abandoned when it is not). Neither can hold up the first. It
// returns when ctx is done and the loops have stopped. Call it once.
func (s *Server) Run(ctx context.Context) {
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watchLeader(ctx)
	}()
	defer func() { <-watched }()
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		s.recordLoop(ctx)
	}()
	defer func() { <-recorded }()
	tick := time.NewTicker(s.cfg.SweepInterval)
	defer tick.Stop()
	wasLeader, wasTerm := false, uint64(0)
	for {
		st := s.b.Status()
		leader := st.Role == ha.RoleLeader
		// A new term is a new leadership even when this node led the last one too: the clients'
		// pings went to another leader meanwhile, so their grace starts again.
		if leader != wasLeader || leader && st.Term != wasTerm {
			s.setLeaderHealth(leader)
			s.live.leadershipChanged(leader, s.cfg.nowNano())
			s.log.Info("leadership changed", "leader", leader, "term", st.Term)
			wasLeader, wasTerm = leader, st.Term
		}
		if leader {
			s.expireClients(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Server) setLeaderHealth(leader bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if leader {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus(healthLeader, st)
}

// InitCluster applies the settings a new cluster starts with: the requested quota of tenant
// "default" (Config.DefaultQuota). Call it once after bootstrapping a new cluster, on the leader
// (elsewhere it fails with NOT_LEADER or UNAVAILABLE and changes nothing); with DefaultQuota 0 it
// does nothing.
func (s *Server) InitCluster(ctx context.Context) error {
	if s.cfg.DefaultQuota == 0 {
		return nil
	}
	res, err := s.b.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_SetQuota{SetQuota: &metadv1.SetQuota{
		Tenant: store.DefaultTenant, QuotaBytes: s.cfg.DefaultQuota}}})
	if err != nil {
		return toStatus(err, store.DefaultTenant, nil)
	}
	return resultErr(&res, store.DefaultTenant, nil)
}
