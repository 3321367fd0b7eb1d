"""The client's log, on the scripted fake: the ``metad`` logger records failovers and redirects
(INFO), retries with their reason and attempt (DEBUG), attempts the watchdog abandoned and calls
given up (WARNING); by default nothing is printed."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from typing import Any, Callable, List, Optional, Tuple

import grpc
import pytest

import metad
from cluster import free_ports
from fake import UNAVAILABLE, FakeChannel, FakeError, FakeFuture, FakeMultiCallable, FakeServer, Script, \
    fake_aio_client, fake_client
from metad.metadv1 import types_pb2

HERE = os.path.dirname(os.path.abspath(__file__))


def records(caplog: pytest.LogCaptureFixture) -> List[Tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("metad")]


def first_fails(err: FakeError, method: str = "Get") -> Callable[[str, Any, int], Optional[FakeError]]:
    return lambda m, r, n: err if m == method and n == 0 else None


def test_failover_and_retry_are_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="metad")
    c, _ = fake_client(monkeypatch, Script(fail=first_fails(UNAVAILABLE)))
    with c:
        c.get("k")
    got = records(caplog)
    assert ("metad", logging.INFO,
            "failover: calls move from 10.0.0.1:1 to 10.0.0.2:1 after UNAVAILABLE: scripted") in got
    retries = [m for _, lvl, m in got if lvl == logging.DEBUG]
    assert len(retries) == 1 and retries[0].startswith("Get: attempt 1 at 10.0.0.1:1 failed: UNAVAILABLE: scripted; "
                                                       "retrying in "), retries


def test_redirect_is_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="metad")
    not_leader = FakeError(grpc.StatusCode.FAILED_PRECONDITION, types_pb2.REASON_NOT_LEADER, "10.0.0.3:1")
    c, srv = fake_client(monkeypatch, Script(fail=first_fails(not_leader)))
    with c:
        c.get("k")
    assert [a for a, _ in srv.sent("Get")] == ["10.0.0.1:1", "10.0.0.3:1"]
    got = records(caplog)
    assert ("metad", logging.INFO, "redirect: calls move from 10.0.0.1:1 to 10.0.0.3:1, named leader by NOT_LEADER") in got
    assert ("metad", logging.DEBUG, "Get: attempt 1 at 10.0.0.1:1 failed: NOT_LEADER: scripted; retrying at once") in got


def test_a_call_given_up_is_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="metad")
    c, _ = fake_client(monkeypatch, Script(fail=lambda m, r, n: UNAVAILABLE if m == "Get" else None), max_retries=2)
    with c:
        with pytest.raises(metad.Unavailable):
            c.get("k")
        warnings = [m for _, lvl, m in records(caplog) if lvl == logging.WARNING]
        assert warnings == ["Get: giving up after 3 attempts (no retries left): UNAVAILABLE: scripted"]
        caplog.clear()
        # A rejection is no retry and no failover: nothing is logged.
        c2, _ = fake_client(monkeypatch, Script(fail=lambda m, r, n: FakeError(
            grpc.StatusCode.NOT_FOUND, types_pb2.REASON_OBJECT_NOT_FOUND) if m == "Get" else None))
        with c2, pytest.raises(metad.ObjectNotFound):
            c2.get("k")
        assert records(caplog) == []


class _Hang:
    """A call future that never finishes until cancelled: result(timeout) times out at once."""

    def __init__(self) -> None:
        self.cbs: List[Callable[[Any], None]] = []
        self.cancelled = False

    def done(self) -> bool:
        return self.cancelled

    def add_done_callback(self, cb: Callable[[Any], None]) -> None:
        self.cbs.append(cb)

    def cancel(self) -> bool:
        self.cancelled = True
        for cb in self.cbs:
            cb(self)
        return True

    def result(self, timeout: Optional[float] = None) -> Any:
        if not self.cancelled:
            raise grpc.FutureTimeoutError()
        raise grpc.FutureCancelledError()


class _SilentFirst(FakeMultiCallable):
    """10.0.0.1 never answers a call, and its health check fails as a silent node's does."""

    def __init__(self, server: FakeServer, addr: str, path: str) -> None:
        super().__init__(server, addr, path)
        self._path = path

    def future(self, req: Any, timeout: Optional[float] = None) -> Any:
        if self._addr != "10.0.0.1:1":
            return super().future(req, timeout)
        if self._path == "/grpc.health.v1.Health/Check":
            def fail() -> Any:
                raise FakeError(grpc.StatusCode.DEADLINE_EXCEEDED)
            return FakeFuture(fail)
        return _Hang()


class _SilentChannel(FakeChannel):
    def unary_unary(self, path: str, request_serializer: Any = None,
                    response_deserializer: Any = None) -> FakeMultiCallable:
        return _SilentFirst(self._server, self._addr, path)


def test_an_abandoned_attempt_is_logged(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="metad")
    server = FakeServer(Script())
    monkeypatch.setattr(metad.Client, "_dial", staticmethod(lambda addr: _SilentChannel(server, addr)))
    cfg = metad.Config(endpoints=["10.0.0.1:1", "10.0.0.2:1"], attempt_timeout=0.05, timeout=5.0)
    with metad.Client(config=cfg) as c:
        c.get("k")
        assert c.leader() == "10.0.0.2:1"
    got = records(caplog)
    assert ("metad", logging.WARNING, "Get: attempt 1 abandoned: UNAVAILABLE: 10.0.0.1:1 stopped answering "
            "(no health answer within 0.025s); the outcome is unknown") in got, got
    assert any(lvl == logging.INFO and m.startswith("failover: calls move from 10.0.0.1:1 to 10.0.0.2:1")
               for _, lvl, m in got), got


def test_async_client_logs_alike(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="metad")
    a, _ = fake_aio_client(monkeypatch, Script(fail=first_fails(UNAVAILABLE)))

    async def main() -> None:
        async with a:
            await a.get("k")
    asyncio.run(main())
    got = records(caplog)
    assert ("metad", logging.INFO,
            "failover: calls move from 10.0.0.1:1 to 10.0.0.2:1 after UNAVAILABLE: scripted") in got
    assert any(lvl == logging.DEBUG and m.startswith("Get: attempt 1 at 10.0.0.1:1 failed: UNAVAILABLE")
               for _, lvl, m in got), got


def test_nothing_is_printed_by_default() -> None:
    """The package logger has a NullHandler and no level of its own (debug is off unless the
    application turns it on); a process that configures no logging prints nothing, not even the
    WARNING of a call given up (logging's last-resort handler would print it without the
    NullHandler)."""
    log = logging.getLogger("metad")
    assert any(isinstance(h, logging.NullHandler) for h in log.handlers)
    assert log.level == logging.NOTSET
    port, = free_ports(1)
    script = f"""
import logging, metad
c = metad.Client(["127.0.0.1:{port}"], metad.Config(max_retries=0, timeout=10))
try:
    c.exists("k")
except metad.Unavailable:
    pass
else:
    raise SystemExit("no error")
assert not logging.getLogger("metad").isEnabledFor(logging.DEBUG)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=HERE)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == "", (r.returncode, r.stderr, r.stdout)
