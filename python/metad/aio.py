"""The asyncio metad client, on grpc.aio. Same calls, rules and exceptions as :class:`metad.Client`;
every call is a coroutine but watch (an async iterator), and writes go within client sessions the
same way (see :class:`metad._core.SessionPool`). Use one AsyncClient from one event loop."""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any, List, Optional, Sequence, Tuple, TypeVar, Union

import grpc
import grpc.aio

from metad import _config as conf
from metad import _core as core
from metad import _ops as ops
from metad._watch import Kinds, Revision
from metad._watchers import AsyncWatch
from metad import errors
from metad import results as res
from metad._config import Config
from metad._ops import BatchPutItem, Key, OffloadReport, PutOptions
from metad.metadv1 import types_pb2

T = TypeVar("T")

_SILENT_CODES = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)


def _deprecated(old: str, new: str) -> None:
    """Warn (DeprecationWarning, at the caller's caller) that method old is now new."""
    warnings.warn(f"metad: {old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)


class AsyncClient:
    """The asyncio form of :class:`metad.Client`: the same methods, each a coroutine (but watch, an
    async iterator), with the same leader discovery, attempt watchdog, retries, client sessions
    (writes exactly once unless ``Config.no_session``) and typed exceptions. Create it inside the
    event loop that uses it; ``await client.close()`` (or ``async with``) ends it."""

    def __init__(self, endpoints: Union[Sequence[str], Config, None] = None, config: Optional[Config] = None, *,
                 tls: Optional[conf.TLS] = None, api_key: Optional[str] = None) -> None:
        """Connect lazily to endpoints (default: ``config.endpoints``); a Config in place of
        endpoints is the configuration, as with :class:`metad.Client`. Raises ValueError for a bad
        configuration, a malformed endpoint included. tls and api_key, when given, replace the
        configuration's; the TLS files are read here. Nothing is read from the environment:
        ``AsyncClient(Config.from_env())`` takes the endpoints, TLS and API key from the METAD_*
        variables."""
        cfg = conf.client_config(endpoints, config, tls, api_key)
        self._cfg = cfg
        self._creds = conf.channel_credentials(cfg)
        self._id = cfg.client_id or core.new_client_id()
        self._cluster = core.Cluster(cfg.endpoints, self._dial)
        self._sess: Optional[_Sessions] = None if cfg.no_session else _Sessions()

    def _dial(self, addr: str) -> Any:
        if self._creds is None:
            return grpc.aio.insecure_channel(addr, options=core.CHANNEL_OPTIONS)
        return grpc.aio.secure_channel(addr, self._creds, options=core.CHANNEL_OPTIONS)

    def _sessions(self) -> bool:
        """Whether this client's writes carry a session header."""
        return self._sess is not None and self._sess.using()

    @property
    def client_id(self) -> bytes:
        """The 16-byte id this client writes and mounts as."""
        return self._id

    @property
    def config(self) -> Config:
        """The configuration in force."""
        return self._cfg

    def endpoints(self) -> List[str]:
        """The known endpoints: those configured, then any learned from the cluster."""
        return self._cluster.addrs()

    def leader(self) -> str:
        """The endpoint calls currently go to: the believed leader."""
        return self._cluster.cur.addr

    async def close(self) -> None:
        """Close the client's sessions (CloseSession, best effort, within
        core.CLOSE_SESSION_TIMEOUT) and every channel. Calls in flight fail; later calls raise
        ClientClosed."""
        if self._sess is not None and not self._cluster.closed:
            deadline = time.monotonic() + core.CLOSE_SESSION_TIMEOUT
            for sid in await self._sess.drain():
                try:
                    await self._retried(core.close_session_rpc(sid), deadline)
                except errors.MetadError as e:
                    core.log.debug("close: session %d not closed on the cluster (it expires at its ttl): %s", sid, e)
        for ch in self._cluster.close():
            await ch.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, op: core.Op[T], timeout: Optional[float]) -> T:
        t = self._cfg.timeout if timeout is None else timeout
        deadline = None if t is None else time.monotonic() + t
        try:
            rpc = next(op)
            while True:
                try:
                    reply = await self._call(rpc, deadline)
                except errors.MetadError as e:
                    rpc = op.throw(e)
                else:
                    rpc = op.send(reply)
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def _call(self, rpc: core.Rpc, deadline: Optional[float]) -> core.Reply:
        """rpc, retried, within a session when its request takes a header and the client writes in
        sessions (see Client._call)."""
        sess = self._sess
        if sess is None or rpc.endpoint is not None or not core.takes_session(rpc.request):
            return await self._retried(rpc, deadline)
        for again in (False, True):
            h = await sess.begin(self, deadline)
            core.set_header(rpc.request, h)
            if h is None:
                return await self._retried(rpc, deadline)
            try:
                return await self._retried(rpc, deadline)
            except errors.SessionExpired as e:
                if again or e.attempts != 1:
                    raise
                core.log.debug("%s: session %d expired before the first attempt ran; opening another",
                               rpc.method, h.session_id)
                await sess.expired(h)  # nothing was done: open a new session and go again
            finally:
                await sess.end(h)
        raise AssertionError("unreachable")

    async def _retried(self, rpc: core.Rpc, deadline: Optional[float]) -> core.Reply:
        """rpc sent to the believed leader and retried (see Client._retried)."""
        cl = self._cluster
        if cl.closed:
            raise errors.ClientClosed("client closed")
        if rpc.endpoint is not None:
            return core.Reply(await self._once(rpc, deadline), 1)
        delay = self._cfg.retry_initial
        redirected = False
        n = 0
        while True:
            ep = cl.cur
            n += 1
            try:
                resp = await self._attempt(ep, rpc, deadline)
            except errors.MetadError as err:
                err.attempts = n
                silent = getattr(err, "_silent", False)
                if silent:
                    core.log_abandoned(rpc, n, err)
                why = core.give_up_reason(deadline, n, self._cfg.max_retries, cl.closed)
                if why:
                    core.log_gave_up(rpc, n, ep.addr, err, why)
                    raise
                if silent:
                    assert self._cfg.attempt_timeout is not None
                    ep.suspect_until = time.monotonic() + core.SUSPECT_ATTEMPTS * self._cfg.attempt_timeout
                    redirected = False
                    cl.advance(ep, err)
                    core.log_retry(rpc, n, ep.addr, err, 0)
                    continue
                act, leader = core.classify(err, ep.addr)
                if act == core.STOP:
                    raise
                if act == core.REDIRECT:
                    if not cl.redirect(leader):
                        redirected = False
                        cl.advance(ep, err)
                    elif not redirected:
                        redirected = True
                        core.log_retry(rpc, n, ep.addr, err, 0)
                        continue
                else:
                    redirected = False
                    cl.advance(ep, err)
                d = core.jitter(delay)
                if deadline is not None and deadline - time.monotonic() <= d:
                    core.log_gave_up(rpc, n, ep.addr, err, "the call's timeout runs out before the next retry")
                    raise
                core.log_retry(rpc, n, ep.addr, err, d)
                await asyncio.sleep(d)
                delay = min(2 * delay, self._cfg.retry_max)
            else:
                ep.suspect_until = 0.0
                return core.Reply(resp, n)

    async def _attempt(self, ep: core.Endpoint, rpc: core.Rpc, deadline: Optional[float]) -> Any:
        """One attempt at ep under the attempt watchdog (see Client._attempt). The call is awaited
        as it is; the watchdog is a timer that starts probing (:class:`_Watchdog`) only once the
        call has run attempt_timeout/2."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        call = ep.method(rpc.service, rpc.method)(rpc.request, timeout=remaining)
        at = self._cfg.attempt_timeout
        dog = None if at is None else _Watchdog(ep, call, at, deadline)
        try:
            resp = await call
        except asyncio.CancelledError:
            if _cancelling():
                # The awaiting task itself was cancelled: say so (asyncio's contract), though
                # grpc.aio marks the call cancelled too, which would read as OutcomeUnknown, a
                # MetadError that a loop retrying MetadErrors (ping_loop) would go on after.
                raise
            if dog is not None and dog.silent is not None:
                raise dog.silent from None
            if not call.cancelled():
                raise
            raise errors.OutcomeUnknown("the call was cancelled", code=grpc.StatusCode.CANCELLED) from None
        except grpc.aio.AioRpcError as e:
            raise errors.from_rpc_error(e) from None
        finally:
            if dog is not None:
                dog.stop()
        if rpc.service == "md":
            self._cluster.follow_hint(ep, await call.initial_metadata())
        return resp

    async def _once(self, rpc: core.Rpc, deadline: Optional[float]) -> Any:
        assert rpc.endpoint is not None
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        ep = self._cluster.by_addr.get(rpc.endpoint)
        temp = None
        if ep is None:
            temp = self._dial(rpc.endpoint)
            ep = core.Endpoint(rpc.endpoint, -1, temp)
        try:
            return await ep.method(rpc.service, rpc.method)(rpc.request, timeout=remaining)
        except grpc.aio.AioRpcError as e:
            raise errors.from_rpc_error(e) from None
        finally:
            if temp is not None:
                await temp.close()

    # Metadata: puts and upserts.

    async def put_start(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
                  timeout: Optional[float] = None) -> List[res.Replica]:
        """Place a new object of size bytes: charge the tenant's quota and return the PROCESSING
        replicas to write.

        Within a session (the default) a retry of a put that applied answers with its replicas.
        Without one, if the call was retried and the retry met OBJECT_ALREADY_EXISTS, the object
        may be this very put, committed by an attempt whose answer was lost: put_start then revokes
        this client's pending write of key (which succeeds only if it is this client's) and places
        the object again; otherwise it raises ObjectAlreadyExists. So a client must not have two
        puts of one key in progress at once.
        """
        return await self._run(ops.put_start(self._id, tenant, key, size, options, self._sessions), timeout)

    async def put_end(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                timeout: Optional[float] = None) -> None:
        """Commit this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every
        tier). Idempotent."""
        await self._run(ops.put_end(self._id, tenant, key, tier), timeout)

    async def put_revoke(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                   timeout: Optional[float] = None) -> None:
        """Drop this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every tier)."""
        await self._run(ops.put_revoke(self._id, tenant, key, tier), timeout)

    async def put(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
            timeout: Optional[float] = None) -> List[res.Replica]:
        """put_start then put_end of every tier, for callers that write the bytes elsewhere or not
        at all. Returns the replicas as placed, marked COMPLETE. A put_end that raises
        ReservationLost (a leader change lost the reservation; nothing was created) places the
        object again, up to 3 placements. If put_end fails otherwise, a put_revoke is tried (its
        failure ignored) and put_end's error raised."""
        return await self._run(ops.put(self._id, tenant, key, size, options, self._sessions), timeout)

    async def upsert_start(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
                     timeout: Optional[float] = None) -> Tuple[List[res.Replica], bool]:
        """Insert or rewrite key with size bytes. Returns the PROCESSING replicas to write and
        whether the existing extents were reused (same size)."""
        return await self._run(ops.upsert_start(self._id, tenant, key, size, options), timeout)

    async def upsert_end(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                   timeout: Optional[float] = None) -> None:
        """Commit an upsert of key in tier (TIER_UNSPECIFIED = every tier)."""
        await self._run(ops.upsert_end(self._id, tenant, key, tier), timeout)

    async def upsert_revoke(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                      timeout: Optional[float] = None) -> None:
        """Abandon an upsert of key in tier (TIER_UNSPECIFIED = every tier)."""
        await self._run(ops.upsert_revoke(self._id, tenant, key, tier), timeout)

    # Metadata: reads and removals.

    async def get(self, key: Key, *, tenant: str = "", stale: bool = False,
            timeout: Optional[float] = None) -> res.GetResult:
        """Where to read key: its COMPLETE replicas, size, data type and the read lease granted
        (lease_ttl_ms; 0 for a stale read). stale lets any node answer from its own state. A
        missing key raises ObjectNotFound."""
        return await self._run(ops.get(tenant, key, stale), timeout)

    async def exists(self, key: Key, *, tenant: str = "", stale: bool = False, timeout: Optional[float] = None) -> bool:
        """Whether key has a COMPLETE replica (granting a read lease if so). A missing key is
        False, not an error."""
        return await self._run(ops.exists(tenant, key, stale), timeout)

    async def exist(self, key: Key, *, tenant: str = "", stale: bool = False, timeout: Optional[float] = None) -> bool:
        """Deprecated alias of :meth:`exists` (a DeprecationWarning)."""
        _deprecated("exist", "exists")
        return await self.exists(key, tenant=tenant, stale=stale, timeout=timeout)

    async def remove(self, key: Key, *, tenant: str = "", force: bool = False, timeout: Optional[float] = None) -> None:
        """Erase key; force removes it even under a read lease (never while it is being written).
        Without a session a retried remove may raise ObjectNotFound for an object its lost attempt
        removed."""
        await self._run(ops.remove(tenant, key, force), timeout)

    async def remove_all(self, *, tenant: str = "", force: bool = False,
                   timeout: Optional[float] = None) -> res.RemoveAllResult:
        """Erase every removable object of tenant; the answer counts those erased and skipped."""
        return await self._run(ops.remove_all(tenant, force), timeout)

    # Groups.

    async def list_keys(self, *, tenant: str = "", prefix: Key = b"", stale: bool = False,
                  timeout: Optional[float] = None) -> List[bytes]:
        """Every key of the tenant that starts with prefix, in byte order, fetched page after page
        (separate reads: keys created or removed meanwhile may or may not be listed). On failure
        the exception's ``partial`` holds the keys listed so far."""
        return await self._run(ops.list_keys(tenant, prefix, stale), timeout)

    async def list_keys_page(self, *, tenant: str = "", prefix: Key = b"", page_token: bytes = b"", limit: int = 0,
                       stale: bool = False, timeout: Optional[float] = None) -> Tuple[List[bytes], bytes]:
        """One page of the tenant's keys that start with prefix, after page_token (b"" = from the
        start), at most limit keys (0 = the server's page size), and the next page's token (b""
        when none follows)."""
        return await self._run(ops.list_keys_page(tenant, prefix, page_token, limit, stale), timeout)

    async def get_by_regex(self, pattern: str, *, tenant: str = "", stale: bool = False,
                     timeout: Optional[float] = None) -> List[res.RegexItem]:
        """Where to read every readable object whose key the Go regexp (RE2) pattern matches
        anywhere, page after page, leasing each (unless stale). On failure the exception's
        ``partial`` holds the items read so far."""
        return await self._run(ops.get_by_regex(tenant, pattern, stale), timeout)

    async def list_group(self, group: Key, *, tenant: str = "", stale: bool = False,
                   timeout: Optional[float] = None) -> List[bytes]:
        """Every member key of an explicit group in byte order, fetched page after page (separate
        reads: a group that changes meanwhile may be listed inconsistently). On failure the
        exception's ``partial`` holds the keys listed so far."""
        return await self._run(ops.list_group(tenant, group, stale), timeout)

    async def list_group_page(self, group: Key, *, tenant: str = "", start_after: Key = b"", limit: int = 0,
                        stale: bool = False, timeout: Optional[float] = None) -> Tuple[List[bytes], bool]:
        """One page of a group's member keys after start_after (b"" = from the start), at most
        limit keys (0 = the server's page size), and whether more follow."""
        return await self._run(ops.list_group_page(tenant, group, start_after, limit, stale), timeout)

    async def remove_group(self, group: Key, *, tenant: str = "", force: bool = False,
                     timeout: Optional[float] = None) -> int:
        """Erase an explicit group and its members in one step; returns the members erased."""
        return await self._run(ops.remove_group(tenant, group, force), timeout)

    # Batches. Each takes any number of items and sends them in consecutive requests of at most
    # 4096 items (and 3 MiB of keys), batch_get and batch_exists of at most 65,536 keys (and 12 MiB
    # of keys), each retried on its own. Every key is checked before the first request. A request
    # that fails as a whole raises its error with ``partial`` set to the results of the requests
    # before it.

    async def batch_put_start(self, items: Sequence[BatchPutItem], *, tenant: str = "",
                        options: Optional[PutOptions] = None,
                        timeout: Optional[float] = None) -> List[res.BatchPutStartResult]:
        """put_start for every item (one options for all; each item names its group). One result
        per item, in order; ``metad.item_error(result.status)`` is None or the item's exception.
        Keys must be distinct: a repeat raises RepeatedKey before anything is sent."""
        return await self._run(ops.batch_put_start(self._id, tenant, items, options, self._sessions), timeout)

    async def batch_put_end(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                      timeout: Optional[float] = None) -> List[res.Status]:
        """put_end of tier for every key; one Status per key, in order. Keys must be distinct."""
        return await self._run(ops.batch_put_end(self._id, tenant, keys, tier), timeout)

    async def batch_put_revoke(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                         timeout: Optional[float] = None) -> List[res.Status]:
        """put_revoke of tier for every key; one Status per key, in order. Keys must be distinct."""
        return await self._run(ops.batch_put_revoke(self._id, tenant, keys, tier), timeout)

    async def batch_put(self, items: Sequence[BatchPutItem], *, tenant: str = "", options: Optional[PutOptions] = None,
                  timeout: Optional[float] = None) -> List[res.Status]:
        """batch_put_start then batch_put_end for the items that started: one Status per item, the
        start's failure or else the end's outcome."""
        return await self._run(ops.batch_put(self._id, tenant, items, options, self._sessions), timeout)

    async def batch_get(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                  timeout: Optional[float] = None) -> res.BatchGetResult:
        """get for every key: one result per key, in order (repeats allowed: each key is asked
        once and its result given at every position); lease_ttl_ms is the smallest granted."""
        return await self._run(ops.batch_get(tenant, keys, stale), timeout)

    async def batch_exists(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                     timeout: Optional[float] = None) -> res.BatchExistsResult:
        """exists for every key, merged like batch_get (repeats allowed)."""
        return await self._run(ops.batch_exists(tenant, keys, stale), timeout)

    async def batch_exist(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                          timeout: Optional[float] = None) -> res.BatchExistsResult:
        """Deprecated alias of :meth:`batch_exists` (a DeprecationWarning)."""
        _deprecated("batch_exist", "batch_exists")
        return await self.batch_exists(keys, tenant=tenant, stale=stale, timeout=timeout)

    async def batch_remove(self, keys: Sequence[Key], *, tenant: str = "", force: bool = False,
                     timeout: Optional[float] = None) -> List[res.Status]:
        """remove for every key; one Status per key, in order. Keys must be distinct."""
        return await self._run(ops.batch_remove(tenant, keys, force), timeout)

    # Watches.

    def watch(self, tenant: Optional[str] = None, *, all_tenants: bool = False, prefix: Optional[Key] = None,
              kinds: Optional[Kinds] = None, start: Optional[Revision] = None,
              progress: Optional[float] = None) -> "AsyncWatch":
        """Stream the changes of objects: an async iterator (:class:`AsyncWatch`, not a coroutine:
        ``async for batch in client.watch(...)``) of :class:`~metad.WatchBatch`, with the arguments,
        resume on another member and errors of :meth:`metad.Client.watch`. It ends when closed
        (``await w.aclose()``, ``async with``, or garbage collection), and with ClientClosed when
        the client is. TypeError or ValueError for an argument of the wrong type or value, raised
        here."""
        req = ops.watch_request(tenant, all_tenants, prefix, kinds, start, progress)
        if self._cluster.closed:
            raise errors.ClientClosed("client closed")
        return AsyncWatch(self._cluster, req, self._cfg.attempt_timeout)

    # Segments and liveness.

    async def mount_segment(self, segment: types_pb2.SegmentDesc, *, timeout: Optional[float] = None) -> None:
        """Mount segment as a segment of this client (its owner_client_id is ignored). Mounting
        the same id again as the same client is a no-op. ``metad.segment()`` builds one."""
        await self._run(ops.mount_segment(self._id, segment), timeout)

    async def unmount_segment(self, segment_id: bytes, *, owner: Optional[bytes] = None, grace: float = 0,
                        timeout: Optional[float] = None) -> res.UnmountSegmentResult:
        """Unmount a segment of this client (or of owner, for an operator's tool), dropping every
        replica in it. With grace (seconds, at most 24 h) the unmount is graceful: see
        Client.unmount_segment."""
        return await self._run(ops.unmount_segment(owner or self._id, segment_id, int(grace * 1000)), timeout)

    async def list_segments(self, *, tier: int = types_pb2.TIER_UNSPECIFIED, owner: Optional[bytes] = None,
                      stale: bool = False, timeout: Optional[float] = None) -> List[res.SegmentInfo]:
        """The mounted segments of tier (TIER_UNSPECIFIED = every tier) and owner (None = every
        client), sorted by id, with their usage."""
        return await self._run(ops.list_segments(tier, owner, stale), timeout)

    async def ping(self, *, timeout: Optional[float] = None) -> res.PingResult:
        """Keep this client alive and return the cluster's view of it: its mounted segments, the
        client ttl, the leader (which becomes the endpoint calls go to) and the members."""
        return await self._run(ops.ping(self._id, self._cluster), timeout)

    # The LOCAL_DISK tier: this client's local SSD, registered as a segment of its own, the objects
    # it copied to it and the files it removed from it. Each call acts for this client (its id owns
    # the registration and the replicas). notify_offload and evict_disk_replica take any number of
    # items and split like the batches (4096 items a request; partial on a failed request).
    # promotion_alloc_start and notify_promotion copy a disk-only object back to memory for the
    # promotion task the leader queued for this client.

    async def mount_local_disk(self, capacity: int, endpoint: str, *, offload: bool = False,
                               timeout: Optional[float] = None) -> Tuple[bytes, bool]:
        """Register this client's local SSD of capacity bytes (1..2^48, rounded up to 64), whose
        files readers fetch through endpoint; offload: the client takes offload tasks. Returns the
        registration's 16-byte segment id (derived from the client id) and whether this call created
        it: mounting the same registration again is a no-op (False), and another capacity, endpoint
        or offload flag raises InvalidParams (unmount first)."""
        return await self._run(ops.mount_local_disk(self._id, capacity, endpoint, offload), timeout)

    async def unmount_local_disk(self, *, timeout: Optional[float] = None) -> res.UnmountLocalDiskResult:
        """Drop this client's SSD registration and exactly its LOCAL_DISK replicas; objects left
        with no replica are erased (the answer counts both). Without a registration the counts are
        zero: the call is idempotent. The client's expiry does the same."""
        return await self._run(ops.unmount_local_disk(self._id), timeout)

    async def notify_offload(self, results: Sequence[OffloadReport], *, tenant: str = "",
                             timeout: Optional[float] = None) -> List[res.Status]:
        """Report objects of tenant this client copied to its SSD (a success records a COMPLETE
        LOCAL_DISK replica of it, owned by this client) or failed to (nothing is recorded). One
        Status per report, in order: OK, OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY, INVALID_PARAMS (the
        size is not the object's) or NO_AVAILABLE_HANDLE (the SSD's capacity is used up). The client
        must have mounted its SSD (else SegmentNotFound); keys must be distinct."""
        return await self._run(ops.notify_offload(self._id, tenant, results), timeout)

    async def evict_disk_replica(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_LOCAL_DISK,
                                 timeout: Optional[float] = None) -> List[res.Status]:
        """Report SSD files of tenant's keys that this client removed: their LOCAL_DISK replicas
        go, and an object left with no replica is erased. One Status per key, in order: OK,
        OBJECT_NOT_FOUND or NO_REPLICA_ON_SEGMENT (no LOCAL_DISK replica of this client). Keys must
        be distinct."""
        return await self._run(ops.evict_disk_replica(self._id, tenant, keys, tier), timeout)

    async def promotion_alloc_start(self, key: Key, *, tenant: str = "", preferred: Sequence[bytes] = (),
                                    timeout: Optional[float] = None) -> Tuple[res.Replica, int]:
        """Place the memory replica of the promotion of tenant's key that this client holds, and
        return it with the object's size: see Client.promotion_alloc_start."""
        return await self._run(ops.promotion_alloc_start(self._id, tenant, key, preferred), timeout)

    async def notify_promotion(self, key: Key, success: bool = True, *, tenant: str = "",
                               timeout: Optional[float] = None) -> None:
        """End the promotion of tenant's key that this client holds: success turns the memory
        replica of promotion_alloc_start COMPLETE (get lists it first), False drops it and releases
        its quota. The task ends SUCCESS or FAILED (no MarkTaskToComplete follows); a promotion
        never started ends FAILED. TaskNotFound once it has ended, IllegalClient for another
        client's."""
        await self._run(ops.notify_promotion(self._id, tenant, key, success), timeout)

    # The task mailbox: the tasks the leader assigned to this client, a worker.

    async def fetch_tasks(self, batch: int = 64, *, timeout: Optional[float] = None) -> List[res.ScheduledTask]:
        """Take up to batch (1..1024) of this client's oldest pending tasks, now PROCESSING: see
        Client.fetch_tasks, which says how each kind is reported."""
        return await self._run(ops.fetch_tasks(self._id, batch), timeout)

    async def mark_task_to_complete(self, task_id: int, success: bool = True, message: str = "", *,
                                    timeout: Optional[float] = None) -> None:
        """Report a COPY or MOVE task this client fetched: see Client.mark_task_to_complete."""
        await self._run(ops.mark_task_to_complete(self._id, task_id, success, message), timeout)

    # Tenants.

    async def register_tenant(self, name: str, quota_bytes: int = 0, *, timeout: Optional[float] = None) -> int:
        """Create tenant name with a requested quota in bytes (0 = none); returns the instance id."""
        return await self._run(ops.register_tenant(name, quota_bytes), timeout)

    async def unregister_tenant(self, name: str, *, force: bool = False,
                          timeout: Optional[float] = None) -> res.UnregisterTenantResult:
        """Remove tenant name; with force also erase its objects and groups (else a non-empty
        tenant raises TenantNotEmpty)."""
        return await self._run(ops.unregister_tenant(name, force), timeout)

    async def list_tenants(self, *, stale: bool = False, timeout: Optional[float] = None) -> List[res.TenantInfo]:
        """The registered tenants sorted by name, with their usage."""
        return await self._run(ops.list_tenants(stale), timeout)

    async def set_quota(self, tenant: str, quota_bytes: int, *, timeout: Optional[float] = None) -> res.SetQuotaResult:
        """Set a tenant's requested quota (0 = none); returns the quota in force after."""
        return await self._run(ops.set_quota(tenant, quota_bytes), timeout)

    async def get_quota(self, tenant: str, *, stale: bool = False,
                  timeout: Optional[float] = None) -> res.GetQuotaResult:
        """A tenant's quota and usage."""
        return await self._run(ops.get_quota(tenant, stale), timeout)

    # Cluster.

    async def status(self, endpoint: str, *, timeout: Optional[float] = None) -> res.NodeStatus:
        """The status of the node at endpoint (any address, known or not), in its own view. Never
        retried or redirected."""
        return await self._run(ops.status(endpoint), timeout)

    async def status_all(self, *, timeout: Optional[float] = None) -> List[Tuple[str, Optional[res.NodeStatus], Optional[errors.MetadError]]]:
        """(endpoint, status, error) for every known endpoint, asked concurrently, in endpoint
        order; an unreachable node has its error set (bound the wait with timeout)."""
        async def one(addr: str) -> Tuple[str, Optional[res.NodeStatus], Optional[errors.MetadError]]:
            try:
                return addr, await self.status(addr, timeout=timeout), None
            except errors.MetadError as e:
                return addr, None, e
        return list(await asyncio.gather(*(one(a) for a in self.endpoints())))

    async def list_members(self, *, timeout: Optional[float] = None) -> res.ListMembersResult:
        """The cluster's Raft configuration."""
        return await self._run(ops.list_members(), timeout)

    async def transfer_leader(self, target: str = "", *, timeout: Optional[float] = None) -> res.TransferLeaderResult:
        """Hand leadership to member target ("" = the most up-to-date follower); the new leader
        becomes the endpoint calls go to."""
        return await self._run(ops.transfer_leader(target, self._cluster), timeout)

    async def ping_loop(self, segments: Sequence[types_pb2.SegmentDesc] = (), *, interval: float = 1.0) -> None:
        """Ping every interval seconds until cancelled (run it as a task), each ping limited to a
        third of the client ttl, remounting those of segments the cluster no longer has. A failed
        ping is retried at the next tick; ClientClosed ends the loop."""
        limit = 5.0
        while True:
            try:
                resp = await self.ping(timeout=limit)
                if resp.client_ttl_ms:
                    limit = min(5.0, max(resp.client_ttl_ms / 3000, 0.001))
                for s in ops.missing_segments(segments, resp.segment_ids):
                    await self.mount_segment(s, timeout=limit)
            except errors.ClientClosed:
                return
            except errors.MetadError:
                pass
            await asyncio.sleep(interval)


def _cancelling() -> bool:
    """Whether the running task has a cancellation pending (Task.cancelling, Python 3.11+; False
    before, where a task's cancellation during a call cannot be told from the call's own)."""
    fn = getattr(asyncio.current_task(), "cancelling", None)
    return bool(fn()) if fn is not None else False


class _Watchdog:
    """The attempt watchdog of one call of the asyncio client: attempt_timeout/2 after the call
    starts, and again attempt_timeout/2 after every answered probe, it sends a health check limited
    to the other half (and to the call's deadline). A probe that ends DEADLINE_EXCEEDED or
    UNAVAILABLE cancels the call; ``silent`` is then the error the attempt raises, unless the
    call's own deadline had run out (the attempt reports the cancelled call). stop() ends it when
    the call returns."""

    __slots__ = ("_ep", "_call", "_at", "_deadline", "_timer", "_task", "silent")

    def __init__(self, ep: core.Endpoint, call: Any, at: float, deadline: Optional[float]) -> None:
        self._ep, self._call, self._at, self._deadline = ep, call, at, deadline
        self._task: "Optional[asyncio.Task[None]]" = None
        self.silent: Optional[errors.MetadError] = None
        self._timer: Optional[asyncio.TimerHandle] = asyncio.get_running_loop().call_later(at / 2, self._start)

    def _start(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        half = self._at / 2
        while True:
            pt = self._at - half
            if self._deadline is not None:
                pt = max(0.0, min(pt, self._deadline - time.monotonic()))
            code = grpc.StatusCode.OK
            try:
                await self._ep.health(b"", timeout=pt)
            except grpc.aio.AioRpcError as e:
                code = e.code()
            except Exception:
                pass
            if code in _SILENT_CODES:
                self._call.cancel()
                if self._deadline is None or time.monotonic() < self._deadline:
                    e2 = core.silent_error(self._ep, self._at)
                    setattr(e2, "_silent", True)
                    self.silent = e2
                return
            await asyncio.sleep(half)  # any answer, even an error, comes from a live server

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()


class _Sessions:
    """The client's SessionPool for one event loop: a write waits on an asyncio.Condition while
    every session is full, and opening a session is serialized by an asyncio.Lock of its own
    (taken before the condition's, never while that is held)."""

    def __init__(self) -> None:
        self._open_mu = asyncio.Lock()
        self._cond = asyncio.Condition()
        self._pool = core.SessionPool()

    async def begin(self, c: AsyncClient, deadline: Optional[float]) -> Optional[types_pb2.SessionHeader]:
        """The header of the next number of an open session with room, opening a session when none
        is open or every open one is full (up to core.MAX_SESSIONS), and waiting while all are full
        (until deadline). None: write without a session."""
        while True:
            async with self._cond:
                while True:
                    if self._pool.off:
                        return None
                    h = self._pool.take()
                    if h is not None:
                        return h
                    if not self._pool.full():
                        break
                    wait = None if deadline is None else deadline - time.monotonic()
                    if wait is not None and wait <= 0:
                        raise core.session_wait_timeout()
                    try:
                        await asyncio.wait_for(self._cond.wait(), wait)
                    except asyncio.TimeoutError:
                        raise core.session_wait_timeout() from None
                have = len(self._pool.open)
            await self._add(c, deadline, have)

    async def _add(self, c: AsyncClient, deadline: Optional[float], have: int) -> None:
        """Open a session unless one was added (or sessions turned off) since the caller saw have
        open."""
        async with self._open_mu:
            if self._pool.off or len(self._pool.open) != have:
                return
            try:
                resp = (await c._retried(core.open_session_rpc(c.client_id), deadline)).response
            except errors.MetadError as e:
                if not core.unimplemented(e):
                    e.attempts = 0  # the write itself was not sent
                    raise
                self._pool.off = True  # a cluster without sessions: at most once, as before
            else:
                self._pool.opened(resp)
            await self._notify()

    async def _notify(self) -> None:
        """Wake the writes waiting for a number."""
        async with self._cond:
            self._cond.notify_all()

    async def end(self, h: types_pb2.SessionHeader) -> None:
        """Release h's number: at once (even if the wake-up that follows is cancelled), then wake
        the writes waiting for one when that made room."""
        if self._pool.release(h):
            await self._notify()

    async def expired(self, h: types_pb2.SessionHeader) -> None:
        """Forget the session h named, so that a later begin opens another."""
        self._pool.expired(h)
        await self._notify()

    def using(self) -> bool:
        """Whether the client writes with sessions (open, or to be opened)."""
        return not self._pool.off

    async def drain(self) -> List[int]:
        """Forget every open session and return their ids."""
        ids = self._pool.drain()
        await self._notify()
        return ids
