"""What the calls return: frozen dataclasses of metad.results with ``raw``, the message, never a
message itself; exists and batch_exists (exist and batch_exist are deprecated aliases that warn)."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import sys
from typing import Any, List, cast

import grpc
import pytest

import metad
from fake import FakeError, Script, fake_aio_client, fake_client
from metad import results
from metad.metadv1 import metadata_pb2, types_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import gen_results  # noqa: E402
from genlib import GenError  # noqa: E402


def test_generated_results_are_current() -> None:
    """metad/results.py is what tools/gen_results.py writes from the messages' descriptors: a
    field added to a message the calls return, without make proto, fails here."""
    with open(gen_results.OUT, encoding="utf-8") as f:
        assert f.read() == gen_results.generate(), "run python3 python/tools/gen_results.py"


def test_each_class_has_its_message_fields_and_raw() -> None:
    descs = gen_results.descriptors()
    assert sorted(results.__all__) == sorted(gen_results.CLASSES.values())
    for full, name in gen_results.CLASSES.items():
        cls = getattr(results, name)
        assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in descs[full].fields] + ["raw"], name
        assert cls.__dataclass_params__.frozen and getattr(metad, name) is cls


def test_the_generator_refuses_a_message_without_a_class(monkeypatch: pytest.MonkeyPatch) -> None:
    classes = dict(gen_results.CLASSES)
    del classes["metad.v1.Replica"]
    monkeypatch.setattr(gen_results, "CLASSES", classes)
    with pytest.raises(GenError, match="no class for metad.v1.Replica"):
        gen_results.render(gen_results.descriptors(), {})


@pytest.mark.parametrize("cls", [metad.Client, metad.AsyncClient], ids=["Client", "AsyncClient"])
def test_no_call_returns_a_message(cls: type) -> None:
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            assert "_pb2" not in str(inspect.signature(fn).return_annotation), name


def test_a_result_is_frozen_and_keeps_its_message() -> None:
    msg = metadata_pb2.GetResponse(replicas=[types_pb2.Replica(replica_id=3, size=8, segment_endpoint="e")],
                                   lease_ttl_ms=5, size=8, data_type=2)
    r = metad.GetResult.from_pb(msg)
    assert r.raw is msg and r.replicas[0].raw is msg.replicas[0]
    assert (r.size, r.data_type, r.lease_ttl_ms, r.replicas[0].replica_id, r.replicas[0].segment_endpoint) == (8, 2, 5, 3, "e")
    assert isinstance(r.replicas, tuple) and isinstance(r.replicas[0], metad.Replica)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.size = 9  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.replicas[0].status = 2  # type: ignore[misc]
    assert r == metad.GetResult.from_pb(metadata_pb2.GetResponse.FromString(msg.SerializeToString()))
    assert "raw" not in repr(r) and "replica_id=3" in repr(r)
    assert metad.SegmentInfo.from_pb(metad.admin_pb2.SegmentInfo()).segment == metad.SegmentDesc.from_pb(
        types_pb2.SegmentDesc())  # an unset message field is its empty message, as in protobuf


def test_real_calls_return_results(client: metad.Client) -> None:
    reps = client.put("results-k", 64)
    assert isinstance(reps[0], metad.Replica) and reps[0].status == types_pb2.REPLICA_STATUS_COMPLETE
    assert reps[0].raw.status == types_pb2.REPLICA_STATUS_COMPLETE
    got = client.get("results-k")
    assert isinstance(got, metad.GetResult) and isinstance(got.raw, metadata_pb2.GetResponse)
    assert got.replicas[0].raw == got.raw.replicas[0] and got.size == got.raw.size == 64
    st = client.batch_remove(["results-k", "results-none"], force=True)
    assert all(isinstance(s, metad.Status) for s in st) and metad.item_error(st[0]) is None
    assert isinstance(metad.item_error(st[1]), metad.NotFound) and st[1].raw.reason == types_pb2.REASON_OBJECT_NOT_FOUND
    assert isinstance(client.ping(), metad.PingResult) and isinstance(client.list_members().members[0], metad.Member)
    assert isinstance(client.status(client.leader()), metad.NodeStatus)


def test_partial_results_are_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call failing after some of its requests succeeded keeps their results in ``partial``, in
    the shape the call returns."""
    refused = FakeError(grpc.StatusCode.INVALID_ARGUMENT, types_pb2.REASON_INVALID_PARAMS)

    def answer(method: str, req: Any, n: int) -> Any:
        if method == "BatchPutEnd":
            return metadata_pb2.BatchPutEndResponse(results=[types_pb2.Status()] * len(req.keys))
        if method == "GetByRegex":
            return metadata_pb2.GetByRegexResponse(items=[metadata_pb2.GetByRegexResponse.Item(key=b"a")],
                                                   next_page_token=b"t")
        return None
    c, _ = fake_client(monkeypatch, Script(answer=answer, fail=lambda m, r, n: refused if n == 1 else None))
    with c:
        with pytest.raises(metad.InvalidParams) as ei:
            c.batch_put_end([f"k{i}" for i in range(metad.MAX_BATCH_ITEMS + 1)])
        partial = cast(List[Any], ei.value.partial)
        assert len(partial) == metad.MAX_BATCH_ITEMS and all(isinstance(s, metad.Status) for s in partial)
        with pytest.raises(metad.InvalidParams) as ei:
            c.get_by_regex("a")
        assert [(type(i), i.key) for i in cast(List[Any], ei.value.partial)] == [(metad.RegexItem, b"a")]


def answers(method: str, req: Any, n: int) -> Any:
    if method == "Exist":
        return metadata_pb2.ExistResponse(exists=True, lease_ttl_ms=5)
    if method == "BatchExist":
        return metadata_pb2.BatchExistResponse(exists=[True] * len(req.keys), lease_ttl_ms=5)
    return None


def test_exist_is_a_deprecated_alias_of_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=answers))
    with c:
        assert c.exists("k") is True and list(c.batch_exists(["a", "b"]).exists) == [True, True]
        with pytest.warns(DeprecationWarning, match="exist is deprecated; use exists") as w:
            assert c.exist("k", stale=True) is True
        assert w[0].filename == __file__
        with pytest.warns(DeprecationWarning, match="batch_exist is deprecated; use batch_exists"):
            assert list(c.batch_exist(["a", "b"], stale=True).exists) == [True, True]
    assert [r.stale for _, r in srv.sent("Exist")] == [False, True]
    assert [r.stale for _, r in srv.sent("BatchExist")] == [False, True]


def test_async_exist_is_a_deprecated_alias_of_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        c, srv = fake_aio_client(monkeypatch, Script(answer=answers))
        async with c:
            assert await c.exists("k") is True
            with pytest.warns(DeprecationWarning, match="exist is deprecated; use exists"):
                assert await c.exist("k") is True
            with pytest.warns(DeprecationWarning, match="batch_exist is deprecated; use batch_exists"):
                assert list((await c.batch_exist(["a"])).exists) == [True]
        assert len(srv.sent("Exist")) == 2 and len(srv.sent("BatchExist")) == 1
    asyncio.run(main())
