"""Watches: the iterators that :meth:`metad.Client.watch` (:class:`Watch`) and
:meth:`metad.AsyncClient.watch` (:class:`AsyncWatch`) return, and :class:`WatchPlan`, the rules
both follow to move a stream from member to member without losing or repeating an event."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, AsyncIterator, Iterator, List, Optional, Tuple

import grpc
import grpc.aio

from metad import _watch, errors
from metad._core import SUSPECT_ATTEMPTS, Cluster, Endpoint, log
from metad._watch import Revision, WatchBatch
from metad.metadv1 import metadata_pb2, types_pb2


WATCH_RETRY_INITIAL = 0.05
WATCH_RETRY_MAX = 2.0
"""The wait after a round of members that all failed a watch, seconds: WATCH_RETRY_INITIAL, doubling
up to WATCH_RETRY_MAX."""

_WATCH_REFUSALS = (types_pb2.REASON_WATCH_COMPACTED, types_pb2.REASON_WATCH_FELL_BEHIND,
                   types_pb2.REASON_STATE_REPLACED)
"""The reasons of a member that cannot go on from the stream's revision (another may)."""

_WATCH_FAILURES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN, grpc.StatusCode.CANCELLED,
                   grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL)
"""The codes of a member (or a connection) that failed the stream, without a refusal."""


class WatchPlan:
    """Which member a watch streams from and where it resumes, shared by the clients' watches; used
    by one watch at a time (not safe for concurrent use).

    ``request`` is the watch's request; :meth:`seen` moves its start to every response's next, so a
    stream opened again (on another member) goes on from where the last one reached: no event is
    lost or repeated. The first stream goes to the endpoint calls go to; after a failure
    (:meth:`failed`) the next goes to the next endpoint in order. A round is one failure of each
    endpoint in a row without the stream moving on: when every member of the round refused with
    WATCH_COMPACTED, WATCH_FELL_BEHIND or STATE_REPLACED, the first refusal is raised; else the round
    ends with a wait (:data:`WATCH_RETRY_INITIAL`, doubling to :data:`WATCH_RETRY_MAX`). Any other
    refusal (invalid input, permission) is raised at once."""

    def __init__(self, cluster: Cluster, request: metadata_pb2.WatchRequest, attempt_timeout: Optional[float]) -> None:
        self.cluster = cluster
        self.request = request
        self.ep: Endpoint = cluster.cur
        self._attempt_timeout = attempt_timeout
        self._refusals: List[errors.MetadError] = []
        self._tried = 0
        self._wait = WATCH_RETRY_INITIAL
        self._round_start = self._start()

    def _start(self) -> Tuple[int, int]:
        s = self.request.start
        return s.index, s.position

    def seen(self, resp: metadata_pb2.WatchResponse) -> None:
        """Note a response of the stream: its next is where a stream opened again starts."""
        if resp.HasField("next"):
            self.request.start.CopyFrom(resp.next)

    def failed(self, err: Optional[errors.MetadError], silent: bool) -> float:
        """Note that the stream on ``ep`` ended: with err (None: the member ended it without an
        error), or silent (it sent nothing, not even progress, for its progress interval plus the
        attempt timeout: the stream was cancelled and the endpoint is suspected as a silent node is
        by the calls). Moves ``ep`` to the next endpoint and returns how long to wait before opening
        the stream there (0: at once), or raises: err when the request itself is refused, the first
        refusal when every member of a round refused."""
        ep = self.ep
        if self._start() > self._round_start:  # the stream moved on: a new round
            self._round_start = self._start()
            self._tried, self._refusals, self._wait = 0, [], WATCH_RETRY_INITIAL
        why: object = "the member ended the stream"
        if silent:
            why = "it fell silent"
            if self._attempt_timeout is not None:
                ep.suspect_until = time.monotonic() + SUSPECT_ATTEMPTS * self._attempt_timeout
        elif err is not None:
            why = err
            if err.reason in _WATCH_REFUSALS:
                self._refusals.append(err)
            elif err.code not in _WATCH_FAILURES:
                raise err
        eps = self.cluster.eps
        n = len(eps)
        self.ep = eps[(ep.idx + 1) % n]
        log.info("watch: moves from %s to %s at %s after %s", ep.addr, self.ep.addr, _rev(self.request.start), why)
        self._tried += 1
        if self._tried < n:
            return 0.0
        if len(self._refusals) >= n:
            raise self._refusals[0]
        # Every member failed this round (some may be down or restarting): wait, then go round again.
        d = self._wait
        self._tried, self._refusals, self._wait = 0, [], min(2 * d, WATCH_RETRY_MAX)
        log.debug("watch: every member failed the stream; going round again in %.3fs", d)
        return d


def _rev(r: types_pb2.Revision) -> str:
    return f"{r.index}.{r.position}"


class Watch(Iterator[WatchBatch]):
    """An open watch of :meth:`Client.watch`: an iterator of :class:`~metad.WatchBatch`. Iterate it
    from one thread at a time; :meth:`close` may be called from any thread (it ends a wait in
    progress: the iteration stops). Closing it, leaving its ``with`` block or dropping it cancels
    the stream."""

    def __init__(self, cluster: Cluster, request: Any, attempt_timeout: Optional[float]) -> None:
        self._mu = threading.Lock()  # guards _call and _closed
        self._call: Any = None
        self._closed = False
        self._stopped = threading.Event()  # set by close: ends the wait between rounds
        self._plan = WatchPlan(cluster, request, attempt_timeout)
        limit = None if attempt_timeout is None else _watch.progress_of(request) + attempt_timeout
        self._dog = _StreamDog(limit)

    @property
    def endpoint(self) -> str:
        """The endpoint the stream is on (or, between streams, goes to next)."""
        return self._plan.ep.addr

    @property
    def next(self) -> Revision:
        """Where the watch has reached: the next of the last batch yielded, or the start asked for
        (Revision(0, 0): the next change) before the first."""
        return Revision.from_pb(self._plan.request.start)

    def __iter__(self) -> "Watch":
        return self

    def __next__(self) -> WatchBatch:
        plan = self._plan
        cl = plan.cluster
        while True:
            with self._mu:
                if self._closed:
                    raise StopIteration
                call = self._call
                if call is None:
                    if cl.closed:
                        self._end()
                        raise errors.ClientClosed("client closed")
                    call = self._call = plan.ep.stream("md", "Watch")(plan.request)
                    self._dog.arm(call)
            err: Optional[errors.MetadError] = None
            try:
                resp = next(call)
            except StopIteration:
                pass  # the member ended the stream
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e)
            else:
                self._dog.arm(call)
                plan.seen(resp)
                return WatchBatch.from_pb(resp)
            with self._mu:
                self._call = None
                if self._closed:
                    raise StopIteration
            if cl.closed:
                self._end()
                raise errors.ClientClosed("client closed")
            try:
                delay = plan.failed(err, self._dog.fired(call))
            except errors.MetadError:
                self._end()
                raise
            if delay > 0 and self._stopped.wait(delay):
                raise StopIteration

    def _end(self) -> None:
        """The watch is over (closed, or a final error): cancel the stream, stop the watchdog."""
        with self._mu:
            self._closed = True
            call, self._call = self._call, None
        if call is not None:
            call.cancel()
        self._stopped.set()
        self._dog.stop()

    def close(self) -> None:
        """Cancel the stream; the iteration stops (StopIteration). Idempotent."""
        self._end()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_dog", None) is not None:
            self._end()


class _StreamDog:
    """The silence watchdog of one :class:`Watch`: a daemon thread, started with the first stream,
    that cancels the stream's call once it has sent nothing for limit seconds (its progress
    interval plus the attempt timeout), and remembers it as fired. Safe for use from any thread. It
    holds no reference to its Watch, so dropping the Watch (which stops it) ends the thread; a limit
    of None (attempt_timeout None) watches nothing."""

    def __init__(self, limit: Optional[float]) -> None:
        self._limit = limit
        self._cond = threading.Condition()  # guards the fields below
        self._call: Any = None  # the call watched, None between streams
        self._due = 0.0  # when _call is silent for limit, time.monotonic()
        self._fired: Any = None  # the last call cancelled for silence
        self._stop = False
        self._thread: Optional[threading.Thread] = None

    def arm(self, call: Any) -> None:
        """Watch call (a new stream, or one that just answered) for limit seconds from now."""
        if self._limit is None:
            return
        with self._cond:
            if self._stop:
                return
            idle = self._call is None
            self._call, self._due = call, time.monotonic() + self._limit
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="metad-watch", daemon=True)
                self._thread.start()
            elif idle:
                self._cond.notify()

    def fired(self, call: Any) -> bool:
        """Whether call was cancelled for silence; the watchdog stops watching it."""
        with self._cond:
            if self._call is call:
                self._call = None
            return self._fired is call

    def stop(self) -> None:
        """End the thread."""
        with self._cond:
            self._stop = True
            self._call = None
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._stop:
                if self._call is None:
                    self._cond.wait()
                    continue
                left = self._due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                call, self._call, self._fired = self._call, None, self._call
                log.info("watch: no response for %.1fs; the member is taken for silent", self._limit)
                call.cancel()


class AsyncWatch(AsyncIterator[WatchBatch]):
    """An open watch of :meth:`AsyncClient.watch`: an async iterator of :class:`~metad.WatchBatch`,
    for one event loop. :meth:`aclose` (from any task of the loop) cancels the stream and ends a
    wait in progress: the iteration stops. A stream that sends nothing for its progress interval
    plus the attempt timeout is taken for a silent member and left."""

    def __init__(self, cluster: Cluster, request: Any, attempt_timeout: Optional[float]) -> None:
        self._plan = WatchPlan(cluster, request, attempt_timeout)
        self._limit = None if attempt_timeout is None else _watch.progress_of(request) + attempt_timeout
        self._call: Any = None
        self._closed = False
        self._stopped: Optional[asyncio.Event] = None  # set by aclose: ends the wait between rounds

    @property
    def endpoint(self) -> str:
        """The endpoint the stream is on (or, between streams, goes to next)."""
        return self._plan.ep.addr

    @property
    def next(self) -> Revision:
        """Where the watch has reached (see :attr:`metad.Watch.next`)."""
        return Revision.from_pb(self._plan.request.start)

    def __aiter__(self) -> "AsyncWatch":
        return self

    async def __anext__(self) -> WatchBatch:
        plan = self._plan
        cl = plan.cluster
        while True:
            if self._closed:
                raise StopAsyncIteration
            if cl.closed:
                self._end()
                raise errors.ClientClosed("client closed")
            call = self._call
            if call is None:
                call = self._call = plan.ep.stream("md", "Watch")(plan.request)
            err: Optional[errors.MetadError] = None
            silent = False
            try:
                if self._limit is None:
                    resp = await call.read()
                else:
                    resp = await asyncio.wait_for(call.read(), self._limit)
            except asyncio.TimeoutError:
                silent = True
                log.info("watch: no response for %.1fs; the member is taken for silent", self._limit)
                call.cancel()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and getattr(task, "cancelling", lambda: 0)():
                    self._end()  # the caller's task is cancelled (Python 3.11 and later tell)
                    raise
                if self._closed:
                    raise StopAsyncIteration from None
                if cl.closed:
                    self._end()
                    raise errors.ClientClosed("client closed") from None
                self._end()
                raise
            except grpc.aio.AioRpcError as e:
                err = errors.from_rpc_error(e)
            else:
                if resp is not grpc.aio.EOF:
                    plan.seen(resp)
                    return WatchBatch.from_pb(resp)
            self._call = None
            if self._closed:
                raise StopAsyncIteration
            if cl.closed:
                self._end()
                raise errors.ClientClosed("client closed")
            try:
                delay = plan.failed(err, silent)
            except errors.MetadError:
                self._end()
                raise
            if delay > 0:
                if self._stopped is None:
                    self._stopped = asyncio.Event()
                try:
                    await asyncio.wait_for(self._stopped.wait(), delay)
                except asyncio.TimeoutError:
                    pass

    def _end(self) -> None:
        """The watch is over (closed, or a final error): cancel the stream."""
        self._closed = True
        call, self._call = self._call, None
        if call is not None:
            call.cancel()
        if self._stopped is not None:
            self._stopped.set()

    async def aclose(self) -> None:
        """Cancel the stream; the iteration stops (StopAsyncIteration). Idempotent."""
        self._end()

    async def __aenter__(self) -> "AsyncWatch":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        call = getattr(self, "_call", None)
        if call is not None:
            try:
                call.cancel()
            except Exception:  # the loop may be gone: the channel's close ends the call
                pass
