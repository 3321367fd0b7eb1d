package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"metad/auth"
	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/watch"
)

// Backend must be safe for concurrent use. It is what the service needs from the Raft node;
// ha.Node implements it.
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
	// IsLeader reports whether this node is the Raft leader.
	IsLeader() bool
	// Leader names the leader this node knows of and its client (gRPC) address; empty if none.
	Leader() (name, clientAddr string)
	// LeaseTerm returns the term in which this node holds a leader lease now (no other node can
	// lead before it ends), 0 when it holds none; a ReadBarrier renews it (ha.Node.LeaseTerm).
	LeaseTerm() uint64
	// LeaseDuration is how long a lease lasts after the round that confirmed it.
	LeaseDuration() time.Duration
	// LeaderReachable reports whether the leader is this node, or has been heard from recently
	// enough that a call forwarded to it should be answered (ha.Node: within one heartbeat
	// timeout).
	LeaderReachable() bool
	// Status is this node's view of itself and the cluster.
	Status() ha.Status
	// Members lists the Raft configuration.
	Members() ([]ha.Member, error)
	// InConfiguration reports whether name is a server of the Raft configuration as this node
	// knows it (its latest configuration entry, committed or not); cheap, unlike Members.
	InConfiguration(name string) bool
	// AddMember adds a voter and returns the configuration's index (leader only).
	AddMember(ctx context.Context, name, peerAddr string) (uint64, error)
	// AddLearner adds a non-voter and returns the configuration's index (leader only).
	AddLearner(ctx context.Context, name, peerAddr string) (uint64, error)
	// PromoteMember makes a learner a voter and returns the configuration's index, 0 when it was
	// a voter already (leader only).
	PromoteMember(ctx context.Context, name string) (uint64, error)
	// RemoveMember removes a member (leader only).
	RemoveMember(ctx context.Context, name string) error
	// TransferLeader hands leadership to the named member ("" = the most up-to-date follower) and
	// returns the new leader's name (leader only).
	TransferLeader(ctx context.Context, to string) (newLeader string, err error)
	// RecordMember records a member's peer and client addresses in the replicated member records
	// (leader only); the name must be in the Raft configuration (MEMBER_NOT_FOUND otherwise).
	RecordMember(ctx context.Context, m fsm.Member) error
	// Self is this node's member record as it should be recorded (its addresses and its binary's
	// feature level).
	Self() fsm.Member
	// ClusterLevel returns the cluster's feature level (the lowest its members record) and a
	// member at that level (ha.Node.ClusterLevel).
	ClusterLevel() (level uint32, member string)
	// SelfRecorded reports whether the member records this node has applied hold its own current
	// addresses (Status's Name, PeerAddr and ClientAddr).
	SelfRecorded() bool
}

// Snapshots must be safe for concurrent use. It is what the snapshot calls need beyond Backend;
// ha.Node implements it, and a Backend without it answers ErrUnimplemented.
type Snapshots interface {
	// OpenSnapshot takes a fresh snapshot (on the leader, after a barrier, unless allowStale) and
	// opens the file.
	OpenSnapshot(ctx context.Context, allowStale bool) (*ha.SnapshotStream, error)
	// RestoreSnapshot receives, verifies and installs a snapshot file (leader only). A refused file
	// gives an error wrapping ha.ErrInvalidSnapshot.
	RestoreSnapshot(ctx context.Context, r io.Reader) (*ha.RestoreResult, error)
}

// State is the replicated state as the service reads it; *fsm.FSM implements it.
type State interface {
	// Store returns the current store (a snapshot restore swaps it; fetch it per request).
	Store() *store.Store
	// Replay returns the result the state keeps for a session header's (session, seq), when
	// principal opened the session.
	Replay(h *metadv1.SessionHeader, principal string) (store.Result, bool)
	// SessionOpen reports whether the state holds the session and principal opened it.
	SessionOpen(id uint64, principal string) bool
	// Auth returns the current auth state (API keys, role bindings): immutable, swapped by apply.
	Auth() *auth.State
	// Window returns this member's watch events (fsm.FSM.Window).
	Window() *watch.Window
}

var (
	_ Backend   = (*ha.Node)(nil)
	_ Snapshots = (*ha.Node)(nil)
	_ State     = (*fsm.FSM)(nil)
)

// Service is safe for concurrent use. It is the leader's side of every request of the Metadata and
// Admin APIs (see doc.go). Its methods run on the callers' goroutines and share the Backend, the
// store (fetched per request: a snapshot restore swaps it) and the client-liveness table (one leaf
// lock); Run is called once and owns the background loop.
type Service struct {
	b     Backend
	st    State
	state func() *store.Store
	cfg   Config
	log   *slog.Logger
	live  *liveness
	m     *metrics
	// term is the term whose leadership the leadership hook has started here (0: not leading);
	// Run expires clients only in that term, after the liveness table was started afresh for it.
	term atomic.Uint64
	res  *reservations // PutStarts answered from the leader's arenas (reserve.go)
	// promote is the leader's promotion admission (promote.go); nil unless Config.PromoteOnHit.
	promote *promoter
	limits  *limiter   // this member's buckets of the principals' rate limits (ratelimit.go)
	wire    *eventWire // every watch stream's encodings of events (watch.go)

	hooksMu   sync.Mutex // guards onLeading and progress; a leaf: the hooks run after it is released
	onLeading []func(leading bool)
	progress  MemberProgress // learners.go
}

// New returns a Service over b, which reads the replicated state through st (the state machine's:
// a snapshot restore swaps its store), and attaches it to lead, the node's leadership hook. reg
// receives the service's metrics (nil: not registered); log nil discards.
func New(b Backend, st State, lead *Leadership, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Service, error) {
	if b == nil || st == nil || lead == nil {
		return nil, fmt.Errorf("service: nil backend, state or leadership hook")
	}
	state := st.Store
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ArenaFence <= 0 {
		cfg.ArenaFence = DefaultConfig().ArenaFence
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if got := state().LeaseTTL(); got != cfg.LeaseTTL {
		return nil, fmt.Errorf("service: lease_ttl %s differs from the store's %s", cfg.LeaseTTL, got)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg, state)
	if err != nil {
		return nil, err
	}
	s := &Service{b: b, st: st, state: state, cfg: cfg, log: log, live: newLiveness(), m: m, wire: newEventWire(), limits: newLimiter()}
	if cfg.PromoteOnHit {
		s.promote = newPromoter()
	}
	if s.res, err = newReservations(s, reg); err != nil {
		return nil, err
	}
	lead.svc.Store(s)
	// The node may have taken office before the hook could reach the service.
	if st := b.Status(); st.Role == ha.RoleLeader {
		s.leadershipChanged(true, st.Term)
	}
	return s, nil
}

// OnLeadership registers fn, run on the leadership hook's goroutine whenever this node's
// leadership changes (true: it leads a new term; false: it stopped leading), after the service's
// own soft state has been started afresh and before the evictor is kicked. fn must return
// promptly. Register before the node can lead (cmd/metad registers right after New).
func (s *Service) OnLeadership(fn func(leading bool)) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.onLeading = append(s.onLeading, fn)
}

// Run is the background loop: every SweepInterval, on the leader, it expires silent clients, ends
// the graceful unmounts that are due (finishClosing) and drives the running drain jobs
// (driveDrains); with AutoPromote, every autoPromoteSweeps sweeps it promotes the caught-up
// learners. Beside it run the arena keeper (unless NoArenas) and the evictor's loop (with
// Config.Evictor), each on its own goroutine. It returns when ctx is done and they have returned.
// Call it once.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if !s.cfg.NoArenas {
		wg.Go(func() { s.res.runKeeper(ctx) })
	}
	if ev := s.cfg.Evictor; ev != nil {
		wg.Go(func() { _ = ev.Run(ctx) }) // ctx's error, once ctx is done
	}
	if s.promote != nil {
		wg.Go(func() { s.runPromoter(ctx) })
	}
	tick := time.NewTicker(s.cfg.SweepInterval)
	defer tick.Stop()
	sweeps := 0
	for {
		// Only in the term the hook started here: Raft reports a new term's leadership before its
		// hook has started the liveness table afresh for it.
		if st := s.b.Status(); st.Role == ha.RoleLeader && st.Term != 0 && st.Term == s.term.Load() {
			s.expireClients(ctx)
			s.finishClosing(ctx)
			s.driveDrains(ctx)
			if sweeps++; s.cfg.AutoPromote && sweeps%autoPromoteSweeps == 0 {
				s.autoPromote(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// leadershipChanged is the service's part of the leadership hook: the clients' pings went to
// another leader meanwhile, so on gaining leadership every known client's grace starts again, and
// on losing it the table is dropped; then the registered hooks run, and last the evictor is kicked
// (it looks at once: a new leader's watermarks, or a former leader's idling).
func (s *Service) leadershipChanged(leading bool, term uint64) {
	s.live.leadershipChanged(leading, s.cfg.nowNano())
	if leading {
		s.term.Store(term)
	} else {
		s.term.Store(0)
	}
	s.log.Info("leadership changed", "leader", leading, "term", term)
	s.hooksMu.Lock()
	hooks := slices.Clone(s.onLeading)
	s.hooksMu.Unlock()
	for _, fn := range hooks {
		fn(leading)
	}
	if s.cfg.Evictor != nil {
		s.cfg.Evictor.Kick()
	}
}

// InitCluster applies the settings a new cluster starts with: the requested quota of tenant
// "default" (Config.DefaultQuota). Call it once after bootstrapping a new cluster, on the leader
// (elsewhere it fails with NOT_LEADER or UNAVAILABLE and changes nothing); with DefaultQuota 0 it
// does nothing.
func (s *Service) InitCluster(ctx context.Context) error {
	if s.cfg.DefaultQuota == 0 {
		return nil
	}
	res, err := s.b.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_SetQuota{SetQuota: &metadv1.SetQuota{
		Tenant: store.DefaultTenant, QuotaBytes: s.cfg.DefaultQuota}}})
	if err != nil {
		return fail(err, store.DefaultTenant, nil)
	}
	return rejected(&res, store.DefaultTenant, nil)
}

// here returns nil when this node leads, and ErrForward otherwise: the request has been validated
// and nothing else done, so the caller may send it to the leader.
func (s *Service) here() error {
	if s.b.IsLeader() {
		return nil
	}
	return ErrForward
}

// readState is where a read runs: a stale read on this node's store as it is; a linearizable one
// (linear true) only on the leader (ErrForward elsewhere), after Backend.ReadBarrier.
func (s *Service) readState(ctx context.Context, stale bool) (st *store.Store, linear bool, err error) {
	if stale {
		return s.state(), false, nil
	}
	if err := s.here(); err != nil {
		return nil, false, err
	}
	if err := s.b.ReadBarrier(ctx); err != nil {
		return nil, false, fail(err, "", nil)
	}
	return s.state(), true, nil
}
