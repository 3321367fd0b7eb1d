"""The synchronous metad client. Writes go within client sessions unless ``Config.no_session``
(see :class:`metad._core.SessionPool`)."""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple, TypeVar, Union

import grpc

from metad import _config as conf
from metad import _core as core
from metad import _ops as ops
from metad._watch import Kinds, Revision
from metad._watchers import Watch
from metad import errors
from metad import results as res
from metad._config import Config
from metad._ops import BatchPutItem, Key, OffloadReport, PutOptions
from metad._pingloop import PingLoop
from metad.metadv1 import types_pb2

T = TypeVar("T")

_SILENT_CODES = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)


def _deprecated(old: str, new: str) -> None:
    """Warn (DeprecationWarning, at the caller's caller) that method old is now new."""
    warnings.warn(f"metad: {old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)


class Client:
    """A connection to a metad cluster, safe for use from any number of threads.

    It keeps one gRPC channel per known endpoint and sends every call to the endpoint it believes
    is the leader, initially the first. A leader named by a forwarding follower (the
    ``x-metad-leader`` header), a NOT_LEADER answer, :meth:`ping` or :meth:`transfer_leader`
    becomes the endpoint calls go to. After a failed attempt a call is sent to the next endpoint
    that is not suspect at once when its node fell silent; redirected at once to a leader named by
    NOT_LEADER (a second redirect in a row waits a backoff); retried at the next endpoint after a
    backoff on UNAVAILABLE or a connection error; and raised at once for anything else (a
    deterministic rejection, the call's own timeout). See :class:`~metad.Config`.

    Writes are exactly once within the client's sessions: the client opens a session with its
    first write and numbers its writes, every retry of a call carrying the call's number, so a retry
    of a write whose answer was lost gets the first answer and changes nothing (see
    :class:`metad._core.SessionPool`; ``Config(no_session=True)`` writes without). remove_all carries
    no session: a retry removes what is left and answers for that.

    Every method but :meth:`watch` (a stream without a deadline) takes ``timeout`` (seconds, retries
    included; default ``Config.timeout``) and raises a :class:`~metad.errors.MetadError` subclass;
    one that answers a message returns its frozen dataclass of :mod:`metad.results` (``.raw`` is
    the message). Keys, group ids and prefixes are ``str`` (sent as UTF-8), ``bytes``,
    ``bytearray`` or ``memoryview``; anything else raises TypeError before any call. An object key
    has 1..4096 bytes and no NUL byte, else the call raises :class:`~metad.errors.InvalidKey` (an
    InvalidParams and a ValueError) before any call, for a batch before any of its requests. ``tenant`` "" means "default". Failovers, redirects, retries
    and abandoned attempts are logged to the ``metad`` logger (see :data:`metad._core.log`).
    """

    def __init__(self, endpoints: Union[Sequence[str], Config, None] = None, config: Optional[Config] = None, *,
                 tls: Optional[conf.TLS] = None, api_key: Optional[str] = None) -> None:
        """Connect lazily to endpoints (default: ``config.endpoints``); nothing is dialled until the
        first call. ``Client(Config(...))`` takes a Config in place of endpoints as its
        configuration. Raises ValueError for a bad configuration, a malformed endpoint included
        (a URL, a missing or bad port, an empty host: see :func:`metad.check_endpoint`).
        tls and api_key, when given, replace the configuration's; the TLS files are read here.
        Nothing is read from the environment: ``Client(Config.from_env())`` takes the endpoints,
        TLS and API key from the METAD_* variables."""
        cfg = conf.client_config(endpoints, config, tls, api_key)
        self._cfg = cfg
        self._creds = conf.channel_credentials(cfg)
        self._id = cfg.client_id or core.new_client_id()
        self._cluster = core.Cluster(cfg.endpoints, self._dial)
        self._sess: Optional[_Sessions] = None if cfg.no_session else _Sessions()

    def _dial(self, addr: str) -> Any:
        if self._creds is None:
            return grpc.insecure_channel(addr, options=core.CHANNEL_OPTIONS)
        return grpc.secure_channel(addr, self._creds, options=core.CHANNEL_OPTIONS)

    def _sessions(self) -> bool:
        """Whether this client's writes carry a session header."""
        return self._sess is not None and self._sess.using()

    # Lifecycle and state.

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

    def close(self) -> None:
        """Close the client's sessions (CloseSession, best effort, within
        core.CLOSE_SESSION_TIMEOUT) and every channel. Calls in flight fail; later calls raise
        ClientClosed."""
        if self._sess is not None and not self._cluster.closed:
            deadline = time.monotonic() + core.CLOSE_SESSION_TIMEOUT
            for sid in self._sess.drain():
                try:
                    self._retried(core.close_session_rpc(sid), deadline)
                except errors.MetadError as e:
                    core.log.debug("close: session %d not closed on the cluster (it expires at its ttl): %s", sid, e)
        for ch in self._cluster.close():
            ch.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The retry loop.

    def _run(self, op: core.Op[T], timeout: Optional[float]) -> T:
        t = self._cfg.timeout if timeout is None else timeout
        deadline = None if t is None else time.monotonic() + t
        try:
            rpc = next(op)
            while True:
                try:
                    reply = self._call(rpc, deadline)
                except errors.MetadError as e:
                    rpc = op.throw(e)
                else:
                    rpc = op.send(reply)
        except StopIteration as stop:
            result: T = stop.value
            return result

    def _call(self, rpc: core.Rpc, deadline: Optional[float]) -> core.Reply:
        """rpc, retried, within a session when its request takes a header and the client writes in
        sessions (see core.SessionPool for the rules)."""
        sess = self._sess
        if sess is None or rpc.endpoint is not None or not core.takes_session(rpc.request):
            return self._retried(rpc, deadline)
        for again in (False, True):
            h = sess.begin(self, deadline)
            core.set_header(rpc.request, h)
            if h is None:
                return self._retried(rpc, deadline)
            try:
                return self._retried(rpc, deadline)
            except errors.SessionExpired as e:
                if again or e.attempts != 1:
                    raise
                core.log.debug("%s: session %d expired before the first attempt ran; opening another",
                               rpc.method, h.session_id)
                sess.expired(h)  # nothing was done: open a new session and go again
            finally:
                sess.end(h)
        raise AssertionError("unreachable")

    def _retried(self, rpc: core.Rpc, deadline: Optional[float]) -> core.Reply:
        """rpc sent to the believed leader and retried by the rules of the class."""
        cl = self._cluster
        if cl.closed:
            raise errors.ClientClosed("client closed")
        if rpc.endpoint is not None:
            return core.Reply(self._once(rpc, deadline), 1)
        delay = self._cfg.retry_initial
        redirected = False
        n = 0
        while True:
            ep = cl.cur
            n += 1
            try:
                resp = self._attempt(ep, rpc, deadline)
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
                    # The node stopped answering anything; go elsewhere at once (the attempt
                    # already waited) and keep failover away from it for a while.
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
                        # The first redirect in a row goes at once; a second means the nodes
                        # disagree (an election is under way), so it waits like a failover.
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
                time.sleep(d)
                delay = min(2 * delay, self._cfg.retry_max)
            else:
                ep.suspect_until = 0.0
                return core.Reply(resp, n)

    def _attempt(self, ep: core.Endpoint, rpc: core.Rpc, deadline: Optional[float]) -> Any:
        """One attempt at ep, watched over by the attempt watchdog. Raises the attempt's
        MetadError; a silent node's has ``_silent`` set. The call is waited for as it is for
        attempt_timeout/2; only a call still running then is watched (:meth:`_watch`)."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        fut = ep.method(rpc.service, rpc.method).future(rpc.request, timeout=remaining)
        at = self._cfg.attempt_timeout
        try:
            if at is None:
                resp = fut.result()
            else:
                try:
                    resp = fut.result(timeout=at / 2)
                except grpc.FutureTimeoutError:
                    self._watch(ep, fut, at, deadline)
                    resp = fut.result()
        except grpc.FutureCancelledError:
            raise errors.OutcomeUnknown("the call was cancelled", code=grpc.StatusCode.CANCELLED) from None
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        if rpc.service == "md":
            self._cluster.follow_hint(ep, fut.initial_metadata())
        return resp

    def _watch(self, ep: core.Endpoint, fut: Any, at: float, deadline: Optional[float]) -> None:
        """Watch fut, a call at ep that has run at/2: a health check limited to the other half (and
        to deadline) now, and again at/2 after every answered one, until fut is done. A check that
        ends DEADLINE_EXCEEDED or UNAVAILABLE cancels fut and raises the silent node's error, unless
        deadline has passed (fut then reports its cancellation)."""
        half = at / 2
        ev = threading.Event()
        fut.add_done_callback(lambda _f: ev.set())
        next_probe = time.monotonic()
        probe: Any = None
        while True:
            ev.clear()
            if fut.done():
                return
            if probe is not None and probe.done():
                code = _code_of(probe)
                if code in _SILENT_CODES:
                    fut.cancel()
                    if deadline is not None and time.monotonic() >= deadline:
                        return  # the call's own limit ran out: report that, not silence
                    e = core.silent_error(ep, at)
                    setattr(e, "_silent", True)
                    raise e
                probe = None  # any answer, even an error, comes from a live server
                next_probe = time.monotonic() + half
            if probe is None:
                wait = next_probe - time.monotonic()
                if wait <= 0:
                    pt = at - half
                    if deadline is not None:
                        pt = max(0.0, min(pt, deadline - time.monotonic()))
                    probe = ep.health.future(b"", timeout=pt)
                    probe.add_done_callback(lambda _f: ev.set())
                    continue
                ev.wait(wait)
            else:
                ev.wait()

    def _once(self, rpc: core.Rpc, deadline: Optional[float]) -> Any:
        """rpc sent once to its own endpoint (known or not), without retries."""
        assert rpc.endpoint is not None
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        ep = self._cluster.by_addr.get(rpc.endpoint)
        temp = None
        if ep is None:
            temp = self._dial(rpc.endpoint)
            ep = core.Endpoint(rpc.endpoint, -1, temp)
        try:
            return ep.method(rpc.service, rpc.method)(rpc.request, timeout=remaining)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        finally:
            if temp is not None:
                temp.close()

    # Metadata: puts and upserts.

    def put_start(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
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
        return self._run(ops.put_start(self._id, tenant, key, size, options, self._sessions), timeout)

    def put_end(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                timeout: Optional[float] = None) -> None:
        """Commit this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every
        tier). Idempotent."""
        self._run(ops.put_end(self._id, tenant, key, tier), timeout)

    def put_revoke(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                   timeout: Optional[float] = None) -> None:
        """Drop this client's PROCESSING replicas of key in tier (TIER_UNSPECIFIED = every tier)."""
        self._run(ops.put_revoke(self._id, tenant, key, tier), timeout)

    def put(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
            timeout: Optional[float] = None) -> List[res.Replica]:
        """put_start then put_end of every tier, for callers that write the bytes elsewhere or not
        at all. Returns the replicas as placed, marked COMPLETE. A put_end that raises
        ReservationLost (a leader change lost the reservation; nothing was created) places the
        object again, up to 3 placements. If put_end fails otherwise, a put_revoke is tried (its
        failure ignored) and put_end's error raised."""
        return self._run(ops.put(self._id, tenant, key, size, options, self._sessions), timeout)

    def upsert_start(self, key: Key, size: int, *, tenant: str = "", options: Optional[PutOptions] = None,
                     timeout: Optional[float] = None) -> Tuple[List[res.Replica], bool]:
        """Insert or rewrite key with size bytes. Returns the PROCESSING replicas to write and
        whether the existing extents were reused (same size)."""
        return self._run(ops.upsert_start(self._id, tenant, key, size, options), timeout)

    def upsert_end(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                   timeout: Optional[float] = None) -> None:
        """Commit an upsert of key in tier (TIER_UNSPECIFIED = every tier)."""
        self._run(ops.upsert_end(self._id, tenant, key, tier), timeout)

    def upsert_revoke(self, key: Key, *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                      timeout: Optional[float] = None) -> None:
        """Abandon an upsert of key in tier (TIER_UNSPECIFIED = every tier)."""
        self._run(ops.upsert_revoke(self._id, tenant, key, tier), timeout)

    # Metadata: reads and removals.

    def get(self, key: Key, *, tenant: str = "", stale: bool = False,
            timeout: Optional[float] = None) -> res.GetResult:
        """Where to read key: its COMPLETE replicas, size, data type and the read lease granted
        (lease_ttl_ms; 0 for a stale read). stale lets any node answer from its own state. A
        missing key raises ObjectNotFound."""
        return self._run(ops.get(tenant, key, stale), timeout)

    def exists(self, key: Key, *, tenant: str = "", stale: bool = False, timeout: Optional[float] = None) -> bool:
        """Whether key has a COMPLETE replica (granting a read lease if so). A missing key is
        False, not an error."""
        return self._run(ops.exists(tenant, key, stale), timeout)

    def exist(self, key: Key, *, tenant: str = "", stale: bool = False, timeout: Optional[float] = None) -> bool:
        """Deprecated alias of :meth:`exists` (a DeprecationWarning)."""
        _deprecated("exist", "exists")
        return self.exists(key, tenant=tenant, stale=stale, timeout=timeout)

    def remove(self, key: Key, *, tenant: str = "", force: bool = False, timeout: Optional[float] = None) -> None:
        """Erase key; force removes it even under a read lease (never while it is being written).
        Without a session a retried remove may raise ObjectNotFound for an object its lost attempt
        removed."""
        self._run(ops.remove(tenant, key, force), timeout)

    def remove_all(self, *, tenant: str = "", force: bool = False,
                   timeout: Optional[float] = None) -> res.RemoveAllResult:
        """Erase every removable object of tenant; the answer counts those erased and skipped."""
        return self._run(ops.remove_all(tenant, force), timeout)

    # Groups.

    def list_keys(self, *, tenant: str = "", prefix: Key = b"", stale: bool = False,
                  timeout: Optional[float] = None) -> List[bytes]:
        """Every key of the tenant that starts with prefix, in byte order, fetched page after page
        (separate reads: keys created or removed meanwhile may or may not be listed). On failure
        the exception's ``partial`` holds the keys listed so far."""
        return self._run(ops.list_keys(tenant, prefix, stale), timeout)

    def list_keys_page(self, *, tenant: str = "", prefix: Key = b"", page_token: bytes = b"", limit: int = 0,
                       stale: bool = False, timeout: Optional[float] = None) -> Tuple[List[bytes], bytes]:
        """One page of the tenant's keys that start with prefix, after page_token (b"" = from the
        start), at most limit keys (0 = the server's page size), and the next page's token (b""
        when none follows)."""
        return self._run(ops.list_keys_page(tenant, prefix, page_token, limit, stale), timeout)

    def get_by_regex(self, pattern: str, *, tenant: str = "", stale: bool = False,
                     timeout: Optional[float] = None) -> List[res.RegexItem]:
        """Where to read every readable object whose key the Go regexp (RE2) pattern matches
        anywhere, page after page, leasing each (unless stale). On failure the exception's
        ``partial`` holds the items read so far."""
        return self._run(ops.get_by_regex(tenant, pattern, stale), timeout)

    def list_group(self, group: Key, *, tenant: str = "", stale: bool = False,
                   timeout: Optional[float] = None) -> List[bytes]:
        """Every member key of an explicit group in byte order, fetched page after page (separate
        reads: a group that changes meanwhile may be listed inconsistently). On failure the
        exception's ``partial`` holds the keys listed so far."""
        return self._run(ops.list_group(tenant, group, stale), timeout)

    def list_group_page(self, group: Key, *, tenant: str = "", start_after: Key = b"", limit: int = 0,
                        stale: bool = False, timeout: Optional[float] = None) -> Tuple[List[bytes], bool]:
        """One page of a group's member keys after start_after (b"" = from the start), at most
        limit keys (0 = the server's page size), and whether more follow."""
        return self._run(ops.list_group_page(tenant, group, start_after, limit, stale), timeout)

    def remove_group(self, group: Key, *, tenant: str = "", force: bool = False,
                     timeout: Optional[float] = None) -> int:
        """Erase an explicit group and its members in one step; returns the members erased."""
        return self._run(ops.remove_group(tenant, group, force), timeout)

    # Batches. Each takes any number of items and sends them in consecutive requests of at most
    # 4096 items (and 3 MiB of keys), batch_get and batch_exists of at most 65,536 keys (and 12 MiB
    # of keys), each retried on its own. Every key is checked before the first request. A request
    # that fails as a whole raises its error with ``partial`` set to the results of the requests
    # before it.

    def batch_put_start(self, items: Sequence[BatchPutItem], *, tenant: str = "",
                        options: Optional[PutOptions] = None,
                        timeout: Optional[float] = None) -> List[res.BatchPutStartResult]:
        """put_start for every item (one options for all; each item names its group). One result
        per item, in order; ``metad.item_error(result.status)`` is None or the item's exception.
        Keys must be distinct: a repeat raises RepeatedKey before anything is sent."""
        return self._run(ops.batch_put_start(self._id, tenant, items, options, self._sessions), timeout)

    def batch_put_end(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                      timeout: Optional[float] = None) -> List[res.Status]:
        """put_end of tier for every key; one Status per key, in order. Keys must be distinct."""
        return self._run(ops.batch_put_end(self._id, tenant, keys, tier), timeout)

    def batch_put_revoke(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_UNSPECIFIED,
                         timeout: Optional[float] = None) -> List[res.Status]:
        """put_revoke of tier for every key; one Status per key, in order. Keys must be distinct."""
        return self._run(ops.batch_put_revoke(self._id, tenant, keys, tier), timeout)

    def batch_put(self, items: Sequence[BatchPutItem], *, tenant: str = "", options: Optional[PutOptions] = None,
                  timeout: Optional[float] = None) -> List[res.Status]:
        """batch_put_start then batch_put_end for the items that started: one Status per item, the
        start's failure or else the end's outcome."""
        return self._run(ops.batch_put(self._id, tenant, items, options, self._sessions), timeout)

    def batch_get(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                  timeout: Optional[float] = None) -> res.BatchGetResult:
        """get for every key: one result per key, in order (repeats allowed: each key is asked
        once and its result given at every position); lease_ttl_ms is the smallest granted."""
        return self._run(ops.batch_get(tenant, keys, stale), timeout)

    def batch_exists(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                     timeout: Optional[float] = None) -> res.BatchExistsResult:
        """exists for every key, merged like batch_get (repeats allowed)."""
        return self._run(ops.batch_exists(tenant, keys, stale), timeout)

    def batch_exist(self, keys: Sequence[Key], *, tenant: str = "", stale: bool = False,
                    timeout: Optional[float] = None) -> res.BatchExistsResult:
        """Deprecated alias of :meth:`batch_exists` (a DeprecationWarning)."""
        _deprecated("batch_exist", "batch_exists")
        return self.batch_exists(keys, tenant=tenant, stale=stale, timeout=timeout)

    def batch_remove(self, keys: Sequence[Key], *, tenant: str = "", force: bool = False,
                     timeout: Optional[float] = None) -> List[res.Status]:
        """remove for every key; one Status per key, in order. Keys must be distinct."""
        return self._run(ops.batch_remove(tenant, keys, force), timeout)

    # Watches.

    def watch(self, tenant: Optional[str] = None, *, all_tenants: bool = False, prefix: Optional[Key] = None,
              kinds: Optional[Kinds] = None, start: Optional[Revision] = None,
              progress: Optional[float] = None) -> "Watch":
        """Stream the changes of objects: an iterator (:class:`Watch`) of :class:`~metad.WatchBatch`,
        in revision order, each event once, until it is closed.

        tenant is the tenant to watch (None or "" = "default"); all_tenants watches every tenant
        (tenant unset; a principal with the reader or admin role). prefix keeps the keys that start
        with it; kinds (names such as "STORED", or WatchEventKind values) the events of those kinds
        (None: all). start is the first revision wanted (None: the next change of the member first
        asked); to resume a watch, pass the ``next`` of the last batch it yielded. progress is how
        often an idle stream yields a batch with no events, seconds (None: the server's 5 s; at
        least 0.1). The first batch has no events and names where the stream starts.

        A member that fails, ends the stream or falls silent (nothing, not even progress, for
        progress plus ``Config.attempt_timeout``) is left for the next endpoint, from the revision
        the stream had reached: nothing is lost or repeated. When every member answers that it
        cannot go on from there, the iterator raises that refusal: :class:`~metad.WatchCompacted`
        (the revision is older than the members retain), :class:`~metad.WatchFellBehind` (the
        stream read slower than the cluster wrote) or :class:`~metad.StateReplaced` (a snapshot
        replaced the member's state); its ``revision`` says where. Resynchronise then: watch from
        now, read the objects, and apply the events after the listing over it. Other refusals
        (invalid input, permission) are raised at once. After a round of members that all failed
        the watch waits, 50 ms doubling to 2 s, and goes round again. The stream has no deadline
        (``timeout`` does not apply); it ends when the iterator is closed (``close()``, a ``with``
        block, or garbage collection), and with ClientClosed when the client is.

        TypeError or ValueError for an argument of the wrong type or value, raised here."""
        req = ops.watch_request(tenant, all_tenants, prefix, kinds, start, progress)
        if self._cluster.closed:
            raise errors.ClientClosed("client closed")
        return Watch(self._cluster, req, self._cfg.attempt_timeout)

    # Segments and liveness.

    def mount_segment(self, segment: types_pb2.SegmentDesc, *, timeout: Optional[float] = None) -> None:
        """Mount segment as a segment of this client (its owner_client_id is ignored). Mounting
        the same id again as the same client is a no-op. ``metad.segment()`` builds one."""
        self._run(ops.mount_segment(self._id, segment), timeout)

    def unmount_segment(self, segment_id: bytes, *, owner: Optional[bytes] = None, grace: float = 0,
                        timeout: Optional[float] = None) -> res.UnmountSegmentResult:
        """Unmount a segment of this client (or of owner, for an operator's tool), dropping every
        replica in it. With grace (seconds, at most 24 h) the unmount is graceful: the segment takes
        no new allocation from now on, its replicas stay readable, and the leader unmounts it when
        grace has passed or once it holds no replica (the response's closing and
        unmount_at_unix_nano say when); a repeated call keeps the earlier deadline."""
        return self._run(ops.unmount_segment(owner or self._id, segment_id, int(grace * 1000)), timeout)

    def list_segments(self, *, tier: int = types_pb2.TIER_UNSPECIFIED, owner: Optional[bytes] = None,
                      stale: bool = False, timeout: Optional[float] = None) -> List[res.SegmentInfo]:
        """The mounted segments of tier (TIER_UNSPECIFIED = every tier) and owner (None = every
        client), sorted by id, with their usage."""
        return self._run(ops.list_segments(tier, owner, stale), timeout)

    def ping(self, *, timeout: Optional[float] = None) -> res.PingResult:
        """Keep this client alive and return the cluster's view of it: its mounted segments, the
        client ttl, the leader (which becomes the endpoint calls go to) and the members."""
        return self._run(ops.ping(self._id, self._cluster), timeout)

    def ping_loop(self, segments: Sequence[types_pb2.SegmentDesc] = (), *, interval: float = 1.0,
                  on_error: Optional[Callable[[errors.MetadError], None]] = None) -> "PingLoop":
        """Start a daemon thread that pings every interval seconds (each ping limited to a third
        of the client ttl) and remounts those of segments the cluster no longer has (the client
        was expired while silent). Stop it with ``PingLoop.stop()``."""
        return PingLoop(self, segments, interval, on_error)

    # The LOCAL_DISK tier: this client's local SSD, registered as a segment of its own, the objects
    # it copied to it and the files it removed from it. Each call acts for this client (its id owns
    # the registration and the replicas). notify_offload and evict_disk_replica take any number of
    # items and split like the batches (4096 items a request; partial on a failed request).
    # promotion_alloc_start and notify_promotion copy a disk-only object back to memory for the
    # promotion task the leader queued for this client.

    def mount_local_disk(self, capacity: int, endpoint: str, *, offload: bool = False,
                         timeout: Optional[float] = None) -> Tuple[bytes, bool]:
        """Register this client's local SSD of capacity bytes (1..2^48, rounded up to 64), whose
        files readers fetch through endpoint; offload: the client takes offload tasks. Returns the
        registration's 16-byte segment id (derived from the client id) and whether this call created
        it: mounting the same registration again is a no-op (False), and another capacity, endpoint
        or offload flag raises InvalidParams (unmount first)."""
        return self._run(ops.mount_local_disk(self._id, capacity, endpoint, offload), timeout)

    def unmount_local_disk(self, *, timeout: Optional[float] = None) -> res.UnmountLocalDiskResult:
        """Drop this client's SSD registration and exactly its LOCAL_DISK replicas; objects left
        with no replica are erased (the answer counts both). Without a registration the counts are
        zero: the call is idempotent. The client's expiry does the same."""
        return self._run(ops.unmount_local_disk(self._id), timeout)

    def notify_offload(self, results: Sequence[OffloadReport], *, tenant: str = "",
                       timeout: Optional[float] = None) -> List[res.Status]:
        """Report objects of tenant this client copied to its SSD (a success records a COMPLETE
        LOCAL_DISK replica of it, owned by this client) or failed to (nothing is recorded). One
        Status per report, in order: OK, OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY, INVALID_PARAMS (the
        size is not the object's) or NO_AVAILABLE_HANDLE (the SSD's capacity is used up). The client
        must have mounted its SSD (else SegmentNotFound); keys must be distinct."""
        return self._run(ops.notify_offload(self._id, tenant, results), timeout)

    def evict_disk_replica(self, keys: Sequence[Key], *, tenant: str = "", tier: int = types_pb2.TIER_LOCAL_DISK,
                           timeout: Optional[float] = None) -> List[res.Status]:
        """Report SSD files of tenant's keys that this client removed: their LOCAL_DISK replicas
        go (tier TIER_DISK: their COMPLETE DISK replicas, files under a shared root), and an object
        left with no replica is erased. One Status per key, in order: OK, OBJECT_NOT_FOUND or
        NO_REPLICA_ON_SEGMENT (no such replica). Keys must be distinct."""
        return self._run(ops.evict_disk_replica(self._id, tenant, keys, tier), timeout)

    def promotion_alloc_start(self, key: Key, *, tenant: str = "", preferred: Sequence[bytes] = (),
                              timeout: Optional[float] = None) -> Tuple[res.Replica, int]:
        """Start the promotion of tenant's key that this client holds (a PROMOTE task it took with
        fetch_tasks: the leader queues one for the owner of the SSD file of a disk-only object its
        reads hit): place the PROCESSING MEMORY replica to copy the file into, on the preferred
        segments (16-byte ids) first, charging the tenant's quota and pinning the object until
        notify_promotion. Returns the replica and the object's size in bytes. Refusals: TaskNotFound
        (no promotion of key), IllegalClient (another client's), InvalidParams (not taken yet, or
        the object is no longer on this client's SSD alone), ObjectNotFound, TenantQuotaExceeded,
        NoAvailableHandle."""
        return self._run(ops.promotion_alloc_start(self._id, tenant, key, preferred), timeout)

    def notify_promotion(self, key: Key, success: bool = True, *, tenant: str = "",
                         timeout: Optional[float] = None) -> None:
        """End the promotion of tenant's key that this client holds: success turns the memory
        replica of promotion_alloc_start COMPLETE (get lists it first), False drops it and releases
        its quota. The task ends SUCCESS or FAILED (no MarkTaskToComplete follows); a promotion
        never started ends FAILED. TaskNotFound once it has ended, IllegalClient for another
        client's."""
        self._run(ops.notify_promotion(self._id, tenant, key, success), timeout)

    # The task mailbox: the tasks the leader assigned to this client, a worker.

    def fetch_tasks(self, batch: int = 64, *, timeout: Optional[float] = None) -> List[res.ScheduledTask]:
        """Take up to batch (1..1024, else ValueError before any call) of this client's oldest
        pending tasks, oldest first, now PROCESSING; none is an empty list. Report a COPY or MOVE
        task with mark_task_to_complete, an OFFLOAD with notify_offload, a PROMOTE with
        promotion_alloc_start and notify_promotion."""
        return self._run(ops.fetch_tasks(self._id, batch), timeout)

    def mark_task_to_complete(self, task_id: int, success: bool = True, message: str = "", *,
                              timeout: Optional[float] = None) -> None:
        """Report a COPY or MOVE task this client fetched: it ends SUCCESS, or FAILED with success
        False, keeping message (up to 4096 bytes). TaskNotFound, IllegalClient (another client's),
        InvalidParams (not PROCESSING, or an OFFLOAD or PROMOTE task: see fetch_tasks)."""
        self._run(ops.mark_task_to_complete(self._id, task_id, success, message), timeout)

    # Tenants.

    def register_tenant(self, name: str, quota_bytes: int = 0, *, timeout: Optional[float] = None) -> int:
        """Create tenant name with a requested quota in bytes (0 = none); returns the instance id."""
        return self._run(ops.register_tenant(name, quota_bytes), timeout)

    def unregister_tenant(self, name: str, *, force: bool = False,
                          timeout: Optional[float] = None) -> res.UnregisterTenantResult:
        """Remove tenant name; with force also erase its objects and groups (else a non-empty
        tenant raises TenantNotEmpty)."""
        return self._run(ops.unregister_tenant(name, force), timeout)

    def list_tenants(self, *, stale: bool = False, timeout: Optional[float] = None) -> List[res.TenantInfo]:
        """The registered tenants sorted by name, with their usage."""
        return self._run(ops.list_tenants(stale), timeout)

    def set_quota(self, tenant: str, quota_bytes: int, *, timeout: Optional[float] = None) -> res.SetQuotaResult:
        """Set a tenant's requested quota (0 = none); returns the quota in force after."""
        return self._run(ops.set_quota(tenant, quota_bytes), timeout)

    def get_quota(self, tenant: str, *, stale: bool = False,
                  timeout: Optional[float] = None) -> res.GetQuotaResult:
        """A tenant's quota and usage."""
        return self._run(ops.get_quota(tenant, stale), timeout)

    # Cluster.

    def status(self, endpoint: str, *, timeout: Optional[float] = None) -> res.NodeStatus:
        """The status of the node at endpoint (any address, known or not), in its own view. Never
        retried or redirected."""
        return self._run(ops.status(endpoint), timeout)

    def status_all(self, *, timeout: Optional[float] = None) -> List[Tuple[str, Optional[res.NodeStatus], Optional[errors.MetadError]]]:
        """(endpoint, status, error) for every known endpoint, asked concurrently, in endpoint
        order; an unreachable node has its error set (bound the wait with timeout)."""
        eps = self.endpoints()
        out: List[Tuple[str, Optional[res.NodeStatus], Optional[errors.MetadError]]] = [
            (a, None, None) for a in eps]

        def one(i: int, addr: str) -> None:
            try:
                out[i] = (addr, self.status(addr, timeout=timeout), None)
            except errors.MetadError as e:
                out[i] = (addr, None, e)
        threads = [threading.Thread(target=one, args=(i, a)) for i, a in enumerate(eps)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def list_members(self, *, timeout: Optional[float] = None) -> res.ListMembersResult:
        """The cluster's Raft configuration."""
        return self._run(ops.list_members(), timeout)

    def transfer_leader(self, target: str = "", *, timeout: Optional[float] = None) -> res.TransferLeaderResult:
        """Hand leadership to member target ("" = the most up-to-date follower); the new leader
        becomes the endpoint calls go to."""
        return self._run(ops.transfer_leader(target, self._cluster), timeout)


class _Sessions:
    """The client's SessionPool under a threading.Condition: a write waits on it while every
    session is full, and opening a session is serialized by a lock of its own (taken before the
    condition's, never while that is held)."""

    def __init__(self) -> None:
        self._open_mu = threading.Lock()
        self._cond = threading.Condition()
        self._pool = core.SessionPool()

    def begin(self, c: Client, deadline: Optional[float]) -> Optional[types_pb2.SessionHeader]:
        """The header of the next number of an open session with room, opening a session when none
        is open or every open one is full (up to core.MAX_SESSIONS), and waiting while all are full
        (until deadline). None: write without a session."""
        while True:
            with self._cond:
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
                    self._cond.wait(wait)
                have = len(self._pool.open)
            self._add(c, deadline, have)

    def _add(self, c: Client, deadline: Optional[float], have: int) -> None:
        """Open a session unless one was added (or sessions turned off) since the caller saw have
        open."""
        with self._open_mu:
            with self._cond:
                if self._pool.off or len(self._pool.open) != have:
                    return
            try:
                resp = c._retried(core.open_session_rpc(c.client_id), deadline).response
            except errors.MetadError as e:
                if not core.unimplemented(e):
                    e.attempts = 0  # the write itself was not sent
                    raise
                with self._cond:
                    self._pool.off = True  # a cluster without sessions: at most once, as before
                    self._cond.notify_all()
                return
            with self._cond:
                self._pool.opened(resp)
                self._cond.notify_all()

    def end(self, h: types_pb2.SessionHeader) -> None:
        """Release h's number, waking the writes waiting for one when that made room."""
        with self._cond:
            if self._pool.release(h):
                self._cond.notify_all()

    def expired(self, h: types_pb2.SessionHeader) -> None:
        """Forget the session h named, so that a later begin opens another."""
        with self._cond:
            self._pool.expired(h)
            self._cond.notify_all()

    def using(self) -> bool:
        """Whether the client writes with sessions (open, or to be opened)."""
        with self._cond:
            return self._pool.using()

    def drain(self) -> List[int]:
        """Forget every open session and return their ids."""
        with self._cond:
            ids = self._pool.drain()
            self._cond.notify_all()
            return ids


def _code_of(fut: Any) -> Optional[grpc.StatusCode]:
    """The status code a finished call future ended with (OK for success)."""
    try:
        fut.result()
    except grpc.RpcError as e:
        code: Optional[grpc.StatusCode] = e.code()
        return code
    except Exception:
        return None
    return grpc.StatusCode.OK

