package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// Forwarding: any node accepts any request; a follower passes a call that must run on the leader
// (writes, linearizable reads, membership changes) to the leader's client address as the same RPC,
// and returns the leader's answer unchanged. The forwarded call carries forwardedKey; a node that
// receives a forwarded call while not leader answers NOT_LEADER instead of forwarding it again, so
// a call crosses at most one hop and never loops while the cluster's view of the leader settles.

// A forward never waits long for a leader that has stopped answering. It runs under the caller's
// context, and also:
//   - a node that has not heard from its leader within a heartbeat timeout does not forward at all
//     (Backend.LeaderReachable): it answers UNAVAILABLE at once, so the client tries another node
//     instead of waiting on one that is gone, paused or cut off while the followers elect;
//   - every forward in flight is abandoned (UNAVAILABLE, outcome unknown) as soon as this node stops
//     hearing from the leader (leaderWatch, checked every leaderWatchInterval by Run);
//   - a forward of a short call (everything but longMethods) is bounded by Config.ForwardTimeout,
//     for clients that send no deadline of their own.

// forwardedKey is the metadata key that marks a forwarded call.
const forwardedKey = "x-metad-forwarded"

// LeaderHeader is the response header a follower sets on a call it forwarded: the leader's client
// address, so that a client learns where to send the next call and saves the extra hop.
const LeaderHeader = "x-metad-leader"

// maxForwardConns bounds the connection cache (a cluster has a handful of members).
const maxForwardConns = 16

// forwardMsgBytes bounds a forwarded message in both directions: a request is at most 16 MiB, and
// a response (a batch of 4096 items) stays well within 64 MiB.
const forwardMsgBytes = 64 << 20

// forwarder is safe for concurrent use. It caches one client connection per leader address.
type forwarder struct {
	creds credentials.TransportCredentials // of every dial; read-only

	mu     sync.Mutex // guards conns and closed; a leaf: nothing is acquired while it is held
	conns  map[string]*grpc.ClientConn
	closed bool
}

// newForwarder returns a forwarder that dials with creds (nil: plaintext).
func newForwarder(creds credentials.TransportCredentials) *forwarder {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	return &forwarder{creds: creds, conns: make(map[string]*grpc.ClientConn)}
}

// conn returns the cached connection to addr, dialing (lazily: grpc.NewClient connects on first
// use) if there is none.
func (f *forwarder) conn(addr string) (*grpc.ClientConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, unavailableStatus("server is shutting down")
	}
	if cc, ok := f.conns[addr]; ok {
		return cc, nil
	}
	if len(f.conns) >= maxForwardConns {
		for a, cc := range f.conns { // drop any one: addresses change only with membership
			_ = cc.Close()
			delete(f.conns, a)
			break
		}
	}
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(f.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(forwardMsgBytes), grpc.MaxCallSendMsgSize(forwardMsgBytes)))
	if err != nil {
		return nil, unavailableStatus("cannot reach the leader at " + addr + ": " + err.Error())
	}
	f.conns[addr] = cc
	return cc, nil
}

// close closes every cached connection; later forwards fail with UNAVAILABLE.
func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for a, cc := range f.conns {
		_ = cc.Close()
		delete(f.conns, a)
	}
}

// leaderWatchInterval is how often Run checks whether the leader is still heard from. A forward to
// a leader that stopped answering is abandoned within about a heartbeat timeout plus this.
const leaderWatchInterval = 50 * time.Millisecond

// longMethods are the calls whose work may take long on a healthy leader (they erase a whole
// tenant, change the membership, wait for an election, or stream a snapshot): their forwards are
// bounded by the caller's deadline, not Config.ForwardTimeout.
var longMethods = map[string]bool{
	metadv1.Metadata_RemoveAll_FullMethodName:     true,
	metadv1.Admin_UnregisterTenant_FullMethodName: true,
	metadv1.Admin_AddMember_FullMethodName:        true,
	metadv1.Admin_RemoveMember_FullMethodName:     true,
	metadv1.Admin_TransferLeader_FullMethodName:   true,
	metadv1.Admin_SnapshotSave_FullMethodName:     true,
	metadv1.Admin_SnapshotRestore_FullMethodName:  true,
}

// leaderWatch is safe for concurrent use. It gives each forward a context that is cancelled when
// this node stops hearing from the leader: one context per stretch of time in which the leader was
// reachable, cancelled when the stretch ends and replaced when the next begins.
type leaderWatch struct {
	mu     sync.Mutex // guards epoch and cancel; a leaf: nothing is acquired while it is held
	epoch  context.Context
	cancel context.CancelFunc // nil while epoch is cancelled (the leader is not reachable)
}

func newLeaderWatch() *leaderWatch {
	w := &leaderWatch{}
	w.epoch, w.cancel = context.WithCancel(context.Background())
	return w
}

// current returns the context of the present stretch (already cancelled while the leader is not
// reachable).
func (w *leaderWatch) current() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// observe records whether the leader is reachable now: losing it cancels the present stretch (and
// with it every forward in flight); regaining it starts a new one.
func (w *leaderWatch) observe(reachable bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !reachable && w.cancel != nil:
		w.cancel()
		w.cancel = nil
	case reachable && w.cancel == nil:
		w.epoch, w.cancel = context.WithCancel(context.Background())
	}
}

// stop cancels the present stretch for good (the server is closing).
func (w *leaderWatch) stop() { w.observe(false) }

// watchLeader runs leaderWatch's checks until ctx ends.
func (s *Server) watchLeader(ctx context.Context) {
	t := time.NewTicker(leaderWatchInterval)
	defer t.Stop()
	for {
		s.watch.observe(s.node.LeaderReachable())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hop is one forward's context: the caller's, bounded by Config.ForwardTimeout unless the method
// is long, and cancelled when the leader stops being heard from. done must be called when the
// forward ends; why explains a failure that the hop's own bounds caused (nil otherwise).
type hop struct {
	ctx    context.Context
	done   func()
	parent context.Context
	lost   context.Context
	limit  time.Duration // 0 for a long method
	// binding: limit ends the hop before the caller's own deadline, so a DeadlineExceeded
	// answer from the leader (gRPC carries the hop's deadline there, where it may expire first)
	// is the hop's doing, not the caller's.
	binding bool
}

func (s *Server) newHop(ctx context.Context, method string) *hop {
	lost := s.watch.current()
	if lost.Err() != nil && s.node.LeaderReachable() {
		// The leader is heard from again, and the watch has not looked since (leaderTarget just
		// checked): start the new stretch now rather than abandon this forward at once.
		s.watch.observe(true)
		lost = s.watch.current()
	}
	h := &hop{parent: ctx, lost: lost}
	var cancel context.CancelFunc
	if longMethods[method] {
		h.ctx, cancel = context.WithCancel(ctx)
	} else {
		h.limit = s.cfg.ForwardTimeout
		pd, ok := ctx.Deadline()
		h.binding = !ok || time.Now().Add(h.limit).Before(pd)
		h.ctx, cancel = context.WithTimeout(ctx, h.limit)
	}
	stop := context.AfterFunc(h.lost, cancel)
	h.done = func() {
		stop()
		cancel()
	}
	return h
}

// why returns the status for a forward that failed with err because of the hop's own bounds, or
// nil when the failure is the leader's answer, a transport error or the caller's own deadline.
func (h *hop) why(t target, err error) error {
	if h.parent.Err() != nil {
		return nil
	}
	if h.ctx.Err() != nil && h.lost.Err() != nil {
		return unavailableStatus(fmt.Sprintf("forwarding to the leader %s at %s abandoned: this node stopped hearing from it "+
			"(an election is likely under way); the outcome is unknown", t.name, t.addr))
	}
	if h.ctx.Err() != nil || h.binding && status.Code(err) == codes.DeadlineExceeded {
		return unavailableStatus(fmt.Sprintf("forwarding to the leader %s at %s got no answer within %s; the outcome is unknown",
			t.name, t.addr, h.limit))
	}
	return nil
}

// forwardContext is the outgoing context of a forward of the call in ctx, run under hctx: marked
// forwarded, with the call's authentication (forwardMD: the principal, or a deferred call's key).
func forwardContext(ctx, hctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(hctx, append([]string{forwardedKey, "1"}, forwardMD(ctx)...)...)
}

// isForwarded reports whether the incoming call was forwarded by another node.
func isForwarded(ctx context.Context) bool {
	return len(metadata.ValueFromIncomingContext(ctx, forwardedKey)) > 0
}

// target is a plain value. It says where a call that must run on the leader runs: here (local), or on the leader
// through leader (name, addr).
type target struct {
	local      bool
	name, addr string
}

// leaderTarget decides where a leader-only call runs. It fails with NOT_LEADER when the call was
// already forwarded once, and with UNAVAILABLE when no leader is known.
func (s *Server) leaderTarget(ctx context.Context) (target, error) {
	if s.node.IsLeader() {
		return target{local: true}, nil
	}
	name, addr := s.node.Leader()
	if isForwarded(ctx) || addr == "" {
		return target{}, notLeaderStatus(name, addr)
	}
	if !s.node.LeaderReachable() {
		return target{}, leaderSilentStatus(name)
	}
	return target{name: name, addr: addr}, nil
}

// forward sends req to the leader as the RPC being served and fills resp with its answer.
func (s *Server) forward(ctx context.Context, t target, req, resp proto.Message) error {
	method, ok := grpc.Method(ctx)
	if !ok {
		return internalStatus("forward: no gRPC method in the context")
	}
	cc, err := s.fwd.conn(t.addr)
	if err != nil {
		return err
	}
	s.m.forwarded.WithLabelValues(methodLabel(method)).Inc()
	h := s.newHop(ctx, method)
	defer h.done()
	out := forwardContext(ctx, h.ctx)
	if err := cc.Invoke(out, method, req, resp); err != nil {
		return hopErr(h, err, t)
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(LeaderHeader, t.addr)) // a hint; a stream may refuse it
	return nil
}
