"""Exceptions of the metad client.

Every failure a call raises is a :class:`MetadError`. A rejection by the cluster is an instance of
the subclass for its wire reason (``metad.v1.Reason``), e.g. :class:`ObjectNotFound` for
``REASON_OBJECT_NOT_FOUND``, decoded from the ``metad.v1.ErrorDetail`` the server attaches to the
gRPC status; it carries the reason, tenant, key and (for :class:`NotLeader`) the leader named.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Type

import grpc

from metad.metadv1 import types_pb2

__all__ = [
    "MetadError", "ClientClosed", "BadResponse", "RepeatedKey", "OutcomeUnknown",
    "InvalidParams", "TenantNotRegistered", "TenantNotEmpty", "TenantQuotaExceeded", "ObjectNotFound",
    "ObjectAlreadyExists", "ObjectHasLease", "ReplicaIsNotReady", "InvalidWrite", "IllegalClient",
    "NoAvailableHandle", "SegmentNotFound", "NotLeader", "Unavailable", "SegmentOwnedByOtherClient",
    "TenantAlreadyExists", "StateReplaced", "MemberNotFound", "SessionExpired", "SequenceTooOld",
    "AuthRevisionStale", "KeyNotFound", "RoleNotFound", "KeyAlreadyExists", "AuthLimitExceeded",
    "NoReplicaOnSegment", "ResponseLimitReached", "ObjectHasReplicationTask",
    "ObjectNoReplicationTask", "ReplicaNotFound", "TaskNotFound", "TaskPendingLimitExceeded",
    "DrainNotFound", "SegmentDraining", "DrainNotRunning", "ReservationLost", "InvalidKey", "PermissionDenied",
    "Unauthenticated", "reason_name", "error_for", "item_error", "from_rpc_error",
]

# Metadata key of the serialized google.rpc.Status that carries a gRPC status's details.
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_DETAIL_TYPE = "type.googleapis.com/metad.v1.ErrorDetail"


def reason_name(reason: int) -> str:
    """The code clients and logs show for a reason: its name without the ``REASON_`` prefix
    (``OBJECT_NOT_FOUND``), ``OK`` for ``REASON_UNSPECIFIED``, or ``REASON_<n>`` for a number this
    package does not know."""
    if reason == types_pb2.REASON_UNSPECIFIED:
        return "OK"
    try:
        return str(types_pb2.Reason.Name(reason)).removeprefix("REASON_")
    except ValueError:
        return f"REASON_{reason}"


def _trim_reason(message: str, reason: int) -> str:
    """message without leading "NAME: " prefixes naming reason."""
    if reason == types_pb2.REASON_UNSPECIFIED:
        return message
    prefix = reason_name(reason) + ": "
    while message.startswith(prefix):
        message = message[len(prefix):]
    return message


class MetadError(Exception):
    """Base class of every error the client raises.

    Attributes:
        reason: the wire reason (a ``metad.v1.Reason`` value); ``REASON_UNSPECIFIED`` when the
            failure carried none (a local error, or a gRPC status without an ErrorDetail).
        message: the human-readable message, without a leading copy of the reason name.
        tenant: the tenant the request named, as the server reported it ("" if none).
        key: the object key the error is about (b"" if none).
        code: the gRPC status code, or None for an error of the client itself.
        attempts: how many attempts the call made (more than one means an earlier attempt may have
            taken effect).
        partial: for a batch call that failed as a whole, the results of the requests that
            succeeded before it (a prefix of the items, in the shape the call returns); else None.
    """

    reason: int = types_pb2.REASON_UNSPECIFIED

    def __init__(self, message: str = "", *, tenant: str = "", key: bytes = b"",
                 code: Optional[grpc.StatusCode] = None, reason: Optional[int] = None) -> None:
        if reason is not None:
            self.reason = reason
        self.message = _trim_reason(message, self.reason)
        self.tenant = tenant
        self.key = key
        self.code = code
        self.attempts = 0
        self.partial: Optional[object] = None
        super().__init__(self.message)

    def __str__(self) -> str:
        name = reason_name(self.reason)
        if self.reason == types_pb2.REASON_UNSPECIFIED:
            name = self.code.name if self.code is not None else ""
        if name and self.message:
            return f"{name}: {self.message}"
        return name or self.message


class ClientClosed(MetadError):
    """A call was made on a closed client."""


class BadResponse(MetadError):
    """A server's answer broke the API contract (a batch answer with the wrong number of results)."""


class RepeatedKey(MetadError, ValueError):
    """A batch write named a key twice; nothing was sent."""


class OutcomeUnknown(MetadError):
    """The last attempt ended without an answer: its node fell silent (the attempt watchdog gave up
    on it) or the call's timeout ran out while it was in flight. A write may or may not have taken
    effect; read back to know. ``code`` is UNAVAILABLE for a silent node and DEADLINE_EXCEEDED or
    CANCELLED for the caller's own limit."""


class InvalidParams(MetadError):
    """Input breaks a rule of the API (gRPC InvalidArgument)."""
    reason = types_pb2.REASON_INVALID_PARAMS


class InvalidKey(InvalidParams, ValueError):
    """An object key breaks the key rule (1..4096 bytes, no NUL byte); nothing was sent. Raised by
    the client before any call, with ``attempts`` 0; the message names the key as the server would
    ("key: NUL byte at 3", "keys[2]: key: length 0 not in 1..4096")."""


class Unauthenticated(MetadError):
    """The cluster accepts none of the call's credentials (gRPC UNAUTHENTICATED): no client
    certificate or API key (a plaintext client of a TLS listener), or an unknown, revoked or
    expired API key. Never retried."""


class PermissionDenied(MetadError):
    """The caller is authenticated and its roles do not allow the call (gRPC PERMISSION_DENIED
    without a wire reason; IllegalClient and SegmentOwnedByOtherClient have reasons of their own).
    Never retried."""


class TenantNotRegistered(MetadError):
    """A write named a tenant that is not registered (or is being unregistered)."""
    reason = types_pb2.REASON_TENANT_NOT_REGISTERED


class TenantNotEmpty(MetadError):
    """unregister_tenant without force on a tenant that still has objects."""
    reason = types_pb2.REASON_TENANT_NOT_EMPTY


class TenantQuotaExceeded(MetadError):
    """A put would exceed the tenant's effective quota even after eviction."""
    reason = types_pb2.REASON_TENANT_QUOTA_EXCEEDED


class ObjectNotFound(MetadError):
    """The key is absent."""
    reason = types_pb2.REASON_OBJECT_NOT_FOUND


class ObjectAlreadyExists(MetadError):
    """put_start of a key that exists (in any group)."""
    reason = types_pb2.REASON_OBJECT_ALREADY_EXISTS


class ObjectHasLease(MetadError):
    """A removal without force of an object under a read lease."""
    reason = types_pb2.REASON_OBJECT_HAS_LEASE


class ReplicaIsNotReady(MetadError):
    """The object has no COMPLETE replica (get) or still has a PROCESSING one (remove)."""
    reason = types_pb2.REASON_REPLICA_IS_NOT_READY


class InvalidWrite(MetadError):
    """put_end/put_revoke with no write in progress."""
    reason = types_pb2.REASON_INVALID_WRITE


class IllegalClient(MetadError):
    """put_end/put_revoke by a client other than the writer."""
    reason = types_pb2.REASON_ILLEGAL_CLIENT


class NoAvailableHandle(MetadError):
    """Placement found no segment with room for even one memory replica."""
    reason = types_pb2.REASON_NO_AVAILABLE_HANDLE


class SegmentNotFound(MetadError):
    """The named segment is not mounted."""
    reason = types_pb2.REASON_SEGMENT_NOT_FOUND


class NotLeader(MetadError):
    """The node was not the leader and could not forward. ``leader_name`` and ``leader_address``
    name the leader when it knew one. The client follows such hints itself; this surfaces only when
    its retries ran out."""
    reason = types_pb2.REASON_NOT_LEADER

    def __init__(self, message: str = "", *, leader_name: str = "", leader_address: str = "",
                 **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.leader_name = leader_name
        self.leader_address = leader_address


class Unavailable(MetadError):
    """No quorum, a node shutting down, or no node reachable; the client retried until its retries
    or the call's timeout ran out."""
    reason = types_pb2.REASON_UNAVAILABLE


class SegmentOwnedByOtherClient(MetadError):
    """mount_segment/unmount_segment of a segment id mounted by another client."""
    reason = types_pb2.REASON_SEGMENT_OWNED_BY_OTHER_CLIENT


class TenantAlreadyExists(MetadError):
    """register_tenant of a name that is already registered."""
    reason = types_pb2.REASON_TENANT_ALREADY_EXISTS


class StateReplaced(MetadError):
    """A snapshot restore replaced the state a prepared change was made against; nothing changed."""
    reason = types_pb2.REASON_STATE_REPLACED


class MemberNotFound(MetadError):
    """A membership call named a member that is not in the cluster's configuration."""
    reason = types_pb2.REASON_MEMBER_NOT_FOUND


class SessionExpired(MetadError):
    """The request's session is unknown or expired; nothing was done."""
    reason = types_pb2.REASON_SESSION_EXPIRED


class SequenceTooOld(MetadError):
    """The request's sequence number is below its session's acknowledged floor or past its window."""
    reason = types_pb2.REASON_SEQUENCE_TOO_OLD


class AuthRevisionStale(MetadError):
    """The request was authorized against an auth state that has since changed; nothing was done.
    The server authorizes it again and retries; this surfaces only when those retries ran out."""
    reason = types_pb2.REASON_AUTH_REVISION_STALE


class KeyNotFound(MetadError):
    """revoke_key of a key id that is not recorded."""
    reason = types_pb2.REASON_KEY_NOT_FOUND


class RoleNotFound(MetadError):
    """revoke_role of a binding the principal does not have."""
    reason = types_pb2.REASON_ROLE_NOT_FOUND


class KeyAlreadyExists(MetadError):
    """create_key drew a key id that is already recorded."""
    reason = types_pb2.REASON_KEY_ALREADY_EXISTS


class AuthLimitExceeded(MetadError):
    """create_key or grant_role past a limit of the auth state."""
    reason = types_pb2.REASON_AUTH_LIMIT_EXCEEDED


class NoReplicaOnSegment(MetadError):
    """batch_replica_clear of an object with no COMPLETE replica on the segments cleared."""
    reason = types_pb2.REASON_NO_REPLICA_ON_SEGMENT


class ResponseLimitReached(MetadError):
    """A batch_get item the server did not look up because its response reached its size bound;
    the client asks for such items again, so a caller sees it only from a raw response."""
    reason = types_pb2.REASON_RESPONSE_LIMIT_REACHED


class ObjectHasReplicationTask(MetadError):
    """A copy or move of the object is in progress: remove, upsert_start and another copy or move
    are refused until it ends."""
    reason = types_pb2.REASON_OBJECT_HAS_REPLICATION_TASK


class ObjectNoReplicationTask(MetadError):
    """copy_end, copy_revoke, move_end or move_revoke with no copy or move of the object in
    progress."""
    reason = types_pb2.REASON_OBJECT_NO_REPLICATION_TASK


class ReplicaNotFound(MetadError):
    """copy_start or move_start: the source segment holds no COMPLETE replica of the object."""
    reason = types_pb2.REASON_REPLICA_NOT_FOUND


class TaskNotFound(MetadError):
    """No task has that id."""
    reason = types_pb2.REASON_TASK_NOT_FOUND


class TaskPendingLimitExceeded(MetadError):
    """Creating the task would take the pending tasks past their bound."""
    reason = types_pb2.REASON_TASK_PENDING_LIMIT_EXCEEDED


class DrainNotFound(MetadError):
    """No drain job has that id (never started, or finished and no longer kept)."""
    reason = types_pb2.REASON_DRAIN_NOT_FOUND


class SegmentDraining(MetadError):
    """A running drain job drains the segment already."""
    reason = types_pb2.REASON_SEGMENT_DRAINING


class DrainNotRunning(MetadError):
    """The drain job is done or cancelled."""
    reason = types_pb2.REASON_DRAIN_NOT_RUNNING


class ReservationLost(MetadError):
    """PutEnd of a write whose reservation did not survive a leader change: place it again."""
    reason = types_pb2.REASON_RESERVATION_LOST


_REASON_CLASSES: Tuple[Type[MetadError], ...] = (
    InvalidParams, TenantNotRegistered, TenantNotEmpty, TenantQuotaExceeded, ObjectNotFound,
    ObjectAlreadyExists, ObjectHasLease, ReplicaIsNotReady, InvalidWrite, IllegalClient,
    NoAvailableHandle, SegmentNotFound, NotLeader, Unavailable, SegmentOwnedByOtherClient,
    TenantAlreadyExists, StateReplaced, MemberNotFound, SessionExpired, SequenceTooOld,
    AuthRevisionStale, KeyNotFound, RoleNotFound, KeyAlreadyExists, AuthLimitExceeded, NoReplicaOnSegment,
    ResponseLimitReached, ObjectHasReplicationTask, ObjectNoReplicationTask, ReplicaNotFound, TaskNotFound,
    TaskPendingLimitExceeded, DrainNotFound, SegmentDraining, DrainNotRunning, ReservationLost)
_BY_REASON: Dict[int, Type[MetadError]] = {cls.reason: cls for cls in _REASON_CLASSES}


def error_for(reason: int, message: str = "", *, tenant: str = "", key: bytes = b"",
              code: Optional[grpc.StatusCode] = None) -> MetadError:
    """The exception for a wire reason: an instance of its subclass, or of MetadError itself
    (with that reason) for a reason this package does not know."""
    cls = _BY_REASON.get(reason)
    if cls is None:
        return MetadError(message, tenant=tenant, key=key, code=code, reason=reason)
    return cls(message, tenant=tenant, key=key, code=code)


def item_error(status: types_pb2.Status) -> Optional[MetadError]:
    """None for a successful batch item status, else the exception for its reason."""
    if status.reason == types_pb2.REASON_UNSPECIFIED:
        return None
    return error_for(status.reason, status.message)


# Minimal protobuf wire decoding of google.rpc.Status (code = 1, message = 2, details = 3) and
# google.protobuf.Any (type_url = 1, value = 2), so that no googleapis package is needed.

def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> Sequence[Tuple[int, object]]:
    """The (field number, value) pairs of a message: ints for varints, bytes for length-delimited
    fields; fixed-width fields are skipped."""
    out: List[Tuple[int, object]] = []
    i = 0
    while i < len(buf):
        tag, i = _varint(buf, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = _varint(buf, i)
            out.append((num, v))
        elif wt == 2:
            n, i = _varint(buf, i)
            out.append((num, buf[i:i + n]))
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
    return out


def error_detail(details: bytes) -> Optional[types_pb2.ErrorDetail]:
    """The metad.v1.ErrorDetail among the details of a serialized google.rpc.Status, or None."""
    try:
        for num, v in _fields(details):
            if num != 3 or not isinstance(v, bytes):
                continue
            any_fields = dict(_fields(v))
            url, value = any_fields.get(1, b""), any_fields.get(2, b"")
            if isinstance(url, bytes) and url.decode("utf-8", "replace") == _ERROR_DETAIL_TYPE \
                    and isinstance(value, bytes):
                d: types_pb2.ErrorDetail = types_pb2.ErrorDetail.FromString(value)
                return d
    except Exception:  # a malformed detail is treated as absent
        return None
    return None


def from_rpc_error(err: grpc.RpcError, trailing: Optional[Sequence[Tuple[str, object]]] = None) -> MetadError:
    """The typed exception for a failed gRPC call: by the ErrorDetail's reason when the status
    carries one, Unavailable for a bare UNAVAILABLE status (a connection error), InvalidParams for a
    bare INVALID_ARGUMENT, Unauthenticated for UNAUTHENTICATED, PermissionDenied for a bare
    PERMISSION_DENIED, OutcomeUnknown for DEADLINE_EXCEEDED and CANCELLED, and MetadError with the
    gRPC code otherwise."""
    code: Optional[grpc.StatusCode] = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else None
    message = details or ""
    if trailing is None:
        trailing = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    detail: Optional[types_pb2.ErrorDetail] = None
    for k, v in trailing or ():
        if k == _STATUS_DETAILS_KEY and isinstance(v, bytes):
            detail = error_detail(v)
            break
    if detail is not None and detail.reason != types_pb2.REASON_UNSPECIFIED:
        e = error_for(detail.reason, message, tenant=detail.tenant, key=detail.key, code=code)
        if isinstance(e, NotLeader):
            e.leader_name = detail.leader_name
            e.leader_address = detail.leader_address
        return e
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(message, code=code)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidParams(message, code=code)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return Unauthenticated(message, code=code)
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return PermissionDenied(message, code=code)
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return OutcomeUnknown(message, code=code)
    return MetadError(message, code=code)
