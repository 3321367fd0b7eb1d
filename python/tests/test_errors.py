"""The error classes: one per wire reason, so that every refusal reaches the caller as its class."""

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
