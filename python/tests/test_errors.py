"""The error classes: one per wire reason, so that every refusal reaches the caller as its class."""

import grpc
import pytest

import metad
from fake import FakeError, Script, fake_client
from metad import errors, types_pb2


def test_every_reason_has_a_class() -> None:
    missing = [name for name, value in types_pb2.Reason.items()
               if value != types_pb2.REASON_UNSPECIFIED and value not in errors._BY_REASON]
    assert missing == []


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
