"""Python client against Go client throughput, in one run on one fresh 3-node loopback cluster:
puts/s (put_start + put_end of a 4 KiB object) and gets/s (get of a preloaded key) at the same
concurrency. The Go side is `metactl bench` (the Go client, --conns 1 like the Python side's one
client); the Python side is one AsyncClient shared by as many asyncio tasks.

Usage: python bench/bench.py [--clients N] [--seconds S] [--keys K]   (make bench-python)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import metad  # noqa: E402
from cluster import REPO, Cluster  # noqa: E402

METACTL = os.path.join(REPO, "bin", "metactl")


def go_bench(endpoints: List[str], op: str, clients: int, seconds: int, keys: int) -> Dict[str, float]:
    out = subprocess.run(
        [METACTL, "-o", "json", "--endpoints", ",".join(endpoints), "bench", "--clients", str(clients),
         "--conns", "1", "--duration", f"{seconds}s", "--op", op, "--mount", "1GiB", "--size", "4096",
         "--keys", str(keys)], check=True, capture_output=True, text=True).stdout
    r: Dict[str, float] = json.loads(out)
    return r


async def py_bench(endpoints: List[str], op: str, clients: int, seconds: int, keys: int) -> Dict[str, float]:
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

        t0 = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(clients)))
        elapsed = time.monotonic() - t0
        pinger.cancel()
        await c.unmount_segment(seg.id)
        if first_error:
            print(f"python {op}: first error: {first_error['e']}", file=sys.stderr)
        return {"per_sec": done / elapsed, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=16, help="concurrent callers on each side")
    ap.add_argument("--seconds", type=int, default=5, help="duration of each run")
    ap.add_argument("--keys", type=int, default=2000, help="keys preloaded for get")
    a = ap.parse_args()
    # A long client ttl: the segments of one run's clients stay mounted through the later runs,
    # so objects placed in them are not erased under a later run's gets.
    c = Cluster(["--client-ttl", "5m"], fast=False)
    try:
        with metad.Client(c.endpoints) as cl:
            c.leader(cl)
        rows = []
        for op in ("put", "get"):
            g = go_bench(c.endpoints, op, a.clients, a.seconds, a.keys)
            go_rate = g["puts_per_sec"] if op == "put" else g["gets_per_sec"]
            p = asyncio.run(py_bench(c.endpoints, op, a.clients, a.seconds, a.keys))
            rows.append((op, go_rate, p["per_sec"], int(g["errors"]), int(p["errors"])))
    finally:
        c.stop()
    print(f"python client vs Go client, 3-node loopback cluster, {a.clients} concurrent callers each, "
          f"{a.seconds}s per run, 4 KiB objects")
    print(f"{'op':<5} {'go/s':>10} {'python/s':>10} {'python/go':>10} {'go errors':>10} {'py errors':>10}")
    for op, gr, pr, ge, pe in rows:
        print(f"{op + 's':<5} {gr:>10.0f} {pr:>10.0f} {pr / gr:>10.2f} {ge:>10} {pe:>10}")


if __name__ == "__main__":
    main()
