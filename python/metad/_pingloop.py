"""A worker's keep-alive thread over the synchronous client (Client.ping_loop)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from metad import _ops as ops
from metad import errors
from metad import results as res
from metad.metadv1 import types_pb2

if TYPE_CHECKING:
    from metad.client import Client


class PingLoop:
    """A worker's keep-alive: a daemon thread that pings its client every interval and remounts
    the segments the cluster lost. ``pings``, ``failures`` and ``remounts`` count what it did;
    ``last`` is the latest PingResult."""

    def __init__(self, client: Client, segments: Sequence[types_pb2.SegmentDesc], interval: float,
                 on_error: Optional[Callable[[errors.MetadError], None]]) -> None:
        self._c = client
        self._segs = list(segments)
        self._interval = interval
        self._on_error = on_error
        self._stop = threading.Event()
        self.pings = self.failures = self.remounts = 0
        self.last: Optional[res.PingResult] = None
        self._limit = 5.0
        self._t = threading.Thread(target=self._run, name="metad-ping", daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                resp = self._c.ping(timeout=self._limit)
                self.pings += 1
                self.last = resp
                if resp.client_ttl_ms:
                    self._limit = min(5.0, max(resp.client_ttl_ms / 3000, 0.001))
                missing = ops.missing_segments(self._segs, resp.segment_ids)
                for s in missing:
                    self._c.mount_segment(s, timeout=self._limit)
                    self.remounts += 1
            except errors.MetadError as e:
                if isinstance(e, errors.ClientClosed):
                    return
                self.failures += 1
                if self._on_error is not None:
                    self._on_error(e)
            self._stop.wait(self._interval)

    def stop(self) -> None:
        """Stop the loop and wait for its thread."""
        self._stop.set()
        self._t.join()

