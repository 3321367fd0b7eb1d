package store

import (
	"errors"
	"fmt"
)

// Reason is the stable, machine-readable code of a rejected operation (SEMANTICS section 9). A
// rejection is deterministic: every replica applying the same command rejects it the same way, so it
// travels as a value (an *Error) and never as a panic or a Raft failure.
type Reason uint8

// The reasons. The zero value is OK; the order is part of no wire format (proto has its own enum and
// the FSM maps between the two in one table).
const (
	OK Reason = iota
	InvalidParams
	TenantNotRegistered
	TenantNotEmpty
	TenantQuotaExceeded
	TenantAlreadyExists
	ObjectNotFound
	ObjectAlreadyExists
	ObjectHasLease
	ReplicaIsNotReady
	InvalidWrite
	IllegalClient
	NoAvailableHandle
	SegmentNotFound
	SegmentOwnedByOtherClient
	StateReplaced
	MemberNotFound
	SessionExpired
	SequenceTooOld
	AuthRevisionStale
	KeyNotFound
	RoleNotFound
	KeyAlreadyExists
	AuthLimitExceeded
	NoReplicaOnSegment
	ResponseLimitReached
	ObjectHasReplicationTask
	ObjectNoReplicationTask
	ReplicaNotFound
	TaskNotFound
	TaskPendingLimitExceeded
	DrainNotFound
	SegmentDraining
	DrainNotRunning
	ReservationLost
	LearnerNotCaughtUp
	numReasons
)

var reasonNames = [numReasons]string{
	OK:                        "OK",
	InvalidParams:             "INVALID_PARAMS",
	TenantNotRegistered:       "TENANT_NOT_REGISTERED",
	TenantNotEmpty:            "TENANT_NOT_EMPTY",
	TenantQuotaExceeded:       "TENANT_QUOTA_EXCEEDED",
	TenantAlreadyExists:       "TENANT_ALREADY_EXISTS",
	ObjectNotFound:            "OBJECT_NOT_FOUND",
	ObjectAlreadyExists:       "OBJECT_ALREADY_EXISTS",
	ObjectHasLease:            "OBJECT_HAS_LEASE",
	ReplicaIsNotReady:         "REPLICA_IS_NOT_READY",
	InvalidWrite:              "INVALID_WRITE",
	IllegalClient:             "ILLEGAL_CLIENT",
	NoAvailableHandle:         "NO_AVAILABLE_HANDLE",
	SegmentNotFound:           "SEGMENT_NOT_FOUND",
	SegmentOwnedByOtherClient: "SEGMENT_OWNED_BY_OTHER_CLIENT",
	StateReplaced:             "STATE_REPLACED",
	MemberNotFound:            "MEMBER_NOT_FOUND",
	SessionExpired:            "SESSION_EXPIRED",
	SequenceTooOld:            "SEQUENCE_TOO_OLD",
	AuthRevisionStale:         "AUTH_REVISION_STALE",
	KeyNotFound:               "KEY_NOT_FOUND",
	RoleNotFound:              "ROLE_NOT_FOUND",
	KeyAlreadyExists:          "KEY_ALREADY_EXISTS",
	AuthLimitExceeded:         "AUTH_LIMIT_EXCEEDED",
	NoReplicaOnSegment:        "NO_REPLICA_ON_SEGMENT",
	ResponseLimitReached:      "RESPONSE_LIMIT_REACHED",
	ObjectHasReplicationTask:  "OBJECT_HAS_REPLICATION_TASK",
	ObjectNoReplicationTask:   "OBJECT_NO_REPLICATION_TASK",
	ReplicaNotFound:           "REPLICA_NOT_FOUND",
	TaskNotFound:              "TASK_NOT_FOUND",
	TaskPendingLimitExceeded:  "TASK_PENDING_LIMIT_EXCEEDED",
	DrainNotFound:             "DRAIN_NOT_FOUND",
	SegmentDraining:           "SEGMENT_DRAINING",
	DrainNotRunning:           "DRAIN_NOT_RUNNING",
	ReservationLost:           "RESERVATION_LOST",
	LearnerNotCaughtUp:        "LEARNER_NOT_CAUGHT_UP",
}

// String returns the reason's stable upper-case name.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("REASON(%d)", uint8(r))
}

// Reasons lists every reason, OK included, in declaration order (for mapping tables and their tests).
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// Error is a deterministic rejection: a reason plus a message naming the tenant and key where there is
// one. Compare with errors.Is against the ErrXxx sentinels below, or read Reason with ReasonOf.
type Error struct {
	Reason Reason
	Msg    string
}

func (e *Error) Error() string { return e.Reason.String() + ": " + e.Msg }

// Is reports whether target is an *Error with the same reason, so errors.Is(err, ErrObjectNotFound)
// matches any OBJECT_NOT_FOUND whatever its message.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Reason == e.Reason
}

// Sentinels for errors.Is; their messages are generic, the errors the store returns carry details.
var (
	ErrInvalidParams             = &Error{InvalidParams, "invalid parameters"}
	ErrTenantNotRegistered       = &Error{TenantNotRegistered, "tenant not registered"}
	ErrTenantNotEmpty            = &Error{TenantNotEmpty, "tenant not empty"}
	ErrTenantQuotaExceeded       = &Error{TenantQuotaExceeded, "tenant quota exceeded"}
	ErrTenantAlreadyExists       = &Error{TenantAlreadyExists, "tenant already registered"}
	ErrObjectNotFound            = &Error{ObjectNotFound, "object not found"}
	ErrObjectAlreadyExists       = &Error{ObjectAlreadyExists, "object already exists"}
	ErrObjectHasLease            = &Error{ObjectHasLease, "object has a lease"}
	ErrReplicaIsNotReady         = &Error{ReplicaIsNotReady, "replica is not ready"}
	ErrInvalidWrite              = &Error{InvalidWrite, "invalid write"}
	ErrIllegalClient             = &Error{IllegalClient, "illegal client"}
	ErrNoAvailableHandle         = &Error{NoAvailableHandle, "no available handle"}
	ErrSegmentNotFound           = &Error{SegmentNotFound, "segment not found"}
	ErrSegmentOwnedByOtherClient = &Error{SegmentOwnedByOtherClient, "segment owned by another client"}
	ErrMemberNotFound            = &Error{MemberNotFound, "member not found"}
	ErrObjectHasReplicationTask  = &Error{ObjectHasReplicationTask, "object has a replication task"}
	ErrObjectNoReplicationTask   = &Error{ObjectNoReplicationTask, "object has no replication task"}
	ErrReplicaNotFound           = &Error{ReplicaNotFound, "replica not found"}
)

// ErrUnlinkPending is returned by the leader's linearizable reads and removal preparation when the
// object is marked for unlink: its removal or eviction has been proposed and its outcome is not
// known yet. It is no rejection: the caller reads again shortly (the mark goes when the proposal
// commits or fails). Answering "not found" instead would be wrong whenever the proposal fails.
var ErrUnlinkPending = errors.New("store: the object's removal is being committed; read again")

// ReasonOf returns the reason of err: OK for nil, the *Error's reason, or InvalidParams for any other
// error (the store returns no other kind).
func ReasonOf(err error) Reason {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return InvalidParams
}

func errf(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// objErr builds an error naming the tenant and key.
func objErr(r Reason, tenant, key, what string) *Error {
	return &Error{Reason: r, Msg: fmt.Sprintf("tenant %q key %q: %s", tenant, key, what)}
}
