"""A cache worker and a reader sharing a metad cluster (start one with `make run`).

The worker mounts a memory segment, keeps itself alive with a ping loop, and stores objects:
put_start says where to write, the worker writes the bytes there (here: into a bytearray that
stands for its memory), put_end commits. The reader asks get where an object lives and reads it.

    python python/examples/worker_and_reader.py          # endpoints from METAD_ENDPOINTS

The endpoints, TLS material and API key come from the METAD_* environment variables
(``metad.Config.from_env()``): against ``make run``, set METAD_CERTS_DIR=data/certs.
"""

from __future__ import annotations

import metad

SEGMENT_SIZE = 64 << 20


def main() -> None:
    memory = bytearray(SEGMENT_SIZE)  # the worker's segment, as bytes
    seg = metad.segment(SEGMENT_SIZE, "sim://example-worker", name="example")

    config = metad.Config.from_env()
    with metad.Client(config) as worker:
        worker.mount_segment(seg)
        loop = worker.ping_loop([seg])
        try:
            for i in range(3):
                key, data = f"example/{i}", f"cached block {i}".encode()
                try:
                    (replica,) = worker.put_start(key, len(data), options=metad.PutOptions(preferred_segments=[seg.id]))
                except metad.ObjectAlreadyExists:
                    continue  # left by an earlier run
                if replica.segment_id != seg.id:
                    # A preference is honoured when the segment has room; otherwise the object is
                    # placed on another worker's segment, which this worker cannot write into.
                    worker.put_revoke(key)
                    raise SystemExit(f"{key}: placed on segment {replica.segment_endpoint}, not this worker's")
                memory[replica.offset:replica.offset + len(data)] = data
                worker.put_end(key)

            with metad.Client(config) as reader:
                for i in range(3):
                    got = reader.get(f"example/{i}")
                    r = got.replicas[0]
                    print(f"example/{i}: {bytes(memory[r.offset:r.offset + got.size])!r} "
                          f"(segment {r.segment_endpoint}, lease {got.lease_ttl_ms} ms)")
                try:
                    reader.get("example/missing")
                except metad.ObjectNotFound as e:
                    print(f"example/missing: {metad.reason_name(e.reason)} for key {e.key!r}")
            worker.batch_remove([f"example/{i}" for i in range(3)], force=True)
        finally:
            loop.stop()
            worker.unmount_segment(seg.id)


if __name__ == "__main__":
    main()
