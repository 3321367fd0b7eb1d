"""Watches on a cluster of their own (its members retain WINDOW events, so a start before them is
compacted on every member): events in order with their replicas, resume from a batch's next,
a killed or paused member left without losing or repeating an event, the refusals that end a
watch; and the rules of moving between members (WatchPlan) on a fake cluster."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Iterator, List, Tuple

import grpc
import pytest

import metad
from cluster import Cluster, Node, wait_for
from fake import ENDPOINTS, FakeChannel, FakeError, FakeServer, Script, _ld
from metad import _watchers
from metad._core import Cluster as Endpoints
from metad.metadv1 import types_pb2

WINDOW = 200
"""The watch events each member of the module's cluster retains."""

LIMIT = 15.0
"""How long a test waits for the events it expects, seconds."""


@pytest.fixture(scope="module")
def wcluster() -> Iterator[Cluster]:
    c = Cluster(["--client-ttl", "60s", "--watch-window-events", str(WINDOW)])
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def wclient(wcluster: Cluster) -> Iterator[metad.Client]:
    with metad.Client(wcluster.endpoints, metad.Config(timeout=20.0)) as c:
        wcluster.leader(c)
        c.mount_segment(metad.segment(1 << 30, "sim://watch", name="watch"))
        yield c


def prefix() -> str:
    return f"w-{uuid.uuid4().hex[:8]}-"


def events(w: metad.Watch, n: int, timeout: float = LIMIT) -> Tuple[List[metad.WatchEvent], List[metad.WatchBatch]]:
    """The next n events of w (its progress interval bounds each wait), and the batches they came in;
    fails after timeout seconds."""
    end = time.monotonic() + timeout
    got: List[metad.WatchEvent] = []
    batches: List[metad.WatchBatch] = []
    while len(got) < n:
        assert time.monotonic() < end, f"{len(got)} of {n} events within {timeout}s: {got}"
        b = next(w)
        got.extend(b.events)
        if b.events:
            batches.append(b)
    assert len(got) == n, got
    return got, batches


def node_at(c: Cluster, addr: str) -> Node:
    return next(n for n in c.nodes if n.client == addr)


def watcher(c: Cluster, cl: metad.Client, attempt_timeout: float = 1.0) -> metad.Client:
    """A client whose first endpoint, where its first watch goes, is a follower."""
    leader = c.leader(cl)
    follower = next(n for n in c.nodes if n is not leader and n.proc is not None)
    order = [follower.client] + [n.client for n in c.nodes if n is not follower]
    return metad.Client(order, metad.Config(attempt_timeout=attempt_timeout))


def test_events_come_in_order_with_their_replicas(wclient: metad.Client) -> None:
    p = prefix()
    with wclient.watch(prefix=p, progress=0.2) as w:
        first = next(w)
        assert first.events == () and first.next > metad.Revision(0, 0) and first.applied_index > 0
        assert first.commit_index >= first.applied_index and isinstance(first.raw, metad.metadata_pb2.WatchResponse)
        wclient.put(p + "a", 64)
        wclient.put(p + "b", 128, options=metad.PutOptions(group="g-" + p))
        got, batches = events(w, 2)
        assert [(e.kind, e.key, e.size) for e in got] == [("STORED", (p + "a").encode(), 64),
                                                         ("STORED", (p + "b").encode(), 128)]
        assert got[0].revision < got[1].revision and got[0].revision >= first.next
        assert batches[-1].next > got[1].revision
        assert got[0].group == b"" and got[1].group == ("g-" + p).encode() and got[0].tenant == "default"
        assert got[0].replicas and all(isinstance(r, metad.Replica) for r in got[0].replicas)
        assert {r.status for r in got[0].replicas} == {types_pb2.REPLICA_STATUS_COMPLETE}
        assert got[0].replicas == wclient.get(p + "a").replicas
        assert got[0].raw.key == got[0].key
        wclient.remove(p + "a", force=True)
        (gone,), _ = events(w, 1)
        assert (gone.kind, gone.key, gone.replicas) == ("REMOVED", (p + "a").encode(), ())
        assert gone.revision > got[1].revision
    with pytest.raises(StopIteration):
        next(w)  # closed

    # kinds and start: from where the first watch started, only the removal.
    with wclient.watch(prefix=p, kinds=["REMOVED"], start=first.next, progress=0.2) as only:
        assert next(only).next == first.next
        (again,), _ = events(only, 1)
        assert again == gone


def test_resume_from_next_gives_exactly_the_following_events(wclient: metad.Client) -> None:
    p = prefix()
    with wclient.watch(prefix=p, progress=0.2) as w:
        next(w)
        for k in "abc":
            wclient.put(p + k, 64)
        got, batches = events(w, 3)
        resume = batches[0].next
        assert w.next == batches[-1].next
    wclient.put(p + "d", 64)
    after = [e for e in got if e.revision >= resume]
    with wclient.watch(prefix=p, start=resume, progress=0.2) as w2:
        more, _ = events(w2, len(after) + 1)
    assert more[:-1] == after
    assert (more[-1].kind, more[-1].key) == ("STORED", (p + "d").encode())


def test_a_killed_member_costs_no_event(wcluster: Cluster, wclient: metad.Client) -> None:
    """The member the stream is on (a follower, so that the puts go on undisturbed) is SIGKILLed
    with events sent and unread: the watch goes on on another member from where it reached, every
    put seen once, in order."""
    p = prefix()
    keys = [f"{p}{i:02d}" for i in range(12)]
    with watcher(wcluster, wclient) as c, c.watch(prefix=p, progress=0.2) as w:
        next(w)
        on = node_at(wcluster, w.endpoint)
        for k in keys[:5]:
            wclient.put(k, 64)
        seen, _ = events(w, 5)
        for k in keys[5:8]:
            wclient.put(k, 64)
        wcluster.kill(on)
        try:
            for k in keys[8:]:
                wclient.put(k, 64)
            rest, _ = events(w, len(keys) - 5)
            seen += rest
            assert w.endpoint != on.client
        finally:
            wcluster.start(on)
    assert [e.key.decode() for e in seen] == keys
    assert all(a.revision < b.revision for a, b in zip(seen, seen[1:]))
    wcluster.wait_up(on, wclient)


def test_a_silent_member_is_left(wcluster: Cluster, wclient: metad.Client) -> None:
    """A SIGSTOPped member sends nothing, not even progress: after the progress interval plus the
    attempt timeout the watch takes it for silent and goes on elsewhere."""
    p = prefix()
    with watcher(wcluster, wclient, attempt_timeout=0.5) as c, c.watch(prefix=p, progress=0.2) as w:
        next(w)
        follower = node_at(wcluster, w.endpoint)
        wcluster.pause(follower)
        try:
            t0 = time.monotonic()
            wclient.put(p + "x", 64)
            (e,), _ = events(w, 1)
            assert e.key == (p + "x").encode() and w.endpoint != follower.client
            assert time.monotonic() - t0 < 10
        finally:
            wcluster.resume(follower)


def test_a_start_far_ahead_waits_for_it(wclient: metad.Client) -> None:
    far = metad.Revision(1 << 40, 0)
    with wclient.watch(start=far, progress=0.1) as w:
        a, b = next(w), next(w)  # the first response, then progress
    assert a.events == b.events == () and a.next == b.next == far


def test_a_start_every_member_compacted_raises(wcluster: Cluster, wclient: metad.Client) -> None:
    """After more than WINDOW events every member has dropped the oldest: a watch from revision 1
    is refused by each, and the watch raises WatchCompacted naming the oldest retained."""
    p = prefix()
    st = wclient.batch_put([metad.BatchPutItem(f"{p}{i}", 8) for i in range(WINDOW + 50)])
    assert all(metad.item_error(s) is None for s in st)
    target = wclient.status(wcluster.leader(wclient).client).applied_index
    wait_for(lambda: all(wclient.status(n.client, timeout=1).applied_index >= target for n in wcluster.nodes),
             15, "every member applied the batch")
    w = wclient.watch(start=metad.Revision(1, 0))
    t0 = time.monotonic()
    with pytest.raises(metad.WatchCompacted) as ei:
        next(w)
    assert time.monotonic() - t0 < 5
    assert ei.value.revision is not None and ei.value.revision > metad.Revision(1, 0)
    with pytest.raises(StopIteration):
        next(w)  # the watch is over


def test_groups_and_segments_have_events(wclient: metad.Client) -> None:
    p = prefix()
    seg = metad.segment(1 << 20, "sim://" + p, name=p, base=1 << 40)
    mine = ["GROUP_CREATED", "GROUP_REMOVED", "SEGMENT_MOUNTED", "SEGMENT_UNMOUNTED"]
    with wclient.watch(all_tenants=True, kinds=mine, progress=0.2) as w:
        next(w)
        wclient.mount_segment(seg)
        wclient.put(p + "a", 64, options=metad.PutOptions(group=p + "g"))
        wclient.remove(p + "a", force=True)
        wclient.unmount_segment(seg.id)
        got: List[metad.WatchEvent] = []
        end = time.monotonic() + LIMIT
        while not any(e.kind == "SEGMENT_UNMOUNTED" and e.segment and e.segment.id == seg.id for e in got):
            assert time.monotonic() < end, got
            got.extend(e for e in next(w).events if (e.segment and e.segment.id == seg.id) or e.group == (p + "g").encode())
    assert [e.kind for e in got] == mine[2:3] + mine[:2] + mine[3:]
    mounted, created, removed, unmounted = got
    assert mounted.segment is not None and (mounted.segment.name, mounted.segment.endpoint) == (p, "sim://" + p)
    assert mounted.tenant == "" and mounted.key == b"" and mounted.time_unix_nano > 0
    assert (created.tenant, created.key) == ("default", b"")
    assert created.revision < removed.revision < unmounted.revision


def test_a_refused_request_raises_at_once(wclient: metad.Client) -> None:
    with pytest.raises(metad.InvalidArgument, match="all_tenants"):
        next(wclient.watch("t", all_tenants=True))
    with pytest.raises(ValueError, match="unknown watch kind"):
        wclient.watch(kinds=["STORD"])
    with pytest.raises(TypeError):
        wclient.watch(prefix=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="progress"):
        wclient.watch(progress=0)


def test_an_async_watch(wcluster: Cluster) -> None:
    async def main() -> None:
        p = prefix()
        async with metad.AsyncClient(wcluster.endpoints, metad.Config(timeout=20.0)) as a:
            await a.mount_segment(metad.segment(1 << 24, "sim://watch-aio", name="watch-aio"))
            async with a.watch(prefix=p, progress=0.2) as w:
                first = await w.__anext__()
                assert first.events == ()
                await a.put(p + "a", 64)
                await a.remove(p + "a", force=True)
                got: List[metad.WatchEvent] = []
                end = time.monotonic() + LIMIT
                async for b in w:
                    got.extend(b.events)
                    if len(got) >= 2 or time.monotonic() > end:
                        break
                key = (p + "a").encode()
                assert [(e.kind, e.key) for e in got] == [("STORED", key), ("REMOVED", key)]
                assert got[0].replicas and got[0].revision < got[1].revision
            with pytest.raises(StopAsyncIteration):
                await w.__anext__()
            with pytest.raises(metad.InvalidArgument):
                await a.watch("t", all_tenants=True).__anext__()
            # From the first one's start, the same events.
            async with a.watch(prefix=p, start=first.next, progress=0.2) as w2:
                again: List[metad.WatchEvent] = []
                async for b in w2:
                    again.extend(b.events)
                    if len(again) >= 2 or time.monotonic() > end:
                        break
                assert again == got
    asyncio.run(asyncio.wait_for(main(), 60))


# ---------------------------------------------------------------------------------------------
# The rules of WatchPlan, on fake endpoints.


def compacted(index: int) -> metad.MetadError:
    """The error of a member that retains revisions from index on."""
    detail = types_pb2.ErrorDetail(reason=types_pb2.REASON_WATCH_COMPACTED,
                                   revision=types_pb2.Revision(index=index)).SerializeToString()
    status = _ld(3, _ld(1, b"type.googleapis.com/metad.v1.ErrorDetail") + _ld(2, detail))

    class E(FakeError):
        def trailing_metadata(self) -> List[Tuple[str, bytes]]:
            return [("grpc-status-details-bin", status)]
    return metad.errors.from_rpc_error(E(grpc.StatusCode.FAILED_PRECONDITION))


def plan() -> _watchers.WatchPlan:
    server = FakeServer(Script())
    eps = Endpoints(ENDPOINTS, lambda a: FakeChannel(server, a))
    return _watchers.WatchPlan(eps, metad.metadata_pb2.WatchRequest(), 1.0)


UNAVAILABLE = metad.errors.from_rpc_error(FakeError(grpc.StatusCode.UNAVAILABLE))


def test_the_plan_raises_when_every_member_refuses() -> None:
    e = compacted(7)
    assert isinstance(e, metad.WatchCompacted) and e.revision == metad.Revision(7, 0)
    pl = plan()
    assert pl.ep.addr == ENDPOINTS[0]
    assert pl.failed(e, False) == 0 and pl.ep.addr == ENDPOINTS[1]
    assert pl.failed(compacted(8), False) == 0 and pl.ep.addr == ENDPOINTS[2]
    with pytest.raises(metad.WatchCompacted) as ei:
        pl.failed(compacted(9), False)
    assert ei.value is e


def test_the_plan_waits_between_rounds_of_failures() -> None:
    pl = plan()
    waits: List[float] = []
    for _ in range(8):
        for err in (UNAVAILABLE, compacted(3), None):  # a member down, one compacted, one ended
            waits.append(pl.failed(err, False))
    assert [w for w in waits if w] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert pl.ep.addr == ENDPOINTS[0]


def test_the_plan_starts_a_new_round_when_the_stream_moved_on() -> None:
    pl = plan()
    assert pl.failed(compacted(3), False) == 0
    assert pl.failed(compacted(3), False) == 0
    pl.seen(metad.metadata_pb2.WatchResponse(next=types_pb2.Revision(index=5)))
    assert pl.request.start.index == 5
    assert pl.failed(compacted(3), False) == 0  # the first of a new round
    assert pl.failed(UNAVAILABLE, True) == 0 and pl.ep.suspect_until == 0
    assert pl.cluster.eps[0].suspect_until > time.monotonic()  # left for silence: suspected


def test_the_plan_raises_other_refusals_at_once() -> None:
    pl = plan()
    denied = metad.errors.from_rpc_error(FakeError(grpc.StatusCode.PERMISSION_DENIED))
    with pytest.raises(metad.PermissionDenied):
        pl.failed(denied, False)
