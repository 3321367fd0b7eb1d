"""Client sessions (exactly-once writes).

The rules of the pool are checked against a fake channel that records every request and answers
by a script: a retried write keeps its header, consecutive writes are numbered, a first attempt's
SESSION_EXPIRED reopens once, UNIMPLEMENTED and ``no_session`` write without a header, and a full
pool opens at most four sessions and then waits. The cluster's side is checked on the real cluster:
a put_start sent twice with one header is answered twice with the same replicas.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import grpc
import grpc.aio
import pytest

import metad
from cluster import Cluster
from metad import _core as core
from metad.metadv1 import admin_pb2, metadata_pb2, metadata_pb2_grpc, types_pb2

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


def _details(reason: int) -> bytes:
    """A serialized google.rpc.Status whose one detail is a metad.v1.ErrorDetail of reason."""
    detail = types_pb2.ErrorDetail(reason=reason).SerializeToString()  # type: ignore[arg-type]
    return _ld(3, _ld(1, b"type.googleapis.com/metad.v1.ErrorDetail") + _ld(2, detail))


class FakeError(grpc.RpcError):  # type: ignore[misc]
    """A failed call: a gRPC code, and a wire reason when not REASON_UNSPECIFIED."""

    def __init__(self, code: grpc.StatusCode, reason: int = types_pb2.REASON_UNSPECIFIED) -> None:
        super().__init__()
        self._code = code
        self._reason = reason

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "scripted"

    def trailing_metadata(self) -> List[Tuple[str, bytes]]:
        if self._reason == types_pb2.REASON_UNSPECIFIED:
            return []
        return [("grpc-status-details-bin", _details(self._reason))]


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

    def result(self) -> Any:
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
    its empty response, except as fail says: fail(method, request, n) returns a FakeError to
    raise, or None."""

    def __init__(self, window: int = 64, fail: Optional[Callable[[str, Any, int], Optional[FakeError]]] = None,
                 open_error: Optional[FakeError] = None) -> None:
        self.window = window
        self.fail = fail
        self.open_error = open_error

    def __call__(self, method: str, req: Any, n: int) -> Any:
        if method == "OpenSession":
            if self.open_error is not None:
                raise self.open_error
            return metadata_pb2.OpenSessionResponse(session_id=n + 1, ttl_ms=300_000, window=self.window)
        if self.fail is not None:
            err = self.fail(method, req, n)
            if err is not None:
                raise err
        return _RESPONSES[method]()


_RESPONSES: Dict[str, Any] = {
    "PutEnd": metadata_pb2.PutEndResponse, "PutStart": metadata_pb2.PutStartResponse,
    "Remove": metadata_pb2.RemoveResponse, "RemoveAll": metadata_pb2.RemoveAllResponse,
    "Get": metadata_pb2.GetResponse, "BatchRemove": metadata_pb2.BatchRemoveResponse,
    "SetQuota": admin_pb2.SetQuotaResponse, "PutRevoke": metadata_pb2.PutRevokeResponse,
}


def header(req: Any) -> Optional[Tuple[int, int, int]]:
    """(session_id, seq, first_unacked_seq) of req's header, None when it carries none."""
    if "session" not in req.DESCRIPTOR.fields_by_name or not req.HasField("session"):
        return None
    h = req.session
    return h.session_id, h.seq, h.first_unacked_seq


UNAVAILABLE = FakeError(grpc.StatusCode.UNAVAILABLE)
EXPIRED = FakeError(grpc.StatusCode.FAILED_PRECONDITION, types_pb2.REASON_SESSION_EXPIRED)

# ---------------------------------------------------------------------------------------------
# The pool's rules, on the fake.


def test_requests_that_take_a_header() -> None:
    """Read from the descriptors: the writes with a session field, and no other request."""
    takes = {d.name for m in (metadata_pb2, admin_pb2) for d in m.DESCRIPTOR.message_types_by_name.values()
             if core.takes_session(getattr(m, d.name)())}
    assert {"PutStartRequest", "PutEndRequest", "RemoveRequest", "RemoveGroupRequest", "BatchPutStartRequest",
            "BatchRemoveRequest", "MountSegmentRequest", "RegisterTenantRequest", "SetQuotaRequest"} <= takes
    for name in ("RemoveAllRequest", "GetRequest", "PingRequest", "OpenSessionRequest"):
        assert name not in takes


def test_retry_keeps_the_header_and_calls_are_numbered(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first attempt of the first PutEnd fails (its answer lost); the retry goes elsewhere.
    c, srv = fake_client(monkeypatch, Script(fail=lambda m, r, n: UNAVAILABLE if m == "PutEnd" and n == 0 else None))
    with c:
        c.put_end("a")
        c.put_end("b")
        c.get("a")
        c.remove_all()
        c.put_end("c")
    puts = srv.sent("PutEnd")
    assert [header(r) for _, r in puts] == [(1, 1, 1), (1, 1, 1), (1, 2, 2), (1, 3, 3)]
    assert puts[0][0] != puts[1][0], "the retry went to another endpoint"
    assert len(srv.sent("OpenSession")) == 1
    assert header(srv.sent("RemoveAll")[0][1]) is None


def test_first_attempt_session_expired_opens_a_new_session(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(
        fail=lambda m, r, n: EXPIRED if m == "Remove" and r.session.session_id == 1 else None))
    with c:
        c.remove("k")
        c.remove("k2")
    assert [header(r) for _, r in srv.sent("Remove")] == [(1, 1, 1), (2, 1, 1), (2, 2, 2)]
    assert len(srv.sent("OpenSession")) == 2


def test_later_session_expired_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    # An earlier attempt may have applied: the outcome is unknown, so no new session and no retry.
    c, srv = fake_client(monkeypatch, Script(
        fail=lambda m, r, n: (UNAVAILABLE if n == 0 else EXPIRED) if m == "Remove" else None))
    with c:
        with pytest.raises(metad.SessionExpired) as ei:
            c.remove("k")
        assert ei.value.attempts == 2
    assert [header(r) for _, r in srv.sent("Remove")] == [(1, 1, 1), (1, 1, 1)]
    assert len(srv.sent("OpenSession")) == 1


def test_unimplemented_writes_without_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(open_error=FakeError(grpc.StatusCode.UNIMPLEMENTED)))
    with c:
        c.put_end("a")
        c.set_quota("t", 1)
        c.put_end("b")
    assert [header(r) for _, r in srv.sent("PutEnd")] == [None, None]
    assert header(srv.sent("SetQuota")[0][1]) is None
    assert len(srv.sent("OpenSession")) == 1


def test_open_error_is_raised_with_no_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(open_error=FakeError(grpc.StatusCode.PERMISSION_DENIED)))
    with c:
        with pytest.raises(metad.MetadError) as ei:
            c.put_end("a")
    assert ei.value.code == grpc.StatusCode.PERMISSION_DENIED and ei.value.attempts == 0
    assert srv.sent("PutEnd") == []


def test_no_session_sends_no_header(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(), no_session=True)
    with c:
        c.put_end("a")
        c.remove("a")
    assert srv.sent("OpenSession") == []
    assert [header(r) for _, r in srv.sent("PutEnd") + srv.sent("Remove")] == [None, None]


def test_no_session_recovers_a_retried_put_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without a session a retried put_start that meets OBJECT_ALREADY_EXISTS revokes its own
    # pending write and places the object again; within one it raises the error.
    exists = FakeError(grpc.StatusCode.ALREADY_EXISTS, types_pb2.REASON_OBJECT_ALREADY_EXISTS)

    def fail(m: str, r: Any, n: int) -> Optional[FakeError]:
        if m == "PutStart":
            return [UNAVAILABLE, exists, None][n]
        return None
    c, srv = fake_client(monkeypatch, Script(fail=fail), no_session=True)
    with c:
        c.put_start("k", 10)
    assert [m for _, m, _ in srv.log] == ["PutStart", "PutStart", "PutRevoke", "PutStart"]
    c, srv = fake_client(monkeypatch, Script(fail=lambda m, r, n: [UNAVAILABLE, exists][n] if m == "PutStart" else None))
    with c:
        with pytest.raises(metad.ObjectAlreadyExists):
            c.put_start("k", 10)
    assert [m for _, m, _ in srv.log] == ["OpenSession", "PutStart", "PutStart"]


def test_full_windows_open_up_to_four_sessions_then_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()

    def fail(m: str, r: Any, n: int) -> Optional[FakeError]:
        if m == "PutEnd" and n < 4:
            gate.wait(5)  # the first four writes stay in flight, one per window
        return None
    c, srv = fake_client(monkeypatch, Script(window=1, fail=fail))
    with c:
        threads = [threading.Thread(target=c.put_end, args=(f"k{i}",)) for i in range(5)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 5
        while len(srv.sent("PutEnd")) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert len(srv.sent("PutEnd")) == 4, "the fifth write waits for a number"
        assert len(srv.sent("OpenSession")) == 4
        gate.set()
        for t in threads:
            t.join()
    heads = [header(r) or (0, 0, 0) for _, r in srv.sent("PutEnd")]
    assert sorted(h[:2] for h in heads[:4]) == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert heads[4][1:] == (2, 2), "the fifth write took the next number of a session"
    assert len(srv.sent("OpenSession")) == 4


def test_async_client_follows_the_same_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(m: str, r: Any, n: int) -> Optional[FakeError]:
        if m == "PutEnd" and n == 0:
            return UNAVAILABLE
        if m == "Remove" and r.session.session_id == 1:
            return EXPIRED
        return None

    async def main() -> FakeServer:
        c, srv = fake_aio_client(monkeypatch, Script(fail=fail))
        async with c:
            await c.put_end("a")
            await c.put_end("b")
            await c.remove("a")
            await c.remove_all()
        return srv
    srv = asyncio.run(main())
    assert [header(r) for _, r in srv.sent("PutEnd")] == [(1, 1, 1), (1, 1, 1), (1, 2, 2)]
    assert [header(r) for _, r in srv.sent("Remove")] == [(1, 3, 3), (2, 1, 1)]
    assert header(srv.sent("RemoveAll")[0][1]) is None
    assert len(srv.sent("OpenSession")) == 2

    async def off() -> FakeServer:
        c, srv = fake_aio_client(monkeypatch, Script(), no_session=True)
        async with c:
            await c.put_end("a")
        return srv
    srv = asyncio.run(off())
    assert srv.sent("OpenSession") == [] and header(srv.sent("PutEnd")[0][1]) is None


# ---------------------------------------------------------------------------------------------
# The cluster's side.


@pytest.fixture()
def stub(cluster: Cluster, client: metad.Client) -> Iterator[Any]:
    ch = grpc.insecure_channel(cluster.leader(client).client)
    try:
        yield metadata_pb2_grpc.MetadataStub(ch)  # type: ignore[no-untyped-call]
    finally:
        ch.close()


def test_put_start_twice_with_one_header_is_answered_twice(stub: Any, client: metad.Client) -> None:
    """A retry of an applied put_start (its answer lost) gets the replicas placed, not
    OBJECT_ALREADY_EXISTS; the same request without a header does meet it."""
    sid = stub.OpenSession(metadata_pb2.OpenSessionRequest(client_id=client.client_id), timeout=10).session_id
    key = f"sess-{uuid.uuid4().hex[:12]}".encode()
    req = metadata_pb2.PutStartRequest(client_id=client.client_id, key=key, size=512,
                                       session=types_pb2.SessionHeader(session_id=sid, seq=1, first_unacked_seq=1))
    first = stub.PutStart(req, timeout=10)
    again = stub.PutStart(req, timeout=10)
    assert list(first.replicas) and list(again.replicas) == list(first.replicas)
    req.ClearField("session")
    with pytest.raises(grpc.RpcError) as ei:
        stub.PutStart(req, timeout=10)
    assert isinstance(metad.errors.from_rpc_error(ei.value), metad.ObjectAlreadyExists)
    client.put_revoke(key)


def test_clients_write_in_sessions_on_the_cluster(cluster: Cluster, client: metad.Client) -> None:
    """Writes in sessions and without work alike on the real cluster, sync and asyncio."""
    k = f"sess-{uuid.uuid4().hex[:12]}"
    client.put(k, 64)
    client.remove(k, force=True)
    with metad.Client(cluster.endpoints, metad.Config(timeout=10.0, no_session=True)) as plain:
        plain.put(k, 64)
        plain.remove(k, force=True)

    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=10.0)) as a:
            await asyncio.gather(*(a.put(f"{k}-{i}", 64) for i in range(100)))
            assert all((await a.batch_exist([f"{k}-{i}" for i in range(100)])).exists)
            await a.batch_remove([f"{k}-{i}" for i in range(100)], force=True)
    asyncio.run(main())


class DropFirstAnswer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Lets the first call of method reach the cluster, waits for its answer and reports
    UNAVAILABLE instead: an answer lost after the write applied. The answer is kept in lost."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.lost: Any = None
        self.requests: List[Any] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if not details.method.endswith("/" + self.method):
            return continuation(details, request)
        cp = type(request)()
        cp.CopyFrom(request)
        self.requests.append(cp)
        fut = continuation(details, request)
        if self.lost is not None:
            return fut
        self.lost = fut.result()

        def fail() -> Any:
            raise UNAVAILABLE
        return FakeFuture(fail)


def test_lost_put_start_answer_is_answered_again(cluster: Cluster, client: metad.Client,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A put_start whose answer is lost is retried with its header and gets the replicas placed."""
    drop = DropFirstAnswer("PutStart")

    def dial(addr: str) -> Any:
        return grpc.intercept_channel(grpc.insecure_channel(addr, options=core.CHANNEL_OPTIONS), drop)
    monkeypatch.setattr(metad.Client, "_dial", staticmethod(dial))
    key = f"lost-{uuid.uuid4().hex[:12]}"
    with metad.Client(cluster.endpoints, metad.Config(timeout=10.0, client_id=client.client_id)) as c:
        reps = c.put_start(key, 256)
        assert list(drop.lost.replicas) == reps
        assert len(drop.requests) == 2 and header(drop.requests[0]) == header(drop.requests[1]) is not None
        c.put_revoke(key)
