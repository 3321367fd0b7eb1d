package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"metad/store"
)

// Forwarding: any node accepts any request; a follower passes a call that must run on the leader
// (writes, linearizable reads, membership changes) to the leader's client address as the same RPC,
// and returns the leader's answer unchanged. The forwarded call carries forwardedKey; a node that
// receives a forwarded call while not leader answers NOT_LEADER instead of forwarding it again, so
// a call crosses at most one hop and never loops while the cluster's view of the leader settles.

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
	mu     sync.Mutex // guards conns and closed; a leaf: nothing is acquired while it is held
	conns  map[string]*grpc.ClientConn
	closed bool
}

func newForwarder() *forwarder { return &forwarder{conns: make(map[string]*grpc.ClientConn)} }

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
		grpc.WithTransportCredentials(insecure.NewCredentials()),
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

// isForwarded reports whether the incoming call was forwarded by another node.
func isForwarded(ctx context.Context) bool {
	md, ok := metadata.FromIncomingContext(ctx)
	return ok && len(md.Get(forwardedKey)) > 0
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
	if s.b.IsLeader() {
		return target{local: true}, nil
	}
	name, addr := s.b.Leader()
	if isForwarded(ctx) || addr == "" {
		return target{}, notLeaderStatus(name, addr)
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
	out := metadata.AppendToOutgoingContext(ctx, forwardedKey, "1")
	if err := cc.Invoke(out, method, req, resp); err != nil {
		return forwardErr(err, t.name, t.addr)
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(LeaderHeader, t.addr)) // a hint; a stream may refuse it
	return nil
}

// onLeader runs local on the leader, or forwards req to the leader and returns its answer.
func onLeader[Resp any, P interface {
	*Resp
	proto.Message
}](ctx context.Context, s *Server, req proto.Message, local func() (P, error)) (P, error) {
	t, err := s.leaderTarget(ctx)
	if err != nil {
		return nil, err
	}
	if t.local {
		return local()
	}
	resp := P(new(Resp))
	if err := s.forward(ctx, t, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// linearRead runs a read that is linearizable unless stale: a stale read runs here on this node's
// state; otherwise the leader confirms its leadership (ReadBarrier) and runs it, or the call is
// forwarded to the leader. read gets the store to read and whether it serves a linearizable read
// (and so may grant leases).
func linearRead[Resp any, P interface {
	*Resp
	proto.Message
}](ctx context.Context, s *Server, req proto.Message, stale bool, read func(st *store.Store, linear bool) (P, error)) (P, error) {
	if stale {
		return read(s.b.Store(), false)
	}
	return onLeader(ctx, s, req, func() (P, error) {
		if err := s.b.ReadBarrier(ctx); err != nil {
			return nil, toStatus(err, "", nil)
		}
		return read(s.b.Store(), true)
	})
}
