"""Failover on a cluster of its own: a paused (silent) leader is abandoned by the attempt
watchdog of either client, and a SIGKILLed leader during a loop of puts loses no acknowledged put."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Iterator, List

import pytest

import metad
from cluster import Cluster, wait_for


@pytest.fixture(scope="module")
def fcluster() -> Iterator[Cluster]:
    c = Cluster(["--client-ttl", "60s"])
    try:
        yield c
    finally:
        c.stop()


def test_silent_leader_is_abandoned(fcluster: Cluster) -> None:
    with metad.Client(fcluster.endpoints, metad.Config(timeout=20.0, attempt_timeout=1.0)) as c:
        c.mount_segment(metad.segment(1 << 26, "sim://pause", name="pause"))
        leader = fcluster.leader(c)
        c.put("before-pause", 64)
        assert c.leader() == leader.client
        fcluster.pause(leader)
        try:
            t0 = time.monotonic()
            c.put("during-pause", 64)  # the watchdog gives up on the silent node; another answers
            took = time.monotonic() - t0
            assert c.leader() != leader.client
            assert took < 10, took
            with metad.Client([leader.client], metad.Config(attempt_timeout=0.4, max_retries=-1)) as only:
                with pytest.raises(metad.OutcomeUnknown) as ei:
                    only.exists("x")
                assert ei.value.reason == metad.types_pb2.REASON_UNAVAILABLE
        finally:
            fcluster.resume(leader)
        assert c.exists("during-pause") and c.exists("before-pause")


def test_silent_leader_is_abandoned_async(fcluster: Cluster) -> None:
    async def run(leader_addr: str) -> None:
        async with metad.AsyncClient(fcluster.endpoints, metad.Config(timeout=20.0, attempt_timeout=1.0)) as c:
            await c.mount_segment(metad.segment(1 << 26, "sim://pause-aio", name="pause-aio"))
            await c.put("before-pause-aio", 64)
            assert c.leader() == leader_addr
            fcluster.pause(leader)
            try:
                t0 = time.monotonic()
                await c.put("during-pause-aio", 64)  # the watchdog gives up on the silent node
                took = time.monotonic() - t0
                assert c.leader() != leader_addr
                assert took < 10, took
                async with metad.AsyncClient([leader_addr], metad.Config(attempt_timeout=0.4, max_retries=-1)) as only:
                    with pytest.raises(metad.OutcomeUnknown) as ei:
                        await only.exists("x")
                    assert ei.value.reason == metad.types_pb2.REASON_UNAVAILABLE
            finally:
                fcluster.resume(leader)
            assert await c.exists("during-pause-aio") and await c.exists("before-pause-aio")

    with metad.Client(fcluster.endpoints) as sc:
        leader = fcluster.leader(sc)
    asyncio.run(run(leader.client))


def test_leader_kill_loses_no_acknowledged_put(fcluster: Cluster) -> None:
    with metad.Client(fcluster.endpoints, metad.Config(timeout=20.0)) as c:
        c.mount_segment(metad.segment(1 << 26, "sim://kill", name="kill"))
        leader = fcluster.leader(c)
        acked: List[str] = []
        unknown: List[str] = []
        stop = threading.Event()

        def writer() -> None:
            i = 0
            while not stop.is_set():
                k = f"kill-{i}"
                i += 1
                try:
                    c.put(k, 64)
                    acked.append(k)
                except metad.MetadError:
                    unknown.append(k)

        t = threading.Thread(target=writer)
        t.start()
        try:
            wait_for(lambda: len(acked) >= 50, 20, "50 puts before the kill")
            fcluster.kill(leader)
            n = len(acked)
            wait_for(lambda: len(acked) >= n + 50, 30, "50 puts after the kill")
        finally:
            stop.set()
            t.join()
        assert c.leader() != leader.client
        assert len(unknown) <= 3, unknown
        got = c.batch_exists(acked)
        missing = [k for k, e in zip(acked, got.exists) if not e]
        assert not missing, f"acknowledged puts lost: {missing}"
        fcluster.start(leader)  # the module's other tests, if any, see three nodes again
        fcluster.wait_up(leader, c)
