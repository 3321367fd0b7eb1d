package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store"
	"metad/watch"
	"metad/wire"
)

// This file is the one place where errors become gRPC statuses. Every status the services return
// is built here, and every one that carries a reason has a metadv1.ErrorDetail attached.

// errNoLeader is the message when this node is not the leader and knows of none.
const errNoLeader = "not the leader, and no leader is known (election in progress or no quorum)"

// mapReason gives a store reason's wire reason and gRPC code; ok is false for a reason this
// table does not know (a test checks every store.Reason is here).
func mapReason(r store.Reason) (wr metadv1.Reason, code codes.Code, ok bool) {
	wr, ok = wire.ReasonTo(r)
	if !ok {
		return wr, codes.Internal, false
	}
	switch r {
	case store.OK:
		code = codes.OK
	case store.InvalidParams:
		code = codes.InvalidArgument
	case store.TenantNotRegistered, store.ObjectNotFound, store.SegmentNotFound, store.MemberNotFound,
		store.KeyNotFound, store.RoleNotFound, store.ReplicaNotFound, store.TaskNotFound, store.DrainNotFound:
		code = codes.NotFound
	case store.TenantNotEmpty, store.ObjectHasLease, store.ReplicaIsNotReady, store.InvalidWrite,
		store.SessionExpired, store.SequenceTooOld, store.NoReplicaOnSegment, store.ObjectHasReplicationTask, store.ObjectNoReplicationTask,
		store.SegmentDraining, store.DrainNotRunning, store.LearnerNotCaughtUp:
		code = codes.FailedPrecondition
	case store.TenantQuotaExceeded, store.NoAvailableHandle, store.AuthLimitExceeded, store.ResponseLimitReached, store.TaskPendingLimitExceeded:
		code = codes.ResourceExhausted
	case store.TenantAlreadyExists, store.ObjectAlreadyExists, store.KeyAlreadyExists:
		code = codes.AlreadyExists
	case store.IllegalClient, store.SegmentOwnedByOtherClient:
		code = codes.PermissionDenied
	case store.StateReplaced:
		code = codes.Unavailable
	case store.AuthRevisionStale: // the service authorizes again and retries; a client may retry too
		code = codes.Aborted
	case store.ReservationLost: // the client places the object again (PutStart, write, PutEnd)
		code = codes.Aborted
	default:
		return wr, codes.Internal, false
	}
	return wr, code, true
}

// withDetail builds a status carrying an ErrorDetail.
func withDetail(code codes.Code, msg string, d *metadv1.ErrorDetail) error {
	st := status.New(code, msg)
	if sd, err := st.WithDetails(d); err == nil {
		st = sd
	}
	return st.Err()
}

// reasonStatus is the status of a rejection: reason r with message msg, about tenant and key.
func reasonStatus(r store.Reason, msg, tenant string, key []byte) error {
	wire, code, ok := mapReason(r)
	if !ok {
		return status.Errorf(codes.Internal, "unmapped store reason %s: %s", r, msg)
	}
	if code == codes.OK {
		return nil
	}
	return withDetail(code, msg, &metadv1.ErrorDetail{Reason: wire, Tenant: tenant, Key: key})
}

// undecodableStatus is the status of a request that does not decode: INVALID_PARAMS naming the
// string field that is not UTF-8 when there is one (field), else the decoder's complaint.
func undecodableStatus(field string, err error) error {
	msg := "request: does not decode: " + err.Error()
	if field != "" {
		msg = field + ": not valid UTF-8 (a string field must be)"
	}
	return reasonStatus(store.InvalidParams, store.InvalidParams.String()+": "+msg, "", nil)
}

// notLeaderStatus is NOT_LEADER naming the leader, or UNAVAILABLE when no leader is known.
func notLeaderStatus(name, addr string) error {
	if addr == "" {
		return withDetail(codes.Unavailable, errNoLeader,
			&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_UNAVAILABLE})
	}
	return withDetail(codes.Unavailable, fmt.Sprintf("not the leader; the leader is %s at %s", name, addr),
		&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_NOT_LEADER, LeaderName: name, LeaderAddress: addr})
}

// leaderSilentStatus is UNAVAILABLE from a follower that has not heard from its leader recently and
// so does not forward: it names no leader, so that the client tries another node rather than the
// one that stopped answering.
func leaderSilentStatus(name string) error {
	return unavailableStatus(fmt.Sprintf("not the leader, and the leader %s has not been heard from within a heartbeat timeout "+
		"(an election is likely under way); nothing was forwarded", name))
}

// unavailableStatus is UNAVAILABLE with a message.
func unavailableStatus(msg string) error {
	return withDetail(codes.Unavailable, msg, &metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_UNAVAILABLE})
}

// toStatus translates any error a service meets into a status: store rejections by reason,
// membership refusals (package ha) as MEMBER_NOT_FOUND or INVALID_PARAMS, Raft failures (package
// ha) into NOT_LEADER or UNAVAILABLE, authentication and authorization failures (package service)
// into UNAUTHENTICATED and PERMISSION_DENIED, rate limits (package service) into RESOURCE_EXHAUSTED
// with RATE_LIMITED and the retry-after, context errors into their codes, and statuses (from a
// forwarded call) unchanged. A *service.Error's tenant and key go into the ErrorDetail.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var tenant string
	var key []byte
	var fe *service.Error
	if errors.As(err, &fe) {
		tenant, key = fe.Tenant, fe.Key
	}
	var se *store.Error
	if errors.As(err, &se) {
		return reasonStatus(se.Reason, se.Error(), tenant, key)
	}
	var (
		rl  *service.RateLimitedError
		nl  *ha.NotLeaderError
		mnf *ha.MemberNotFoundError
		im  *ha.InvalidMemberError
		wc  *watch.CompactedError
		wf  *watch.FellBehindError
		wr  *watch.ResetError
	)
	switch {
	case errors.As(err, &rl):
		return withDetail(codes.ResourceExhausted, rl.Error(), &metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_RATE_LIMITED,
			RetryAfterMs: uint64(max(rl.RetryAfter.Milliseconds(), 1))})
	case errors.As(err, &wc):
		return watchStatus(metadv1.Reason_REASON_WATCH_COMPACTED, wc.Error(), wc.Oldest)
	case errors.As(err, &wf):
		return watchStatus(metadv1.Reason_REASON_WATCH_FELL_BEHIND, wf.Error(), wf.Resume)
	case errors.As(err, &wr):
		return withDetail(codes.Unavailable, wr.Error(), &metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_STATE_REPLACED,
			Revision: &metadv1.Revision{Index: wr.Index + 1}})
	case errors.Is(err, watch.ErrClosed):
		return unavailableStatus(err.Error())
	case errors.As(err, &mnf):
		return reasonStatus(store.MemberNotFound, mnf.Error(), tenant, key)
	case errors.As(err, &im):
		return reasonStatus(store.InvalidParams, im.Error(), tenant, key)
	case errors.As(err, &nl):
		return notLeaderStatus(nl.LeaderName, nl.LeaderAddr)
	case errors.Is(err, ha.ErrNotLeader):
		return notLeaderStatus("", "")
	case errors.Is(err, ha.ErrUnknown):
		return unavailableStatus("the outcome is unknown (leadership was lost after the command was sent); check before retrying: " + err.Error())
	case errors.Is(err, ha.ErrTimeout):
		return unavailableStatus("the outcome is unknown: " + err.Error())
	case errors.Is(err, service.ErrForward):
		return notLeaderStatus("", "")
	case errors.Is(err, service.ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, service.ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, service.ErrInternal):
		return status.Error(codes.Internal, err.Error())
	case errors.Is(err, service.ErrUnimplemented):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, ha.ErrFeatureLevel):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, ha.ErrShutdown):
		return unavailableStatus(err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Error(codes.Unknown, err.Error())
}

// watchStatus is the status of a watch that cannot go on from where it is: FAILED_PRECONDITION
// with the reason and the revision it names.
func watchStatus(r metadv1.Reason, msg string, rev watch.Rev) error {
	return withDetail(codes.FailedPrecondition, msg, &metadv1.ErrorDetail{Reason: r,
		Revision: &metadv1.Revision{Index: rev.Index, Position: rev.Pos}})
}

// forwardErr translates the error of a call forwarded to the leader. The leader's own answers
// pass through unchanged; a transport failure (Unavailable with no ErrorDetail) becomes NOT_LEADER
// naming the leader, so the client can go there itself.
func forwardErr(err error, leaderName, leaderAddr string) error {
	st, ok := status.FromError(err)
	if !ok {
		return toStatus(err)
	}
	if st.Code() != codes.Unavailable || len(st.Details()) > 0 {
		return st.Err()
	}
	return withDetail(codes.Unavailable,
		fmt.Sprintf("not the leader; forwarding to the leader %s at %s failed: %s", leaderName, leaderAddr, st.Message()),
		&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_NOT_LEADER, LeaderName: leaderName, LeaderAddress: leaderAddr})
}

// unimplementedStatus answers the snapshot RPCs.
func unimplementedStatus(what string) error {
	return status.Errorf(codes.Unimplemented, "%s through the API is not implemented yet: snapshots through the API come later; use the snapshot files in the data directory", what)
}

// internalStatus reports a broken expectation (a result of the wrong shape).
func internalStatus(format string, args ...any) error {
	return status.Errorf(codes.Internal, format, args...)
}

// plaintextStatus is the answer to each call of a plaintext client on a TLS listener (tlscreds.go):
// it has no credentials at all.
func plaintextStatus() *status.Status { return status.New(codes.Unauthenticated, PlaintextRefusal) }
