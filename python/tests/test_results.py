"""What the calls return: exists and batch_exists (exist and batch_exist are deprecated aliases
that warn)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fake import Script, fake_aio_client, fake_client
from metad.metadv1 import metadata_pb2


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
