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
from typing import Any, Iterator, List, Optional

import grpc
import pytest

import metad
from cluster import Cluster
from fake import EXPIRED, UNAVAILABLE, FakeError, FakeFuture, FakeServer, Script, fake_aio_client, fake_client, header
from metad import _core as core
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

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
    assert [m for _, m, _ in srv.log] == ["OpenSession", "PutStart", "PutStart", "CloseSession"]


def test_close_ends_the_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    # close() ends every open session on the cluster (best effort: an error is not raised), once.
    c, srv = fake_client(monkeypatch, Script(window=1, fail=lambda m, r, n: UNAVAILABLE if m == "CloseSession" and n == 0 else None))
    c.put_end("a")
    c.close()
    c.close()
    assert [r.session_id for _, r in srv.sent("CloseSession")] == [1, 1], "one retried close of session 1"
    c, srv = fake_client(monkeypatch, Script(fail=lambda m, r, n: UNAVAILABLE if m == "CloseSession" else None))
    c.put_end("a")
    c.close()  # a cluster that never answers: the client still closes
    with pytest.raises(metad.ClientClosed):
        c.put_end("b")


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


def test_only_releasing_the_lowest_number_makes_room() -> None:
    pool = core.SessionPool()
    pool.opened(metadata_pb2.OpenSessionResponse(session_id=7, window=3))
    hs = [pool.take() for _ in range(3)]
    assert [(h.seq, h.first_unacked_seq) for h in hs if h is not None] == [(1, 1), (2, 1), (3, 1)]
    assert pool.take() is None
    assert hs[1] is not None and not pool.release(hs[1]), "2 was not the lowest: the window did not move"
    assert pool.take() is None
    assert hs[0] is not None and pool.release(hs[0]), "1 was the lowest: the window moved on"
    h = pool.take()
    assert h is not None and (h.seq, h.first_unacked_seq) == (4, 3)
    assert not pool.release(hs[1]), "a number released twice makes no room"


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
    # Session 1 expired; closing the client ends session 2, the one still open.
    assert [r.session_id for _, r in srv.sent("CloseSession")] == [2]

    async def off() -> FakeServer:
        c, srv = fake_aio_client(monkeypatch, Script(), no_session=True)
        async with c:
            await c.put_end("a")
        return srv
    srv = asyncio.run(off())
    assert srv.sent("OpenSession") == [] and header(srv.sent("PutEnd")[0][1]) is None


# ---------------------------------------------------------------------------------------------
# The cluster's side.


class MetadataStub:
    """The Metadata service's methods on a channel, by name, as the client makes them (the package
    ships no gRPC stubs)."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def __getattr__(self, method: str) -> Any:
        return core._multi_callable(self._channel, "md", method)


@pytest.fixture()
def stub(cluster: Cluster, client: metad.Client) -> Iterator[Any]:
    ch = grpc.insecure_channel(cluster.leader(client).client)
    try:
        yield MetadataStub(ch)
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
            assert all((await a.batch_exists([f"{k}-{i}" for i in range(100)])).exists)
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
        assert list(drop.lost.replicas) == [r.raw for r in reps]
        assert len(drop.requests) == 2 and header(drop.requests[0]) == header(drop.requests[1]) is not None
        c.put_revoke(key)
