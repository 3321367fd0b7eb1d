"""How batches are split into requests, on the scripted fake: BatchExist and BatchGet send up to
the server's 65,536 keys (and 12 MiB of keys) in one request, every other batch 4,096 items."""

from __future__ import annotations

import asyncio
from typing import Any, List

import grpc
import pytest

import metad
from fake import FakeServer, Script, fake_aio_client, fake_client
from metad.metadv1 import metadata_pb2, types_pb2


def answer(method: str, req: Any, n: int) -> Any:
    """A result per key: every key exists."""
    if method == "BatchExist":
        return metadata_pb2.BatchExistResponse(exists=[True] * len(req.keys), lease_ttl_ms=1000)
    if method == "BatchGet":
        return metadata_pb2.BatchGetResponse(results=[metadata_pb2.BatchGetResponse.Result(size=1)
                                                      for _ in req.keys], lease_ttl_ms=1000)
    if method == "BatchRemove":
        return metadata_pb2.BatchRemoveResponse(results=[types_pb2.Status() for _ in req.keys])
    return None


def sizes(srv: FakeServer, method: str) -> List[int]:
    return [len(r.keys) for _, r in srv.sent(method)]


def keys(n: int, width: int = 0) -> List[bytes]:
    return [f"k{i:0{width}d}".encode() for i in range(n)]


def test_big_existence_checks_and_gets_go_in_one_request(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=answer))
    with c:
        assert sum(c.batch_exists(keys(50_000)).exists) == 50_000
        assert len(c.batch_get(keys(50_000)).results) == 50_000
        assert sum(c.batch_exists(keys(65_536)).exists) == 65_536
        assert sum(c.batch_exists(keys(65_537)).exists) == 65_537
        assert len(c.batch_get(keys(70_000)).results) == 70_000
    assert sizes(srv, "BatchExist") == [50_000, 65_536, 65_536, 1]
    assert sizes(srv, "BatchGet") == [50_000, 65_536, 70_000 - 65_536]


def test_read_batches_stay_under_the_request_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 65,536 keys of 250 bytes are 16.4 MB, over the server's 16 MiB request limit: the requests
    # carry at most 12 MiB of keys (key bytes plus 8 each).
    c, srv = fake_client(monkeypatch, Script(answer=answer))
    with c:
        ks = keys(65_536, 249)
        assert sum(c.batch_exists(ks).exists) == 65_536
    got = sizes(srv, "BatchExist")
    assert len(got) == 2 and sum(got) == 65_536
    assert all(n * (250 + 8) <= metad.MAX_READ_BATCH_BYTES for n in got)


def test_other_batches_stay_at_4096(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=answer))
    with c:
        assert len(c.batch_remove(keys(10_000))) == 10_000
    assert sizes(srv, "BatchRemove") == [4096, 4096, 10_000 - 8192]


def test_async_client_sends_one_request(monkeypatch: pytest.MonkeyPatch) -> None:
    a, srv = fake_aio_client(monkeypatch, Script(answer=answer))

    async def main() -> None:
        async with a:
            assert sum((await a.batch_exists(keys(50_000))).exists) == 50_000
            assert len((await a.batch_get(keys(50_000))).results) == 50_000
    asyncio.run(main())
    assert sizes(srv, "BatchExist") == [50_000] and sizes(srv, "BatchGet") == [50_000]


def test_the_cluster_takes_the_read_batch_limit(client: metad.Client) -> None:
    """The server takes MAX_READ_BATCH_ITEMS keys in one BatchExist and BatchGet (store.MaxReadBatch),
    and refuses one more: the client's limit is the server's."""
    ks = [b"absent-%d" % i for i in range(metad.MAX_READ_BATCH_ITEMS)]
    assert not any(client.batch_exists(ks).exists)
    assert all(isinstance(metad.item_error(r.status), metad.ObjectNotFound) for r in client.batch_get(ks).results)
    one_more = metadata_pb2.BatchExistRequest(keys=ks + [b"absent-more"])
    ep = client._cluster.by_addr[client.leader()]
    with pytest.raises(grpc.RpcError) as ei:
        ep.method("md", "BatchExist")(one_more, timeout=10)
    assert "65537 items not in 1..65536" in str(ei.value)
