"""The LOCAL_DISK tier: a client registers its SSD (mount_local_disk), reports the objects it
offloaded to it (notify_offload) and the files it removed (evict_disk_replica), drops the
registration (unmount_local_disk), and copies a disk-only object back to memory for the promotion
task the leader queued for it (promotion_alloc_start, notify_promotion). On the session's cluster
(promotion on a cluster of its own, started with --promote-on-hit), with the sync and asyncio
clients, and on the scripted fake for the client's own rules (the split into requests, the checks
before any call, the fields sent)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Iterator, List

import pytest

import metad
from cluster import Cluster, serving, wait_for
from fake import Script, fake_aio_client, fake_client, header
from metad.metadv1 import metadata_pb2, types_pb2


def key(prefix: str = "d") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def reasons(statuses: List[metad.Status]) -> List[int]:
    return [s.reason for s in statuses]


OK = types_pb2.REASON_UNSPECIFIED

# ---------------------------------------------------------------------------------------------
# On the cluster.


def test_shared_root_and_dfs_pool(cluster: Cluster) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=15.0)) as c:
        c.mount_segment(metad.segment(1 << 24, "sim://shared-mem", name="shared-mem"))
        root = metad.segment(1 << 24, "/mnt/shared/py", name="py-root", tier=types_pb2.TIER_DISK)
        pool = metad.segment(1 << 24, "dfs://py-pool", name="py-pool", tier=types_pb2.TIER_DFS)
        c.mount_segment(root)
        try:
            c.mount_segment(pool)
            k = key("shared")
            placed = c.put(k, 4096, options=metad.PutOptions(dfs_replicas=1))
            tiers = [types_pb2.TIER_MEMORY, types_pb2.TIER_DISK, types_pb2.TIER_DFS]
            assert [r.tier for r in placed] == tiers
            got = c.get(k)
            assert [r.tier for r in got.replicas] == tiers
            disk = got.replicas[1]
            assert (disk.segment_endpoint, disk.base_address) == ("/mnt/shared/py", 0)
            assert metad.file_path(disk.segment_endpoint, "", k).startswith("/mnt/shared/py/")
            assert reasons(c.evict_disk_replica([k], tier=types_pb2.TIER_DISK)) == [OK]
            assert [r.tier for r in c.get(k).replicas] == [types_pb2.TIER_MEMORY, types_pb2.TIER_DFS]
            with pytest.raises(metad.InvalidParams):
                c.evict_disk_replica([k], tier=types_pb2.TIER_DFS)
            c.remove(k, force=True)
        finally:  # the session's other tests expect no shared root: every put would land on it
            c.unmount_segment(root.id)
            c.unmount_segment(pool.id)


def test_offload_get_evict_unmount(cluster: Cluster) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=15.0)) as c:
        c.mount_segment(metad.segment(1 << 24, "sim://disk-mem", name="disk-mem"))
        k, missing = key(), key("missing")
        c.put(k, 4096)

        seg, created = c.mount_local_disk(1 << 30, "ssd://disk-test")
        assert isinstance(seg, bytes) and len(seg) == 16 and created
        assert c.mount_local_disk(1 << 30, "ssd://disk-test") == (seg, False)  # the same registration
        with pytest.raises(metad.InvalidParams):
            c.mount_local_disk(1 << 30, "ssd://disk-test", offload=True)  # another one: unmount first
        disks = c.list_segments(tier=types_pb2.TIER_LOCAL_DISK, owner=c.client_id)
        assert [s.segment.id for s in disks] == [seg]
        assert disks[0].segment.owner_client_id == c.client_id and disks[0].segment.endpoint == "ssd://disk-test"

        st = c.notify_offload([metad.OffloadReport(k, 4096), metad.OffloadReport(missing.encode(), 4096)])
        assert all(isinstance(s, metad.Status) for s in st)
        assert reasons(st) == [OK, types_pb2.REASON_OBJECT_NOT_FOUND]
        assert metad.item_error(st[0]) is None and isinstance(metad.item_error(st[1]), metad.ObjectNotFound)

        got = c.get(k)
        assert [r.tier for r in got.replicas] == [types_pb2.TIER_MEMORY, types_pb2.TIER_LOCAL_DISK]
        disk = got.replicas[1]
        assert disk.owner_client_id == c.client_id and disk.segment_id == seg
        assert disk.segment_endpoint == "ssd://disk-test" and disk.size == 4096
        assert disk.status == types_pb2.REPLICA_STATUS_COMPLETE

        st = c.evict_disk_replica([k, missing])
        assert reasons(st) == [OK, types_pb2.REASON_OBJECT_NOT_FOUND]
        assert [r.tier for r in c.get(k).replicas] == [types_pb2.TIER_MEMORY]
        assert reasons(c.evict_disk_replica([k])) == [types_pb2.REASON_NO_REPLICA_ON_SEGMENT]
        # A failed offload records nothing.
        assert reasons(c.notify_offload([metad.OffloadReport(k, 4096, success=False)])) == [OK]
        assert len(c.get(k).replicas) == 1

        r = c.unmount_local_disk()
        assert isinstance(r, metad.UnmountLocalDiskResult) and (r.replicas_dropped, r.objects_erased) == (0, 0)
        assert c.list_segments(tier=types_pb2.TIER_LOCAL_DISK, owner=c.client_id) == []
        assert c.unmount_local_disk().replicas_dropped == 0  # idempotent
        with pytest.raises(metad.SegmentNotFound):
            c.notify_offload([metad.OffloadReport(k, 4096)])  # no registration
        c.remove(k, force=True)


def test_unmount_drops_the_disk_replicas_and_erases_the_objects_left_with_none(cluster: Cluster) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=15.0)) as c:
        mem = metad.segment(1 << 24, "sim://disk-mem2", name="disk-mem2")
        c.mount_segment(mem)
        here = metad.PutOptions(preferred_segments=[mem.id])  # not the other tests' segments
        a, b = key(), key()
        c.put(a, 100, options=here)
        c.put(b, 200, options=here)
        assert {r.segment_id for k in (a, b) for r in c.get(k).replicas} == {mem.id}
        assert c.mount_local_disk(1 << 20, "ssd://disk-test2", offload=True)[1]
        assert reasons(c.notify_offload([metad.OffloadReport(a, 100), metad.OffloadReport(b, 200)],
                                        tenant="default")) == [OK, OK]
        # The memory replicas go with their segment; the disk replicas keep the objects.
        c.unmount_segment(mem.id)
        got = c.get(a)
        assert [r.tier for r in got.replicas] == [types_pb2.TIER_LOCAL_DISK] and got.size == 100
        c.mount_segment(metad.segment(1 << 24, "sim://disk-mem3", name="disk-mem3"))
        kept = key()
        c.put(kept, 300)
        assert reasons(c.notify_offload([metad.OffloadReport(kept, 300)])) == [OK]
        r = c.unmount_local_disk()
        assert (r.replicas_dropped, r.objects_erased) == (3, 2)
        for k in (a, b):
            with pytest.raises(metad.ObjectNotFound):
                c.get(k)
        assert [r.tier for r in c.get(kept).replicas] == [types_pb2.TIER_MEMORY]
        c.remove(kept, force=True)


def test_async_offload(cluster: Cluster) -> None:
    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=15.0)) as a:
            await a.mount_segment(metad.segment(1 << 24, "sim://disk-aio", name="disk-aio"))
            k = key("a")
            await a.put(k, 512)
            seg, created = await a.mount_local_disk(1 << 30, "ssd://disk-aio")
            assert len(seg) == 16 and created
            assert await a.mount_local_disk(1 << 30, "ssd://disk-aio") == (seg, False)
            st = await a.notify_offload([metad.OffloadReport(k, 512), metad.OffloadReport(key("missing"), 1)])
            assert reasons(st) == [OK, types_pb2.REASON_OBJECT_NOT_FOUND]
            got = await a.get(k)
            assert [r.tier for r in got.replicas] == [types_pb2.TIER_MEMORY, types_pb2.TIER_LOCAL_DISK]
            assert got.replicas[1].owner_client_id == a.client_id
            assert reasons(await a.evict_disk_replica([k])) == [OK]
            assert len((await a.get(k)).replicas) == 1
            assert reasons(await a.notify_offload([metad.OffloadReport(k, 512)])) == [OK]
            r = await a.unmount_local_disk()
            assert (r.replicas_dropped, r.objects_erased) == (1, 0)
            assert len((await a.get(k)).replicas) == 1
            await a.remove(k, force=True)
    asyncio.run(main())


# ---------------------------------------------------------------------------------------------
# The client's own rules, on the fake.


def statuses(method: str, req: Any, n: int) -> Any:
    """One OK status per item of a NotifyOffload or EvictDiskReplica."""
    if method == "NotifyOffload":
        return metadata_pb2.NotifyOffloadResponse(results=[types_pb2.Status() for _ in req.results])
    if method == "EvictDiskReplica":
        return metadata_pb2.EvictDiskReplicaResponse(results=[types_pb2.Status() for _ in req.keys])
    if method == "MountLocalDisk":
        return metadata_pb2.MountLocalDiskResponse(segment_id=b"s" * 16, created=n == 0)
    if method == "UnmountLocalDisk":
        return metadata_pb2.UnmountLocalDiskResponse(replicas_dropped=3, objects_erased=1)
    return None


def test_the_requests_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=statuses))
    with c:
        assert c.mount_local_disk(1 << 30, "ssd://w", offload=True) == (b"s" * 16, True)
        assert c.mount_local_disk(1 << 30, "ssd://w", offload=True) == (b"s" * 16, False)
        reports = [metad.OffloadReport(f"k{i}", i + 1, success=i % 2 == 0) for i in range(5000)]
        assert reasons(c.notify_offload(reports, tenant="t")) == [OK] * 5000
        assert reasons(c.evict_disk_replica([f"k{i}".encode() for i in range(4097)], tenant="t")) == [OK] * 4097
        r = c.unmount_local_disk()
        assert (r.replicas_dropped, r.objects_erased) == (3, 1) and isinstance(r.raw, metadata_pb2.UnmountLocalDiskResponse)
    _, m = srv.sent("MountLocalDisk")[0]
    assert (m.client_id, m.capacity_bytes, m.endpoint, m.offload) == (c.client_id, 1 << 30, "ssd://w", True)
    notes = [r for _, r in srv.sent("NotifyOffload")]
    assert [len(r.results) for r in notes] == [4096, 904]
    assert all(r.tenant == "t" and r.client_id == c.client_id for r in notes)
    sent = [x for r in notes for x in r.results]
    assert [(x.key, x.size, x.success) for x in sent] == [(f"k{i}".encode(), i + 1, i % 2 == 0) for i in range(5000)]
    evicts = [r for _, r in srv.sent("EvictDiskReplica")]
    assert [len(r.keys) for r in evicts] == [4096, 1]
    assert all(r.tier == types_pb2.TIER_LOCAL_DISK and r.client_id == c.client_id and r.tenant == "t" for r in evicts)
    (_, u), = srv.sent("UnmountLocalDisk")
    assert u.client_id == c.client_id
    # Every one is a write, within the client's session.
    for method in ("MountLocalDisk", "NotifyOffload", "EvictDiskReplica", "UnmountLocalDisk"):
        assert all(header(r) is not None for _, r in srv.sent(method)), method


def test_the_async_client_sends_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    a, srv = fake_aio_client(monkeypatch, Script(answer=statuses))

    async def main() -> None:
        async with a:
            assert await a.mount_local_disk(1 << 20, "ssd://a") == (b"s" * 16, True)
            st = await a.notify_offload([metad.OffloadReport(b"k", 8)] + [metad.OffloadReport(f"x{i}", 1)
                                                                          for i in range(4096)])
            assert reasons(st) == [OK] * 4097
            assert reasons(await a.evict_disk_replica(["k"])) == [OK]
            assert (await a.unmount_local_disk()).objects_erased == 1
    asyncio.run(main())
    _, m = srv.sent("MountLocalDisk")[0]
    assert (m.capacity_bytes, m.endpoint, m.offload, m.client_id) == (1 << 20, "ssd://a", False, a.client_id)
    assert [len(r.results) for _, r in srv.sent("NotifyOffload")] == [4096, 1]
    assert [r.tier for _, r in srv.sent("EvictDiskReplica")] == [types_pb2.TIER_LOCAL_DISK]
    assert all(header(r) is not None for _, r in srv.sent("NotifyOffload"))


def test_bad_input_is_refused_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=statuses))
    with c:
        with pytest.raises(TypeError, match="sequence of OffloadReport"):
            c.notify_offload([("k", 1, True)])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="sequence of OffloadReport"):
            c.notify_offload(metad.OffloadReport("k", 1))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"results\[1\]"):
            c.notify_offload([metad.OffloadReport("k", 1), metad.OffloadReport(5, 1)])  # type: ignore[arg-type]
        with pytest.raises(metad.InvalidKey, match=r"results\[0\]"):
            c.notify_offload([metad.OffloadReport("", 1)])
        with pytest.raises(metad.RepeatedKey, match=r"results\[1\] repeats results\[0\]"):
            c.notify_offload([metad.OffloadReport("k", 1), metad.OffloadReport(b"k", 1)])
        with pytest.raises(metad.RepeatedKey):
            c.evict_disk_replica(["k", b"k"])
        with pytest.raises(TypeError, match="sequence of keys"):
            c.evict_disk_replica("k")
        with pytest.raises(metad.InvalidKey):
            c.evict_disk_replica(["a\x00b"])
    assert srv.sent("NotifyOffload") == [] and srv.sent("EvictDiskReplica") == []


# ---------------------------------------------------------------------------------------------
# Promotion on hit.


@pytest.fixture(scope="module")
def promoting() -> Iterator[Cluster]:
    """A cluster whose leader queues a promotion for a disk-only object its reads hit twice."""
    yield from serving(["--client-ttl", "60s", "--promote-on-hit", "--promote-min-hits", "2"])


def test_promotion_on_hit(promoting: Cluster) -> None:
    with metad.Client(promoting.endpoints, metad.Config(timeout=15.0)) as c:
        staging = metad.segment(1 << 24, "sim://promote-staging", name="promote-staging")
        c.mount_segment(staging)
        k = key("p")
        c.put(k, 4096, options=metad.PutOptions(preferred_segments=[staging.id]))
        disk, _ = c.mount_local_disk(1 << 30, "ssd://promote")
        assert reasons(c.notify_offload([metad.OffloadReport(k, 4096)])) == [OK]
        # The memory replica goes with its segment: the object is on the SSD alone.
        target = metad.segment(1 << 24, "sim://promote-mem", name="promote-mem")
        c.mount_segment(target)
        c.unmount_segment(staging.id)
        for _ in range(2):
            got = c.get(k)
            assert [r.tier for r in got.replicas] == [types_pb2.TIER_LOCAL_DISK]
        # Not queued yet (TaskNotFound) or not taken yet (InvalidParams): nothing to start.
        with pytest.raises((metad.TaskNotFound, metad.InvalidParams)):
            c.promotion_alloc_start(k)

        tasks: List[metad.ScheduledTask] = []

        def promote_task() -> bool:
            tasks.extend(c.fetch_tasks(16))
            return any(t.kind == types_pb2.TASK_KIND_PROMOTE for t in tasks)
        wait_for(promote_task, 10.0, "a PROMOTE task for the worker")
        (t,) = [t for t in tasks if t.kind == types_pb2.TASK_KIND_PROMOTE]
        assert isinstance(t, metad.ScheduledTask) and isinstance(t.raw, types_pb2.ScheduledTask)
        assert (t.key, t.size, t.client_id, t.source_segment_id) == (k.encode(), 4096, c.client_id, disk)
        assert t.state == types_pb2.TASK_STATE_PROCESSING
        # A promotion is reported with notify_promotion, never with mark_task_to_complete.
        with pytest.raises(metad.InvalidParams, match="NotifyPromotion"):
            c.mark_task_to_complete(t.task_id)

        rep, size = c.promotion_alloc_start(k, preferred=[target.id])
        assert isinstance(rep, metad.Replica) and size == 4096
        assert (rep.tier, rep.status, rep.segment_id, rep.size) == (
            types_pb2.TIER_MEMORY, types_pb2.REPLICA_STATUS_PROCESSING, target.id, 4096)
        # Another client holds no promotion of k.
        with metad.Client(promoting.endpoints, metad.Config(timeout=15.0)) as other:
            with pytest.raises(metad.IllegalClient):
                other.notify_promotion(k)
        c.notify_promotion(k, True)

        got = c.get(k)
        assert [r.tier for r in got.replicas] == [types_pb2.TIER_MEMORY, types_pb2.TIER_LOCAL_DISK]
        assert got.replicas[0].segment_id == target.id and got.replicas[0].status == types_pb2.REPLICA_STATUS_COMPLETE
        with pytest.raises(metad.TaskNotFound):  # the promotion has ended
            c.notify_promotion(k)
        c.remove(k, force=True)


def test_the_task_mailbox_on_the_cluster(cluster: Cluster) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=15.0)) as c:
        assert c.fetch_tasks() == []  # a client with no task assigned: nothing, no error
        with pytest.raises(metad.TaskNotFound):
            c.mark_task_to_complete(1 << 62, False, "never scheduled")

    async def main() -> None:
        async with metad.AsyncClient(cluster.endpoints, metad.Config(timeout=15.0)) as a:
            assert await a.fetch_tasks(1024) == []
            with pytest.raises(metad.TaskNotFound):
                await a.mark_task_to_complete(1 << 62)
    asyncio.run(main())


def promotion_answers(method: str, req: Any, n: int) -> Any:
    if method == "PromotionAllocStart":
        return metadata_pb2.PromotionAllocStartResponse(size=4096, replica=types_pb2.Replica(
            replica_id=7, tier=types_pb2.TIER_MEMORY, segment_id=b"m" * 16, segment_endpoint="sim://m", size=4096,
            status=types_pb2.REPLICA_STATUS_PROCESSING))
    return None


def check_promotion_requests(srv: Any, cid: bytes) -> None:
    (_, s1), (_, s2) = srv.sent("PromotionAllocStart")
    assert (s1.tenant, s1.client_id, s1.key, list(s1.preferred_segment_ids)) == ("t", cid, b"hot", [b"a" * 16, b"b" * 16])
    assert (s2.tenant, s2.client_id, s2.key, list(s2.preferred_segment_ids)) == ("", cid, b"k2", [])
    notes = [r for _, r in srv.sent("NotifyPromotion")]
    assert [(r.tenant, r.client_id, r.key, r.success) for r in notes] == [("t", cid, b"hot", True), ("", cid, b"k2", False)]
    # Both are writes, within the client's session, each with a number of its own.
    heads = [header(r) for m in ("PromotionAllocStart", "NotifyPromotion") for _, r in srv.sent(m)]
    assert all(h is not None for h in heads) and len(set(heads)) == len(heads), heads


def test_the_promotion_requests_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=promotion_answers))
    with c:
        rep, size = c.promotion_alloc_start("hot", tenant="t", preferred=[b"a" * 16, bytearray(b"b" * 16)])
        assert isinstance(rep, metad.Replica) and size == 4096
        assert (rep.replica_id, rep.tier, rep.segment_id, rep.status) == (
            7, types_pb2.TIER_MEMORY, b"m" * 16, types_pb2.REPLICA_STATUS_PROCESSING)
        assert isinstance(rep.raw, types_pb2.Replica)
        c.notify_promotion(b"hot", tenant="t")
        c.promotion_alloc_start(memoryview(b"k2"))
        c.notify_promotion("k2", success=False)
    check_promotion_requests(srv, c.client_id)


def test_the_async_client_sends_the_same_promotion_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    a, srv = fake_aio_client(monkeypatch, Script(answer=promotion_answers))

    async def main() -> None:
        async with a:
            rep, size = await a.promotion_alloc_start(b"hot", tenant="t", preferred=(b"a" * 16, b"b" * 16))
            assert isinstance(rep, metad.Replica) and rep.segment_id == b"m" * 16 and size == 4096
            await a.notify_promotion("hot", tenant="t")
            await a.promotion_alloc_start("k2")
            await a.notify_promotion("k2", False)
    asyncio.run(main())
    check_promotion_requests(srv, a.client_id)


def test_bad_promotion_input_is_refused_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=promotion_answers))
    with c:
        with pytest.raises(metad.InvalidKey):
            c.promotion_alloc_start("")
        with pytest.raises(TypeError, match="key must be"):
            c.promotion_alloc_start(5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="sequence of segment ids"):
            c.promotion_alloc_start("k", preferred=b"s" * 16)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"preferred\[1\]"):
            c.promotion_alloc_start("k", preferred=[b"s" * 16, "t" * 16])  # type: ignore[list-item]
        with pytest.raises(metad.InvalidKey):
            c.notify_promotion("a\x00b")
        with pytest.raises(TypeError):
            c.notify_promotion(["k"])  # type: ignore[arg-type]
    assert srv.sent("PromotionAllocStart") == [] and srv.sent("NotifyPromotion") == []


# ---------------------------------------------------------------------------------------------
# The task mailbox, on the fake.


def task_answers(method: str, req: Any, n: int) -> Any:
    """FetchTasks: up to two COPY tasks for the caller, ids 10, 11."""
    if method == "FetchTasks":
        return metadata_pb2.FetchTasksResponse(tasks=[types_pb2.ScheduledTask(
            task_id=10 + i, kind=types_pb2.TASK_KIND_COPY, tenant="t", key=b"k%d" % i, source_segment_id=b"s" * 16,
            target_segment_ids=[b"a" * 16, b"b" * 16], replicas=2, client_id=req.client_id,
            state=types_pb2.TASK_STATE_PROCESSING, size=64) for i in range(min(req.batch, 2))])
    return None


def check_tasks(tasks: List[metad.ScheduledTask], cid: bytes) -> None:
    assert all(isinstance(t, metad.ScheduledTask) and isinstance(t.raw, types_pb2.ScheduledTask) for t in tasks)
    assert [(t.task_id, t.kind, t.tenant, t.key, t.client_id, t.state) for t in tasks] == [
        (10, types_pb2.TASK_KIND_COPY, "t", b"k0", cid, types_pb2.TASK_STATE_PROCESSING),
        (11, types_pb2.TASK_KIND_COPY, "t", b"k1", cid, types_pb2.TASK_STATE_PROCESSING)]
    assert tasks[0].target_segment_ids == (b"a" * 16, b"b" * 16) and tasks[0].source_segment_id == b"s" * 16


def check_task_requests(srv: Any, cid: bytes) -> None:
    assert [(r.client_id, r.batch) for _, r in srv.sent("FetchTasks")] == [(cid, 64), (cid, 1), (cid, 1024)]
    marks = [r for _, r in srv.sent("MarkTaskToComplete")]
    assert [(r.client_id, r.task_id, r.success, r.message) for r in marks] == [
        (cid, 10, True, ""), (cid, 11, False, "copy failed")]
    # Both are writes, within the client's session, each with a number of its own.
    heads = [header(r) for m in ("FetchTasks", "MarkTaskToComplete") for _, r in srv.sent(m)]
    assert all(h is not None for h in heads) and len(set(heads)) == len(heads), heads


def test_the_task_requests_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=task_answers))
    with c:
        tasks = c.fetch_tasks()
        check_tasks(tasks, c.client_id)
        assert [t.task_id for t in c.fetch_tasks(1)] == [10]
        assert len(c.fetch_tasks(1024, timeout=2.0)) == 2
        c.mark_task_to_complete(tasks[0].task_id)
        c.mark_task_to_complete(tasks[1].task_id, False, "copy failed")
    check_task_requests(srv, c.client_id)


def test_the_async_client_sends_the_same_task_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    a, srv = fake_aio_client(monkeypatch, Script(answer=task_answers))

    async def main() -> None:
        async with a:
            tasks = await a.fetch_tasks()
            check_tasks(tasks, a.client_id)
            assert [t.task_id for t in await a.fetch_tasks(batch=1)] == [10]
            assert len(await a.fetch_tasks(1024)) == 2
            await a.mark_task_to_complete(10)
            await a.mark_task_to_complete(11, success=False, message="copy failed")
    asyncio.run(main())
    check_task_requests(srv, a.client_id)


def test_an_empty_mailbox_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    c, _ = fake_client(monkeypatch, Script())
    with c:
        assert c.fetch_tasks() == []


def test_a_bad_batch_is_refused_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    c, srv = fake_client(monkeypatch, Script(answer=task_answers))
    a, asrv = fake_aio_client(monkeypatch, Script(answer=task_answers))
    with c:
        for bad in (0, -1, 1025):
            with pytest.raises(ValueError, match=r"batch must be in 1\.\.1024"):
                c.fetch_tasks(bad)
        for wrong in ("64", 2.0, True):
            with pytest.raises(TypeError, match="batch must be an int"):
                c.fetch_tasks(wrong)  # type: ignore[arg-type]

    async def main() -> None:
        async with a:
            with pytest.raises(ValueError, match=r"batch must be in 1\.\.1024"):
                await a.fetch_tasks(0)
    asyncio.run(main())
    assert srv.sent("FetchTasks") == [] and asrv.sent("FetchTasks") == []
