"""The asyncio client against the session's cluster: the same calls and errors as the sync one."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import metad
from cluster import Cluster
from metad.metadv1 import types_pb2


def key() -> str:
    return f"a-{uuid.uuid4().hex[:12]}"


def test_async_calls(cluster: Cluster, client: metad.Client) -> None:
    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=10.0)) as a:
            seg = metad.segment(1 << 24, "sim://aio", name="aio")
            await a.mount_segment(seg)
            loop = asyncio.create_task(a.ping_loop([seg], interval=0.05))
            try:
                k = key()
                reps = await a.put_start(k, 100)
                assert reps[0].status == types_pb2.REPLICA_STATUS_PROCESSING
                await a.put_end(k)
                assert (await a.get(k)).size == 100 and await a.exists(k)
                with pytest.raises(metad.ObjectAlreadyExists):
                    await a.put_start(k, 100)
                k2 = key()
                await a.put_start(k2, 64)
                await a.put_revoke(k2)
                _, reused = await a.upsert_start(k, 100)
                assert reused
                await a.upsert_end(k)
                await a.upsert_start(k, 200)
                await a.upsert_revoke(k)
                ks = [key() for _ in range(3)]
                res = await a.batch_put_start([metad.BatchPutItem(x, 64, group="ag") for x in ks[:2]])
                assert all(metad.item_error(r.status) is None for r in res)
                assert all(metad.item_error(s) is None for s in await a.batch_put_end(ks[:2]))
                assert all(metad.item_error(s) is None for s in await a.batch_put([metad.BatchPutItem(ks[2], 64)]))
                await a.put_start("ar-" + ks[0], 64)
                assert all(metad.item_error(s) is None for s in await a.batch_put_revoke(["ar-" + ks[0]]))
                assert len((await a.batch_get(ks)).results) == 3
                assert list((await a.batch_exists(ks + ["nope"])).exists) == [True, True, True, False]
                assert sorted(await a.list_group("ag")) == sorted(x.encode() for x in ks[:2])
                assert (await a.list_group_page("ag", limit=1))[1]
                assert await a.remove_group("ag", force=True) == 2
                assert all(metad.item_error(s) is None for s in await a.batch_remove([ks[2]], force=True))
                await a.put(k2, 64)
                await a.remove(k2, force=True)
                with pytest.raises(metad.ObjectNotFound) as ei:
                    await a.get(k2)
                assert ei.value.key == k2.encode() and ei.value.tenant == "default"
                t = key()
                await a.register_tenant(t, 1 << 20)
                assert t in [x.name for x in await a.list_tenants()]
                assert (await a.set_quota(t, 64)).requested_quota_bytes == 64
                assert (await a.get_quota(t)).requested_quota_bytes == 64
                with pytest.raises(metad.TenantQuotaExceeded):
                    await a.put_start("q", 4096, tenant=t)
                assert (await a.remove_all(tenant=t)).removed == 0
                await a.unregister_tenant(t)
                with pytest.raises(metad.InvalidParams):
                    await a.get(b"")
                assert [s.segment.id for s in await a.list_segments(owner=a.client_id)] == [seg.id]
                p = await a.ping()
                assert list(p.segment_ids) == [seg.id]
                rows = await a.status_all(timeout=5)
                assert all(r[1] is not None for r in rows)
                assert (await a.status(a.leader())).leader_address == a.leader()
                assert len((await a.list_members()).members) == 3
                with pytest.raises(metad.MemberNotFound):
                    await a.transfer_leader("nope")
                assert (await a.unmount_segment(seg.id)).replicas_dropped >= 0
            finally:
                loop.cancel()
                try:
                    await loop
                except asyncio.CancelledError:
                    pass
        with pytest.raises(metad.ClientClosed):
            await a.get("x")
    asyncio.run(main())


def test_async_concurrent_puts(cluster: Cluster, client: metad.Client) -> None:
    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=10.0)) as a:
            ks = [key() for _ in range(64)]
            await asyncio.gather(*(a.put(k, 64) for k in ks))
            assert all((await a.batch_exists(ks)).exists)
    asyncio.run(main())


def test_cancelled_task_is_cancelled(cluster: Cluster) -> None:
    """A task cancelled while it awaits a call gets CancelledError, not the client's OutcomeUnknown
    (a MetadError), so ping_loop, which goes on after any MetadError, ends when its task is
    cancelled. The call waits on a paused follower, so the cancel lands while it is in flight."""
    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=10.0)) as a:
            n = cluster.nodes[-1]
            await a.status(n.client, timeout=5.0)  # connected before the pause
            cluster.pause(n)
            try:
                task = asyncio.ensure_future(a.status(n.client, timeout=8.0))
                await asyncio.sleep(0.3)
                assert not task.done()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            finally:
                cluster.resume(n)
    asyncio.run(main())
