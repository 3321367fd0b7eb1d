#!/usr/bin/env python3
"""Reads metad's KV event feed as a router written for the old master's feed does.

Usage: subscriber.py ENDPOINT LAST_KEY SECONDS

Subscribes to the empty topic at ENDPOINT and checks every message: three frames (an empty
topic, an 8-byte big-endian sequence number, a msgpack payload), the payload an array of an
integer time in ms, 1 to 64 event maps and 0, which packs back to the same bytes. For each message
it prints one JSON line: the sequence number, whether it is a gap by the rule of Dynamo's reader
(neither the last number plus one nor a repeat), and the events as
[event_type, tenant_id, object_key, medium, group_id, seq_hashes, block_hashes, event_id].
It exits 0 after the message holding an event of LAST_KEY, 1 on a bad message or after SECONDS.
"""
import json
import sys
import time

import msgpack
import zmq


def fail(why):
    print(json.dumps({"error": why}), flush=True)
    sys.exit(1)


def check_event(e, ts):
    if not isinstance(e, dict):
        fail("an event that is not a map: %r" % (e,))
    if e.get("timestamp") != ts:
        fail("event time %r in a batch of %r" % (e.get("timestamp"), ts))
    if e.get("event_type") not in ("stored", "removed"):
        fail("event_type %r" % (e.get("event_type"),))
    if not isinstance(e.get("tenant_id"), str) or not isinstance(e.get("object_key"), str):
        fail("tenant_id or object_key not a string: %r" % (e,))
    if e.get("group_id") is not None and not isinstance(e["group_id"], str):
        fail("group_id %r" % (e["group_id"],))
    if not isinstance(e.get("seq_hashes"), list) or not isinstance(e.get("block_hashes"), list):
        fail("hash arrays: %r" % (e,))


def main():
    endpoint, last, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    deadline = time.monotonic() + seconds
    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(endpoint)
    prev = None
    try:
        while time.monotonic() < deadline:
            if not sock.poll(timeout=100):
                continue
            frames = sock.recv_multipart()
            if len(frames) != 3:
                fail("%d frames" % len(frames))
            topic, seq_b, payload = frames
            if topic != b"" or len(seq_b) != 8:
                fail("topic %r, sequence frame of %d bytes" % (topic, len(seq_b)))
            seq = int.from_bytes(seq_b, "big")
            batch = msgpack.unpackb(payload, raw=False)
            if not isinstance(batch, list) or len(batch) != 3:
                fail("payload %r" % (batch,))
            ts, events, dp = batch
            if type(ts) is not int or dp != 0 or not isinstance(events, list) or not 1 <= len(events) <= 64:
                fail("envelope %r %r %r" % (ts, type(events), dp))
            if msgpack.packb(batch) != payload:
                fail("the payload does not pack back to its bytes")
            for e in events:
                check_event(e, ts)
            gap = prev is not None and seq != prev + 1 and seq != prev
            prev = seq
            print(json.dumps({"seq": seq, "gap": gap, "events": [
                [e["event_type"], e["tenant_id"], e["object_key"], e["medium"], e["group_id"],
                 e["seq_hashes"], e["block_hashes"], e["event_id"]] for e in events]}), flush=True)
            if any(e["object_key"] == last for e in events):
                return 0
        fail("no event of %r within %s s" % (last, seconds))
    finally:
        sock.close()
        ctx.term()


if __name__ == "__main__":
    sys.exit(main())
