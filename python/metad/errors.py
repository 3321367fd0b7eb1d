"""Exceptions of the metad client.

Every failure a call raises is a :class:`MetadError`. A rejection by the cluster is an instance of
the class of its wire reason (``metad.v1.Reason``), e.g. :class:`ObjectNotFound` for
``REASON_OBJECT_NOT_FOUND``, decoded from the ``metad.v1.ErrorDetail`` the server attaches to the
gRPC status; it carries the reason, tenant, key, (for the :class:`Unavailable` kind, NOT_LEADER)
the leader named and (for a refused watch) the revision. Each reason's class (generated into
:mod:`metad._reasons` from the enum by ``tools/gen_reasons.py``) is a subclass of its kind, one per
gRPC status code the cluster answers with: :class:`InvalidArgument`, :class:`NotFound`,
:class:`AlreadyExists`, :class:`Conflict` (FAILED_PRECONDITION), :class:`ResourceExhausted`,
:class:`PermissionDenied`, :class:`Unauthenticated`, :class:`Unavailable` and :class:`Aborted`; so
``except metad.NotFound`` catches every not-found reason, and ``except metad.MetadError`` every
failure.
"""

from __future__ import annotations

import warnings
from typing import List, Optional, Sequence, Set, Tuple, Union

import grpc

from metad import _reasons, results
from metad._watch import Revision
from metad._kinds import KINDS as KINDS
from metad._kinds import Kind as Kind
from metad._kinds import (Aborted, AlreadyExists, Conflict, InvalidArgument, MetadError, NotFound, PermissionDenied,
                          ResourceExhausted, Unauthenticated, Unavailable, reason_name)
from metad._reasons import *  # noqa: F401,F403  (the class of every reason)
from metad._reasons import BY_REASON as BY_REASON
from metad._reasons import InvalidParams
from metad.metadv1 import types_pb2

__all__ = [
    "MetadError", "InvalidArgument", "NotFound", "AlreadyExists", "Conflict", "ResourceExhausted",
    "PermissionDenied", "Unauthenticated", "Unavailable", "Aborted",
    "ClientClosed", "BadResponse", "RepeatedKey", "OutcomeUnknown", "InvalidKey",
    "reason_name", "error_for", "item_error", "from_rpc_error",
]
__all__ += _reasons.__all__

# Metadata key of the serialized google.rpc.Status that carries a gRPC status's details.
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_DETAIL_TYPE = "type.googleapis.com/metad.v1.ErrorDetail"


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


class InvalidKey(InvalidParams, ValueError):
    """An object key breaks the key rule (1..4096 bytes, no NUL byte); nothing was sent. Raised by
    the client before any call, with ``attempts`` 0; the message names the key as the server would
    ("key: NUL byte at 3", "keys[2]: key: length 0 not in 1..4096")."""


def error_for(reason: int, message: str = "", *, tenant: str = "", key: bytes = b"",
              code: Optional[grpc.StatusCode] = None) -> MetadError:
    """The exception for a wire reason: an instance of its subclass, or of MetadError itself
    (with that reason) for a reason this package does not know."""
    cls = BY_REASON.get(reason)
    if cls is None:
        _warn_unknown(reason)
        return MetadError(message, tenant=tenant, key=key, code=code, reason=reason)
    return cls(message, tenant=tenant, key=key, code=code)


_warned_reasons: Set[int] = set()


def _warn_unknown(reason: int) -> None:
    """Warn, once per reason, of an answer whose reason this package does not know: a member of a
    newer release than the client's."""
    if reason in _warned_reasons:
        return
    _warned_reasons.add(reason)
    warnings.warn(f"metad: a member answered reason {reason}, which this client does not know: the cluster runs "
                  "a newer release than this client, which should be upgraded", RuntimeWarning, stacklevel=3)


def item_error(status: Union[results.Status, types_pb2.Status]) -> Optional[MetadError]:
    """None for a successful batch item status (a :class:`metad.Status` or its message), else
    the exception for its reason."""
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
        if isinstance(e, Unavailable):
            e.leader_name = detail.leader_name
            e.leader_address = detail.leader_address
        if detail.HasField("revision"):
            e.revision = Revision.from_pb(detail.revision)
        if detail.retry_after_ms:
            e.retry_after = detail.retry_after_ms / 1000
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
