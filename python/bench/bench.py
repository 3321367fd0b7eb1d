"""Python client against Go client throughput, in one run on one fresh 3-node loopback cluster:
puts/s (put_start + put_end of a 4 KiB object) and gets/s (get of a preloaded key) at the same
concurrency, and the client's own CPU time per operation (user + system of its process, every
thread of gRPC's included). The Go side is `metactl bench` (the Go client, --conns 1 like the
Python side's one client); the Python side is one AsyncClient shared by as many asyncio tasks
("asyncio"), then one Client shared by as many threads ("threads"). Unless --no-floor, two more
sides show what grpcio itself costs: the same calls made with grpcio alone, from as many asyncio
tasks on one grpc.aio channel ("grpc.aio") and as many threads on one channel making blocking calls
("grpc"), to the leader, without retries, session headers or result conversion. They run one after
the other, --rounds times in turn.

Usage: python bench/bench.py [--clients N] [--seconds S] [--keys K] [--rounds R]   (make bench-python)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
import uuid
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import grpc  # noqa: E402
import grpc.aio  # noqa: E402

import metad  # noqa: E402
from metad import _core as core  # noqa: E402
from metad.metadv1 import metadata_pb2  # noqa: E402
from cluster import REPO, Cluster  # noqa: E402

METACTL = os.path.join(REPO, "bin", "metactl")


def go_bench(endpoints: List[str], op: str, clients: int, seconds: int, keys: int) -> Dict[str, float]:
    """metactl bench's answer, with cpu_s: the CPU time metactl used (its preload included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [METACTL, "-o", "json", "--endpoints", ",".join(endpoints), "bench", "--clients", str(clients),
         "--conns", "1", "--duration", f"{seconds}s", "--op", op, "--mount", "1GiB", "--size", "4096",
         "--keys", str(keys)], check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r: Dict[str, float] = json.loads(out)
    r["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def cpu_now() -> float:
    """This process's CPU time so far (every thread), seconds."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def py_async(endpoints: List[str], op: str, clients: int, seconds: int, keys: int) -> Dict[str, float]:
    async with metad.AsyncClient(endpoints, metad.Config(timeout=10.0)) as c:
        seg = metad.segment(1 << 30, "sim://pybench", name="pybench")
        await c.mount_segment(seg)
        pinger = asyncio.create_task(c.ping_loop([seg]))
        run = uuid.uuid4().hex[:8]
        pre: List[str] = []
        if op == "get":
            pre = [f"pybench-{run}/pre/{i:08d}" for i in range(keys)]
            for i in range(0, keys, 1024):
                await c.batch_put([metad.BatchPutItem(k, 4096) for k in pre[i:i + 1024]])
        done = errors = 0
        first_error: Dict[str, str] = {}
        stop_at = time.monotonic() + seconds

        async def worker(w: int) -> None:
            nonlocal done, errors
            seq = 0
            rng = random.Random(w)
            while time.monotonic() < stop_at:
                try:
                    if op == "put":
                        k = f"pybench-{run}/w{w}/{seq}"
                        seq += 1
                        await c.put_start(k, 4096)
                        await c.put_end(k)
                    else:
                        await c.get(pre[rng.randrange(len(pre))])
                    done += 1
                except metad.MetadError as e:
                    errors += 1
                    first_error.setdefault("e", str(e))

        t0, c0 = time.monotonic(), cpu_now()
        await asyncio.gather(*(worker(w) for w in range(clients)))
        elapsed, cpu = time.monotonic() - t0, cpu_now() - c0
        pinger.cancel()
        await c.unmount_segment(seg.id)
        if first_error:
            print(f"python asyncio {op}: first error: {first_error['e']}", file=sys.stderr)
        return {"per_sec": done / elapsed, "errors": errors, "cpu_us": 1e6 * cpu / max(done, 1)}


def py_threads(endpoints: List[str], op: str, clients: int, seconds: int, keys: int) -> Dict[str, float]:
    with metad.Client(endpoints, metad.Config(timeout=10.0)) as c:
        seg = metad.segment(1 << 30, "sim://pybench", name="pybench")
        c.mount_segment(seg)
        pinger = c.ping_loop([seg])
        run = uuid.uuid4().hex[:8]
        pre: List[str] = []
        if op == "get":
            pre = [f"pybench-{run}/pre/{i:08d}" for i in range(keys)]
            for i in range(0, keys, 1024):
                c.batch_put([metad.BatchPutItem(k, 4096) for k in pre[i:i + 1024]])
        counts = [0] * clients
        errs = [0] * clients
        first_error: Dict[str, str] = {}
        start = threading.Barrier(clients + 1)
        stop_at = 0.0

        def worker(w: int) -> None:
            seq = 0
            rng = random.Random(w)
            start.wait()
            while time.monotonic() < stop_at:
                try:
                    if op == "put":
                        k = f"pybench-{run}/w{w}/{seq}"
                        seq += 1
                        c.put_start(k, 4096)
                        c.put_end(k)
                    else:
                        c.get(pre[rng.randrange(len(pre))])
                    counts[w] += 1
                except metad.MetadError as e:
                    errs[w] += 1
                    first_error.setdefault("e", str(e))

        threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(clients)]
        for t in threads:
            t.start()
        stop_at = time.monotonic() + seconds
        t0, c0 = time.monotonic(), cpu_now()
        start.wait()
        for t in threads:
            t.join()
        elapsed, cpu = time.monotonic() - t0, cpu_now() - c0
        pinger.stop()
        c.unmount_segment(seg.id)
        if first_error:
            print(f"python threads {op}: first error: {first_error['e']}", file=sys.stderr)
        done = sum(counts)
        return {"per_sec": done / elapsed, "errors": sum(errs), "cpu_us": 1e6 * cpu / max(done, 1)}


def _raw_methods(channel: Any) -> Tuple[Any, Any, Any]:
    """The PutStart, PutEnd and Get multi-callables of channel (grpcio alone)."""
    def mc(name: str, req: Any, resp: Any) -> Any:
        return channel.unary_unary(f"/metad.v1.Metadata/{name}", request_serializer=req.SerializeToString,
                                   response_deserializer=resp.FromString)
    return (mc("PutStart", metadata_pb2.PutStartRequest, metadata_pb2.PutStartResponse),
            mc("PutEnd", metadata_pb2.PutEndRequest, metadata_pb2.PutEndResponse),
            mc("Get", metadata_pb2.GetRequest, metadata_pb2.GetResponse))


def grpc_floor(endpoints: List[str], op: str, clients: int, seconds: int, keys: int, aio: bool) -> Dict[str, float]:
    """op made with grpcio alone at the leader, from asyncio tasks (aio) or threads (blocking calls):
    what the clients cannot go below. A Client mounts the segment and preloads the keys first."""
    with metad.Client(endpoints, metad.Config(timeout=10.0)) as c:
        seg = metad.segment(1 << 30, "sim://pyfloor", name="pyfloor")
        c.mount_segment(seg)
        c.ping()  # calls now go to the leader
        leader, cid = c.leader(), c.client_id
        run = uuid.uuid4().hex[:8]
        pre = [f"pyfloor-{run}/pre/{i:08d}".encode() for i in range(keys if op == "get" else 0)]
        for i in range(0, len(pre), 1024):
            c.batch_put([metad.BatchPutItem(k, 4096) for k in pre[i:i + 1024]])
        if aio:
            done, cpu, elapsed = asyncio.run(_floor_aio(leader, cid, run, pre, op, clients, seconds))
        else:
            done, cpu, elapsed = _floor_threads(leader, cid, run, pre, op, clients, seconds)
        c.unmount_segment(seg.id)
    return {"per_sec": done / elapsed, "errors": 0, "cpu_us": 1e6 * cpu / max(done, 1)}


async def _floor_aio(leader: str, cid: bytes, run: str, pre: List[bytes], op: str, clients: int,
                     seconds: int) -> Tuple[int, float, float]:
    ch = grpc.aio.insecure_channel(leader, options=core.CHANNEL_OPTIONS)
    put_start, put_end, get = _raw_methods(ch)
    done = 0
    stop_at = time.monotonic() + seconds

    async def worker(w: int) -> None:
        nonlocal done
        seq = 0
        rng = random.Random(w)
        while time.monotonic() < stop_at:
            if op == "put":
                k = f"pyfloor-{run}/a{w}/{seq}".encode()
                seq += 1
                await put_start(metadata_pb2.PutStartRequest(client_id=cid, key=k, size=4096), timeout=10)
                await put_end(metadata_pb2.PutEndRequest(client_id=cid, key=k), timeout=10)
            else:
                await get(metadata_pb2.GetRequest(key=pre[rng.randrange(len(pre))]), timeout=10)
            done += 1

    t0, c0 = time.monotonic(), cpu_now()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    elapsed, cpu = time.monotonic() - t0, cpu_now() - c0
    await ch.close()
    return done, cpu, elapsed


def _floor_threads(leader: str, cid: bytes, run: str, pre: List[bytes], op: str, clients: int,
                   seconds: int) -> Tuple[int, float, float]:
    ch = grpc.insecure_channel(leader, options=core.CHANNEL_OPTIONS)
    put_start, put_end, get = _raw_methods(ch)
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    stop_at = 0.0

    def worker(w: int) -> None:
        seq = 0
        rng = random.Random(w)
        start.wait()
        while time.monotonic() < stop_at:
            if op == "put":
                k = f"pyfloor-{run}/t{w}/{seq}".encode()
                seq += 1
                put_start(metadata_pb2.PutStartRequest(client_id=cid, key=k, size=4096), timeout=10)
                put_end(metadata_pb2.PutEndRequest(client_id=cid, key=k), timeout=10)
            else:
                get(metadata_pb2.GetRequest(key=pre[rng.randrange(len(pre))]), timeout=10)
            counts[w] += 1

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(clients)]
    for t in threads:
        t.start()
    stop_at = time.monotonic() + seconds
    t0, c0 = time.monotonic(), cpu_now()
    start.wait()
    for t in threads:
        t.join()
    elapsed, cpu = time.monotonic() - t0, cpu_now() - c0
    ch.close()
    return sum(counts), cpu, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=16, help="concurrent callers on each side")
    ap.add_argument("--seconds", type=int, default=5, help="duration of each run")
    ap.add_argument("--keys", type=int, default=2000, help="keys preloaded for get")
    ap.add_argument("--rounds", type=int, default=1, help="times each op runs on each side, alternated")
    ap.add_argument("--no-floor", action="store_true", help="skip the grpcio-alone sides")
    a = ap.parse_args()
    # A long client ttl: the segments of one run's clients stay mounted through the later runs,
    # so objects placed in them are not erased under a later run's gets.
    c = Cluster(["--client-ttl", "5m"], fast=False)
    try:
        with metad.Client(c.endpoints) as cl:
            c.leader(cl)
        # (op, side) -> [(per_sec, errors, cpu_us)], one per round
        got: Dict[Tuple[str, str], List[Tuple[float, int, float]]] = {}
        for _ in range(a.rounds):
            for op in ("put", "get"):
                g = go_bench(c.endpoints, op, a.clients, a.seconds, a.keys)
                n = g["puts"] if op == "put" else g["gets"]
                got.setdefault((op, "go"), []).append(
                    (g["puts_per_sec"] if op == "put" else g["gets_per_sec"], int(g["errors"]),
                     1e6 * g["cpu_s"] / max(n, 1)))
                p = asyncio.run(py_async(c.endpoints, op, a.clients, a.seconds, a.keys))
                got.setdefault((op, "asyncio"), []).append((p["per_sec"], int(p["errors"]), p["cpu_us"]))
                p = py_threads(c.endpoints, op, a.clients, a.seconds, a.keys)
                got.setdefault((op, "threads"), []).append((p["per_sec"], int(p["errors"]), p["cpu_us"]))
                if not a.no_floor:
                    for side, aio in (("grpc.aio", True), ("grpc", False)):
                        p = grpc_floor(c.endpoints, op, a.clients, a.seconds, a.keys, aio)
                        got.setdefault((op, side), []).append((p["per_sec"], int(p["errors"]), p["cpu_us"]))
    finally:
        c.stop()
    print(f"python client vs Go client, 3-node loopback cluster, {a.clients} concurrent callers each, "
          f"{a.seconds}s per run, {a.rounds} round(s) alternated, 4 KiB objects; cpu: client CPU per op "
          f"(the Go figure includes metactl's preload); grpc.aio, grpc: grpcio alone, no session")
    print(f"{'op':<5} {'client':<8} {'ops/s':>9} {'vs go':>6} {'cpu us/op':>10} {'errors':>7}")
    for op in ("put", "get"):
        gos = got[(op, "go")]
        for side in ("go", "asyncio", "threads", "grpc.aio", "grpc"):
            for i, (rate, errs, cpu) in enumerate(got.get((op, side), [])):
                print(f"{op + 's':<5} {side:<8} {rate:>9.0f} {rate / gos[i][0]:>6.2f} {cpu:>10.0f} {errs:>7}")


if __name__ == "__main__":
    main()
