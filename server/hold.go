package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	metadv1 "metad/proto/metadv1"
	"metad/tlsconf"
)

// Held refusals. A call refused for who made it (UNAUTHENTICATED) or for its principal's rate
// limits (RESOURCE_EXHAUSTED, RATE_LIMITED) is answered after a hold (Config.RefusalHold; for
// RATE_LIMITED at most its retry-after, which the answer then counts from its end). A client
// that waits out its retry-after waits no longer than it did, and one that asks again at once
// (an abusive or broken one) asks at most once per hold per call it keeps open, instead of as
// fast as the member can refuse: a refusal costs the member as much as a small call, so an
// unheld refusal loop is a load without a limit. A held refusal costs a timer and its stream
// (which counts against the caller's own connection's stream bound); at most maxHeldRefusals are
// held at once, past which refusals are answered at once. A call a member forwarded is answered
// at once: the member the client called holds the refusal, once.

// maxHeldRefusals bounds the refusals held at once on a member: their goroutines and streams,
// about 8 KiB each, so 32 MiB in all.
const maxHeldRefusals = 4096

// holdRefusal holds err (a call's outcome) when it is a refusal to hold, until the hold ends or
// ctx does, and returns what the caller is to answer: err, with a RATE_LIMITED retry-after less
// the hold.
func (s *Server) holdRefusal(ctx context.Context, err error) error {
	if err == nil || s.cfg.RefusalHold <= 0 {
		return err
	}
	d, out := refusalHold(err, s.cfg.RefusalHold)
	if d <= 0 || s.forwardedByMember(ctx) {
		return err // the member the client called holds it
	}
	select {
	case s.held <- struct{}{}:
	default:
		s.m.refusalsHeld.WithLabelValues("full").Inc()
		return err
	}
	defer func() { <-s.held }()
	s.m.refusalsHeld.WithLabelValues("held").Inc()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return out
}

// forwardedByMember reports whether the call in ctx is one a member forwarded (on its own
// connection, with its member certificate, while it speaks for the cluster).
func (s *Server) forwardedByMember(ctx context.Context) bool {
	if !isForwarded(ctx) {
		return false
	}
	p, _ := peer.FromContext(ctx)
	ci, ok := peerAuthInfo(p).(connInfo)
	if !ok {
		return false
	}
	ca := ci.auth
	ca.once.Do(func() { ca.identify(p) })
	return ca.idErr == nil && ca.id.Kind == tlsconf.Member && s.memberStanding(ca) == nil
}

// refusalHold returns how long to hold err under a hold of at most limit (0: not a refusal held)
// and the error to answer after it.
func refusalHold(err error, limit time.Duration) (time.Duration, error) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, err
	}
	switch st.Code() {
	case codes.Unauthenticated:
		return limit, err
	case codes.ResourceExhausted:
	default:
		return 0, err
	}
	p := st.Proto()
	for i, a := range p.GetDetails() {
		var d metadv1.ErrorDetail
		if a.UnmarshalTo(&d) != nil || d.GetReason() != metadv1.Reason_REASON_RATE_LIMITED {
			continue
		}
		after := time.Duration(d.GetRetryAfterMs()) * time.Millisecond
		hold := min(after, limit)
		d.RetryAfterMs = uint64(max(after-hold, time.Millisecond).Milliseconds()) // >= 1 ms, as every RATE_LIMITED answers
		na, aerr := anypb.New(&d)
		if aerr != nil {
			return 0, err
		}
		p.Details[i] = na
		return hold, status.FromProto(p).Err()
	}
	return 0, err // RESOURCE_EXHAUSTED of another kind (a message too large)
}
