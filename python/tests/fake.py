"""A scripted fake of the cluster's channels, for tests of the clients' own rules: every request
the sync or asyncio client sends is recorded and answered by a handler, without a network."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, List, Optional, Tuple

import grpc
import grpc.aio
import pytest

import metad
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

ENDPOINTS = ["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"]

# ---------------------------------------------------------------------------------------------
# A scripted fake of the cluster's channels.


def _ld(num: int, b: bytes) -> bytes:
    """Field num of a protobuf message, length-delimited, holding b."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while True:
            if v < 0x80:
                out.append(v)
                return bytes(out)
            out.append((v & 0x7F) | 0x80)
            v >>= 7
    return varint((num << 3) | 2) + varint(len(b)) + b


def _details(reason: int, leader_address: str = "", retry_after_ms: int = 0) -> bytes:
    """A serialized google.rpc.Status whose one detail is a metad.v1.ErrorDetail of reason (naming
    leader_address as the leader, for NOT_LEADER, and the retry-after, for RATE_LIMITED)."""
    detail = types_pb2.ErrorDetail(reason=reason,  # type: ignore[arg-type]
                                   leader_address=leader_address, retry_after_ms=retry_after_ms).SerializeToString()
    return _ld(3, _ld(1, b"type.googleapis.com/metad.v1.ErrorDetail") + _ld(2, detail))


class FakeError(grpc.RpcError):  # type: ignore[misc]
    """A failed call: a gRPC code, and a wire reason when not REASON_UNSPECIFIED (with the leader
    it names, for NOT_LEADER, and the retry-after, for RATE_LIMITED)."""

    def __init__(self, code: grpc.StatusCode, reason: int = types_pb2.REASON_UNSPECIFIED,
                 leader_address: str = "", retry_after_ms: int = 0) -> None:
        super().__init__()
        self._code = code
        self._reason = reason
        self._leader = leader_address
        self._retry_after_ms = retry_after_ms

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "scripted"

    def trailing_metadata(self) -> List[Tuple[str, bytes]]:
        if self._reason == types_pb2.REASON_UNSPECIFIED:
            return []
        return [("grpc-status-details-bin", _details(self._reason, self._leader, self._retry_after_ms))]


Handler = Callable[[str, Any, int], Any]
"""Answers a request: (method name, request, how many requests of that method came before) ->
the response, or raises FakeError."""


class FakeServer:
    """Every request the fake channels carried, as (endpoint, method, copy of the request), and the
    script that answers them."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.mu = threading.Lock()
        self.log: List[Tuple[str, str, Any]] = []

    def answer(self, addr: str, method: str, req: Any) -> Any:
        with self.mu:
            n = sum(1 for _, m, _ in self.log if m == method)
            cp = type(req)()
            cp.CopyFrom(req)
            self.log.append((addr, method, cp))
        return self.handler(method, req, n)

    def sent(self, method: str) -> List[Tuple[str, Any]]:
        """(endpoint, request) of every request of method, in order."""
        with self.mu:
            return [(a, r) for a, m, r in self.log if m == method]


class FakeFuture:
    """A finished call, as the synchronous client's attempt sees it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._resp: Any = None
        self._err: Optional[BaseException] = None
        try:
            self._resp = fn()
        except FakeError as e:
            self._err = e

    def done(self) -> bool:
        return True

    def add_done_callback(self, cb: Callable[[Any], None]) -> None:
        cb(self)

    def cancel(self) -> bool:
        return False

    def result(self, timeout: Optional[float] = None) -> Any:
        if self._err is not None:
            raise self._err
        return self._resp

    def initial_metadata(self) -> List[Tuple[str, str]]:
        return []


class FakeMultiCallable:
    def __init__(self, server: FakeServer, addr: str, path: str) -> None:
        self._server, self._addr, self._method = server, addr, path.rsplit("/", 1)[-1]

    def future(self, req: Any, timeout: Optional[float] = None) -> FakeFuture:
        return FakeFuture(lambda: self._server.answer(self._addr, self._method, req))

    def __call__(self, req: Any, timeout: Optional[float] = None) -> "FakeAioCall":
        return FakeAioCall(self._server, self._addr, self._method, req)


class FakeAioCall:
    """One call of the asyncio client: awaitable for its response or its grpc.aio.AioRpcError."""

    def __init__(self, server: FakeServer, addr: str, method: str, req: Any) -> None:
        self._server, self._addr, self._method, self._req = server, addr, method, req

    async def _run(self) -> Any:
        await asyncio.sleep(0)
        try:
            return self._server.answer(self._addr, self._method, self._req)
        except FakeError as e:
            raise grpc.aio.AioRpcError(e.code(), grpc.aio.Metadata(), grpc.aio.Metadata(*e.trailing_metadata()),
                                       details=e.details()) from None

    def __await__(self) -> Any:
        return self._run().__await__()

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    async def initial_metadata(self) -> List[Tuple[str, str]]:
        return []


class FakeChannel:
    def __init__(self, server: FakeServer, addr: str) -> None:
        self._server, self._addr = server, addr

    def unary_unary(self, path: str, request_serializer: Any = None,
                    response_deserializer: Any = None) -> FakeMultiCallable:
        return FakeMultiCallable(self._server, self._addr, path)

    def close(self) -> None:
        pass


class FakeAioChannel(FakeChannel):
    async def close(self) -> None:  # type: ignore[override]
        pass


def fake_client(monkeypatch: pytest.MonkeyPatch, handler: Handler,
                **cfg: Any) -> Tuple[metad.Client, FakeServer]:
    server = FakeServer(handler)
    monkeypatch.setattr(metad.Client, "_dial", staticmethod(lambda addr: FakeChannel(server, addr)))
    config = metad.Config(endpoints=ENDPOINTS, attempt_timeout=None, retry_initial=0.001, retry_max=0.002,
                          timeout=5.0, **cfg)
    return metad.Client(config=config), server


def fake_aio_client(monkeypatch: pytest.MonkeyPatch, handler: Handler,
                    **cfg: Any) -> Tuple[metad.AsyncClient, FakeServer]:
    server = FakeServer(handler)
    monkeypatch.setattr(metad.AsyncClient, "_dial", staticmethod(lambda addr: FakeAioChannel(server, addr)))
    config = metad.Config(endpoints=ENDPOINTS, attempt_timeout=None, retry_initial=0.001, retry_max=0.002,
                          timeout=5.0, **cfg)
    return metad.AsyncClient(config=config), server


class Script:
    """A handler: OpenSession answers sessions 1, 2, ... with window; every other method answers
    its empty response (or what answer returns, when it returns anything but None), except as
    fail says: fail(method, request, n) returns a FakeError to raise, or None."""

    def __init__(self, window: int = 64, fail: Optional[Callable[[str, Any, int], Optional[FakeError]]] = None,
                 open_error: Optional[FakeError] = None,
                 answer: Optional[Callable[[str, Any, int], Any]] = None) -> None:
        self.window = window
        self.fail = fail
        self.open_error = open_error
        self.answer = answer

    def __call__(self, method: str, req: Any, n: int) -> Any:
        if method == "OpenSession":
            if self.open_error is not None:
                raise self.open_error
            return metadata_pb2.OpenSessionResponse(session_id=n + 1, ttl_ms=300_000, window=self.window)
        if self.fail is not None:
            err = self.fail(method, req, n)
            if err is not None:
                raise err
        if self.answer is not None:
            resp = self.answer(method, req, n)
            if resp is not None:
                return resp
        return empty_response(method)


def empty_response(method: str) -> Any:
    """The empty response of method of the Metadata or Admin service."""
    for module, service in ((metadata_pb2, "Metadata"), (admin_pb2, "Admin")):
        m = module.DESCRIPTOR.services_by_name[service].methods_by_name.get(method)
        if m is not None:
            return getattr(module, m.output_type.name)()
    raise KeyError(method)


def header(req: Any) -> Optional[Tuple[int, int, int]]:
    """(session_id, seq, first_unacked_seq) of req's header, None when it carries none."""
    if "session" not in req.DESCRIPTOR.fields_by_name or not req.HasField("session"):
        return None
    h = req.session
    return h.session_id, h.seq, h.first_unacked_seq


UNAVAILABLE = FakeError(grpc.StatusCode.UNAVAILABLE)
EXPIRED = FakeError(grpc.StatusCode.FAILED_PRECONDITION, types_pb2.REASON_SESSION_EXPIRED)
