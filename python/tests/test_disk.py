"""The LOCAL_DISK tier: a client registers its SSD (mount_local_disk), reports the objects it
offloaded to it (notify_offload) and the files it removed (evict_disk_replica), and drops the
registration (unmount_local_disk). On the session's cluster, with the sync and asyncio clients,
and on the scripted fake for the client's own rules (the split into requests, the checks before
any call, the fields sent)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, List

import pytest

import metad
from cluster import Cluster
from fake import Script, fake_aio_client, fake_client, header
from metad.metadv1 import metadata_pb2, types_pb2


def key(prefix: str = "d") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def reasons(statuses: List[metad.Status]) -> List[int]:
    return [s.reason for s in statuses]


OK = types_pb2.REASON_UNSPECIFIED

# ---------------------------------------------------------------------------------------------
# On the cluster.


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
