"""The error classes: one per wire reason, each under its kind, so that every refusal reaches the
caller as its class and ``except metad.NotFound`` (a kind) catches every not-found reason."""

import os
import sys

import grpc
import pytest

import metad
from fake import FakeError, Script, fake_client
from metad import errors, types_pb2


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import gen_reasons  # noqa: E402
from genlib import GenError  # noqa: E402

REASONS = [(name, value) for name, value in types_pb2.Reason.items() if value != types_pb2.REASON_UNSPECIFIED]

# The exception names users' code catches: each stays importable from metad and metad.errors.
NAMES = """
MetadError ClientClosed BadResponse RepeatedKey OutcomeUnknown InvalidParams TenantNotRegistered TenantNotEmpty
TenantQuotaExceeded ObjectNotFound ObjectAlreadyExists ObjectHasLease ReplicaIsNotReady InvalidWrite IllegalClient
NoAvailableHandle SegmentNotFound NotLeader Unavailable SegmentOwnedByOtherClient TenantAlreadyExists StateReplaced
MemberNotFound SessionExpired SequenceTooOld AuthRevisionStale KeyNotFound RoleNotFound KeyAlreadyExists
AuthLimitExceeded NoReplicaOnSegment ResponseLimitReached ObjectHasReplicationTask ObjectNoReplicationTask
ReplicaNotFound TaskNotFound TaskPendingLimitExceeded DrainNotFound SegmentDraining DrainNotRunning ReservationLost
InvalidKey PermissionDenied Unauthenticated RateLimited
""".split()


def test_generated_reasons_are_current() -> None:
    """metad/_reasons.py is what tools/gen_reasons.py writes from the enum: a reason added to the
    proto without a kind in gen_reasons.KIND, or a stale file, fails here."""
    with open(gen_reasons.OUT, encoding="utf-8") as f:
        assert f.read() == gen_reasons.generate(), "run python3 python/tools/gen_reasons.py"


def test_the_generator_refuses_a_reason_without_a_kind() -> None:
    docs = {n: "doc" for n in gen_reasons.KIND}
    values = gen_reasons.reasons()
    with pytest.raises(GenError, match="no kind for REASON_BRAND_NEW"):
        gen_reasons.render(values + [("BRAND_NEW", 99)], {**docs, "BRAND_NEW": "doc"})
    with pytest.raises(GenError, match="does not have"):
        gen_reasons.render(values[1:], docs)
    with pytest.raises(GenError, match="no comment"):
        gen_reasons.render(values, {**docs, values[0][0]: ""})


def test_every_reason_maps_to_exactly_one_class() -> None:
    classes = [errors.BY_REASON[value] for _, value in REASONS]
    assert len(set(classes)) == len(REASONS) == len(errors.BY_REASON)
    for (name, value), cls in zip(REASONS, classes):
        assert cls.reason == value and cls.__name__ == gen_reasons.class_name(name.removeprefix("REASON_"))
        e = errors.error_for(value, "m")
        assert type(e) is cls and e.reason == value and str(e) == f"{metad.reason_name(value)}: m"
    with pytest.warns(RuntimeWarning, match="reason 999, which this client does not know") as seen:
        assert type(errors.error_for(999, "m")) is metad.MetadError and errors.error_for(999).reason == 999
    assert len(seen) == 1  # once per reason


def test_every_class_is_under_its_kind() -> None:
    codes = [k.grpc_code for k in errors.KINDS]
    assert len(set(codes)) == len(codes)
    for name, value in REASONS:
        cls = errors.BY_REASON[value]
        kinds = [k for k in errors.KINDS if issubclass(cls, k)]
        assert [k.__name__ for k in kinds] == [gen_reasons.KIND[name.removeprefix("REASON_")]], name
        assert issubclass(cls, errors.Kind) and issubclass(cls, metad.MetadError)
        assert cls.__module__ == "metad.errors" and getattr(metad.errors, cls.__name__) is cls
    assert issubclass(metad.NotLeader, metad.Unavailable) and issubclass(metad.ObjectNotFound, metad.NotFound)
    assert issubclass(metad.ObjectHasLease, metad.Conflict) and issubclass(metad.InvalidKey, metad.InvalidArgument)
    assert issubclass(metad.IllegalClient, metad.PermissionDenied)


def test_every_known_name_is_importable() -> None:
    for n in NAMES + [k.__name__ for k in errors.KINDS]:
        cls = getattr(metad, n)
        assert cls is getattr(metad.errors, n) and issubclass(cls, metad.MetadError) and n in metad.__all__, n
    assert sorted(set(metad.__all__)) == sorted(metad.__all__)


def test_except_a_kind_catches_its_reasons() -> None:
    with pytest.raises(metad.NotFound) as ei:
        raise errors.from_rpc_error(FakeError(grpc.StatusCode.NOT_FOUND, types_pb2.REASON_DRAIN_NOT_FOUND))
    assert type(ei.value) is metad.DrainNotFound
    e = errors.from_rpc_error(FakeError(grpc.StatusCode.UNAVAILABLE, types_pb2.REASON_NOT_LEADER, "10.0.0.2:1"))
    assert isinstance(e, metad.Unavailable) and type(e) is metad.NotLeader and e.leader_address == "10.0.0.2:1"
    bare = errors.from_rpc_error(FakeError(grpc.StatusCode.UNAVAILABLE))
    assert type(bare) is metad.Unavailable and bare.reason == types_pb2.REASON_UNAVAILABLE


def test_only_the_unavailable_reason_fails_over() -> None:
    """Of the Unavailable kind, the reason UNAVAILABLE (and the bare status) moves the call to the
    next endpoint, NOT_LEADER redirects, and STATE_REPLACED is raised as before."""
    from metad import _core as core
    for reason, act in ((types_pb2.REASON_UNAVAILABLE, core.FAILOVER), (types_pb2.REASON_UNSPECIFIED, core.FAILOVER),
                        (types_pb2.REASON_NOT_LEADER, core.FAILOVER), (types_pb2.REASON_STATE_REPLACED, core.STOP)):
        e = errors.from_rpc_error(FakeError(grpc.StatusCode.UNAVAILABLE, reason))
        assert core.classify(e, "10.0.0.1:1")[0] == act, reason


def test_drain_reasons() -> None:
    for reason, cls in ((types_pb2.REASON_DRAIN_NOT_FOUND, errors.DrainNotFound),
                        (types_pb2.REASON_SEGMENT_DRAINING, errors.SegmentDraining),
                        (types_pb2.REASON_DRAIN_NOT_RUNNING, errors.DrainNotRunning)):
        assert isinstance(errors.error_for(reason, "m"), cls)


def test_put_places_again_after_reservation_lost() -> None:
    """A put whose put_end raises ReservationLost (nothing was created) places the object again,
    up to 3 placements; a fourth is not made and the error is raised."""
    from metad import _core as core
    from metad import _ops as ops
    from metad import metadata_pb2

    def drive(lost: int) -> list[str]:
        op = ops.put(b"c" * 16, "", "k", 8, None, lambda: False)
        calls: list[str] = []
        rpc = next(op)
        try:
            while True:
                calls.append(rpc.method)
                if rpc.method == "PutEnd" and lost > 0:
                    lost -= 1
                    rpc = op.throw(errors.error_for(types_pb2.REASON_RESERVATION_LOST, "lost"))
                else:
                    rpc = op.send(core.Reply(metadata_pb2.PutStartResponse(), 1))
        except StopIteration:
            return calls
        except errors.ReservationLost:
            calls.append("raised")
            return calls

    assert drive(1) == ["PutStart", "PutEnd", "PutStart", "PutEnd"]
    assert drive(3) == ["PutStart", "PutEnd"] * 3 + ["raised"]


def test_authentication_and_permission_refusals_have_classes() -> None:
    """A bare UNAUTHENTICATED or PERMISSION_DENIED status (the server's refusals of credentials and
    of roles carry no wire reason) is Unauthenticated or PermissionDenied; a PERMISSION_DENIED with a
    reason stays that reason's class."""
    e = errors.from_rpc_error(FakeError(grpc.StatusCode.UNAUTHENTICATED))
    assert type(e) is metad.Unauthenticated and e.code == grpc.StatusCode.UNAUTHENTICATED
    e = errors.from_rpc_error(FakeError(grpc.StatusCode.PERMISSION_DENIED))
    assert type(e) is metad.PermissionDenied and isinstance(e, metad.MetadError)
    assert str(e) == "PERMISSION_DENIED: scripted"
    e = errors.from_rpc_error(FakeError(grpc.StatusCode.PERMISSION_DENIED, types_pb2.REASON_ILLEGAL_CLIENT))
    assert type(e) is metad.IllegalClient


def test_refusals_are_raised_without_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    for code, cls in ((grpc.StatusCode.PERMISSION_DENIED, metad.PermissionDenied),
                      (grpc.StatusCode.UNAUTHENTICATED, metad.Unauthenticated)):
        c, srv = fake_client(monkeypatch, Script(fail=lambda m, r, n: FakeError(code) if m == "Get" else None))
        with c, pytest.raises(cls) as ei:
            c.get("k")
        assert ei.value.attempts == 1 and len(srv.sent("Get")) == 1


def test_rate_limited_is_raised_with_its_retry_after_and_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call over its principal's rate limit is RateLimited, a ResourceExhausted, with the
    retry-after the server named in seconds; the client does not retry it (a retry would spend the
    limit the caller is over)."""
    limited = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, types_pb2.REASON_RATE_LIMITED, retry_after_ms=250)
    c, srv = fake_client(monkeypatch, Script(fail=lambda m, r, n: limited if m == "Get" else None))
    with c, pytest.raises(metad.RateLimited) as ei:
        c.get("k")
    assert isinstance(ei.value, metad.ResourceExhausted) and ei.value.retry_after == 0.25
    assert ei.value.attempts == 1 and len(srv.sent("Get")) == 1
    assert errors.from_rpc_error(FakeError(grpc.StatusCode.NOT_FOUND, types_pb2.REASON_OBJECT_NOT_FOUND)).retry_after is None
