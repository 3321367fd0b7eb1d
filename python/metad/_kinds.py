"""The base of every error of the client (:class:`MetadError`) and the kinds of refusal, one per
gRPC status code the cluster answers a refusal with: :class:`InvalidArgument`, :class:`NotFound`,
:class:`AlreadyExists`, :class:`Conflict`, :class:`ResourceExhausted`, :class:`PermissionDenied`,
:class:`Unauthenticated`, :class:`Unavailable` and :class:`Aborted`. The class of each wire reason
(:mod:`metad._reasons`, generated) is a subclass of its kind, so ``except metad.NotFound`` catches
every not-found reason. Users import these from :mod:`metad` or :mod:`metad.errors`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Optional, Tuple, Type

import grpc

from metad.metadv1 import types_pb2

if TYPE_CHECKING:
    from metad._watch import Revision


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
        revision: the watch revision a refusal of a watch is about (a :class:`metad.Revision`):
            the oldest the member retains (WatchCompacted), where the stream had reached
            (WatchFellBehind), or right after the snapshot that replaced the member's state
            (StateReplaced); else None.
        retry_after: the seconds the cluster asked the caller to wait before calling again
            (RateLimited: its principal is over a rate limit on the member it called); else None.
    """

    __module__ = "metad.errors"
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
        self.revision: Optional[Revision] = None
        self.retry_after: Optional[float] = None
        super().__init__(self.message)

    def __str__(self) -> str:
        name = reason_name(self.reason)
        if self.reason == types_pb2.REASON_UNSPECIFIED:
            name = self.code.name if self.code is not None else ""
        if name and self.message:
            return f"{name}: {self.message}"
        return name or self.message


class Kind(MetadError):
    """Base class of the kinds of refusal; ``grpc_code`` is the gRPC status code the cluster
    answers every reason of the kind with."""

    __module__ = "metad.errors"
    grpc_code: ClassVar[grpc.StatusCode]


class InvalidArgument(Kind):
    """The request breaks a rule of the API (gRPC INVALID_ARGUMENT); not retried."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(Kind):
    """What the request names does not exist: an object, tenant, segment, member, API key, role
    binding, replica, task or drain job (gRPC NOT_FOUND)."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(Kind):
    """What the request would create exists already: an object, tenant or API key (gRPC
    ALREADY_EXISTS)."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.ALREADY_EXISTS


class Conflict(Kind):
    """The state of what the request names refuses it now: an object under a lease, being written
    or copied, a tenant with objects, an expired session, a segment being drained (gRPC
    FAILED_PRECONDITION). Going again succeeds only once that state has changed."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


class ResourceExhausted(Kind):
    """A bound was reached: a tenant's quota, the room of the segments, a limit of the auth state,
    of the pending tasks or of one response, or the caller's rate limits (gRPC RESOURCE_EXHAUSTED)."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class PermissionDenied(Kind):
    """The caller may not do this (gRPC PERMISSION_DENIED): its roles do not allow the call (a
    status without a wire reason, raised as this class itself), or the write or segment is another
    client's (:class:`IllegalClient`, :class:`SegmentOwnedByOtherClient`). Never retried."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(Kind):
    """The cluster accepts none of the call's credentials (gRPC UNAUTHENTICATED): no client
    certificate or API key (a plaintext client of a TLS listener), or an unknown, revoked or
    expired API key. Never retried."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.UNAUTHENTICATED


class Unavailable(Kind):
    """The cluster could not serve the call now (gRPC UNAVAILABLE). This class itself is the
    reason ``REASON_UNAVAILABLE`` and a status without a reason: no quorum, a node shutting down,
    or no node reachable, and the client retried until its retries or the call's timeout ran out.
    Its subclasses are :class:`NotLeader` (the client follows the leader named and retries; this
    surfaces only when the retries ran out) and :class:`StateReplaced`.

    Attributes:
        leader_name, leader_address: the leader the node named (NOT_LEADER), else "".
    """

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.UNAVAILABLE
    reason = types_pb2.REASON_UNAVAILABLE

    def __init__(self, message: str = "", *, leader_name: str = "", leader_address: str = "",
                 **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.leader_name = leader_name
        self.leader_address = leader_address


class Aborted(Kind):
    """A change elsewhere cut the call short and nothing was done (gRPC ABORTED): the auth state
    changed under it, or a leader change lost a write's reservation. Going again (the whole
    sequence, for a lost reservation) may succeed."""

    __module__ = "metad.errors"
    grpc_code = grpc.StatusCode.ABORTED


KINDS: Tuple[Type[Kind], ...] = (InvalidArgument, NotFound, AlreadyExists, Conflict, ResourceExhausted,
                                 PermissionDenied, Unauthenticated, Unavailable, Aborted)
"""Every kind, each named after its gRPC status code (FAILED_PRECONDITION is :class:`Conflict`)."""
