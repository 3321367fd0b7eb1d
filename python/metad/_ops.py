"""The operations of the clients, each written once as a generator that yields
:class:`~metad._core.Rpc` objects and returns the call's result, a dataclass of
:mod:`metad.results` (or a list of them) where the call answers a message (see
:mod:`metad._core`), with the rules checked before any call: the key rule and the types of keys
(:data:`Key`), repeated keys of a batch, and the split of a long batch into requests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

from metad import _watch, errors
from metad import results as res
from metad._core import Cluster, Op, Rpc, new_client_id
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

MAX_BATCH_ITEMS = 4096
"""Most items one batch write or removal request carries; longer lists are split into consecutive
requests."""

MAX_BATCH_BYTES = 3 << 20
"""Most bytes of keys (and groups) one batch write or removal request carries."""

MAX_READ_BATCH_ITEMS = 65536
"""Most keys one BatchGet or BatchExist request carries (the server's limit, store.MaxReadBatch);
longer lists are split into consecutive requests."""

MAX_READ_BATCH_BYTES = 12 << 20
"""Most bytes of keys one BatchGet or BatchExist request carries (under the server's 16 MiB request
limit): 65,536 keys of up to 190 bytes go in one request."""

MAX_KEY_BYTES = 4096
"""The longest object key, in bytes."""

MAX_FETCH_TASKS = 1024
"""Most tasks one FetchTasks hands out (the server's limit)."""


@dataclass
class PutOptions:
    """The optional parts of a put or upsert; the defaults ask for one memory replica, no NOF
    replica, no pins, data type 0, the object its own group.

    Attributes:
        group: the explicit group the object joins; "" = its own group (batch puts ignore it: each
            item names its own group).
        memory_replicas: memory replicas wanted, 1..8; 0 = the default (1).
        nof_replicas: NOF replicas wanted, 0..8.
        dfs_replicas: DFS replicas wanted (extents of DFS pools), 0..8.
        preferred_segments: 16-byte segment ids tried first, in order.
        soft_pin: a ``SoftPinAction`` value (``types_pb2.SOFT_PIN_ACTION_*``).
        soft_pin_ttl: soft pin duration in seconds with SOFT_PIN_ACTION_ENABLE; 0 = the default
            (30 min). Sent in whole milliseconds.
        hard_pin: protect the object from every eviction.
        data_type: an opaque client tag returned by get.
        host: the writer's host, for local-first placement: memory replicas go to the memory
            segments whose endpoint names this host after preferred_segments, before the usual
            order (a full host falls back to it); "" = none.
    """

    group: str = ""
    memory_replicas: int = 0
    nof_replicas: int = 0
    dfs_replicas: int = 0
    preferred_segments: Sequence[bytes] = ()
    soft_pin: int = types_pb2.SOFT_PIN_ACTION_NONE
    soft_pin_ttl: float = 0.0
    hard_pin: bool = False
    data_type: int = 0
    host: str = ""


def _config(o: Optional[PutOptions]) -> Optional[types_pb2.ReplicaConfig]:
    """The ReplicaConfig of o; None (the defaults) when o asks for nothing special."""
    if o is None:
        return None
    cfg = types_pb2.ReplicaConfig(
        memory_replicas=o.memory_replicas, nof_replicas=o.nof_replicas, dfs_replicas=o.dfs_replicas,
        preferred_segment_ids=list(o.preferred_segments), soft_pin=o.soft_pin,  # type: ignore[arg-type]
        soft_pin_ttl_ms=int(o.soft_pin_ttl * 1000), hard_pin=o.hard_pin, data_type=o.data_type,
        preferred_host=o.host)
    if cfg == types_pb2.ReplicaConfig():
        return None
    return cfg


def _group(o: Optional[PutOptions]) -> bytes:
    return _b(o.group, "options.group") if o is not None else b""


Key = Union[str, bytes, bytearray, memoryview]
"""An object key, group id or key prefix: its bytes (bytes, bytearray, memoryview), or a str sent
as its UTF-8 bytes. Anything else (an int, a list of ints) is a TypeError, raised before any call.
An object key has 1..4096 bytes and no NUL byte (:class:`~metad.errors.InvalidKey`, a ValueError,
before any call); group ids and prefixes are checked by the server."""

_KEY_TYPES = (str, bytes, bytearray, memoryview)


def _b(k: Key, what: str = "key") -> bytes:
    """The bytes of k (a Key); TypeError naming what for any other type: bytes(5) would be five
    NUL bytes, bytes([104, 105]) the key b"hi"."""
    if isinstance(k, str):
        return k.encode()
    if isinstance(k, (bytes, bytearray, memoryview)):
        return bytes(k)
    raise TypeError(f"metad: {what} must be str, bytes, bytearray or memoryview, not {type(k).__name__}")


def _key(k: Key, what: str = "") -> bytes:
    """The bytes of object key k, checked by the key rule: TypeError as _b, InvalidKey (a
    ValueError) for a key of 0 or over 4096 bytes or with a NUL byte. what names a batch item
    ("keys[3]") in the message."""
    b = _b(k, what or "key")
    if not 1 <= len(b) <= MAX_KEY_BYTES:
        raise errors.InvalidKey(f"{what + ': ' if what else ''}key: length {len(b)} not in 1..{MAX_KEY_BYTES}")
    if 0 in b:
        raise errors.InvalidKey(f"{what + ': ' if what else ''}key: NUL byte at {b.index(0)}")
    return b


def _keys(keys: Sequence[Key], field: str = "keys") -> List[bytes]:
    """The bytes of every key of a batch, each checked by _key; TypeError for one key (a str or
    bytes) given where a sequence of keys is wanted."""
    if isinstance(keys, _KEY_TYPES):
        raise TypeError(f"metad: {field} must be a sequence of keys, not one {type(keys).__name__}")
    return [_key(k, f"{field}[{i}]") for i, k in enumerate(keys)]


@dataclass(frozen=True)
class BatchPutItem:
    """One object of a batch put: key, size in bytes, and the explicit group ("" = its own)."""

    key: Key
    size: int
    group: Key = ""


@dataclass(frozen=True)
class OffloadReport:
    """One object of a notify_offload: its key, the bytes written to the SSD file (the object's
    size), and whether the offload succeeded (False reports a failed copy; nothing is recorded)."""

    key: Key
    size: int
    success: bool = True


# ---------------------------------------------------------------------------------------------
# Operations. Each is a generator that yields Rpc and returns the call's result.


Sessions = Callable[[], bool]
"""Reports whether the client writes within sessions (:meth:`SessionPool.using`, False with
``Config.no_session``)."""


def put_start(cid: bytes, tenant: str, key: Key, size: int, opts: Optional[PutOptions],
              sessions: Sessions) -> Op[List[res.Replica]]:
    reps = yield from _put_start(cid, tenant, key, size, opts, sessions)
    return [res.Replica.from_pb(r) for r in reps]


def _put_start(cid: bytes, tenant: str, key: Key, size: int, opts: Optional[PutOptions],
               sessions: Sessions) -> Op[List[types_pb2.Replica]]:
    """put_start, answering the replicas' messages."""
    req = metadata_pb2.PutStartRequest(tenant=tenant, client_id=cid, key=_key(key), group=_group(opts), size=size,
                                       config=_config(opts))
    try:
        r = yield Rpc("md", "PutStart", req)
    except errors.ObjectAlreadyExists as e:
        if e.attempts <= 1 or sessions():
            raise  # within a session a retry of a put that applied gets its answer, not this
        # Without a session, an earlier attempt may have placed this very put and lost its
        # answer: revoke this client's own pending write (it fails on anyone else's, or on a
        # complete object) and place it again.
        try:
            yield Rpc("md", "PutRevoke", metadata_pb2.PutRevokeRequest(tenant=tenant, client_id=cid, key=_key(key)))
        except errors.MetadError:
            raise e from None
        r = yield Rpc("md", "PutStart", req)
    return list(r.response.replicas)


def put_end(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "PutEnd", metadata_pb2.PutEndRequest(tenant=tenant, client_id=cid, key=_key(key), tier=tier))  # type: ignore[arg-type]


def put_revoke(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "PutRevoke", metadata_pb2.PutRevokeRequest(tenant=tenant, client_id=cid, key=_key(key), tier=tier))  # type: ignore[arg-type]


# How many times put places an object whose reservation a leader change lost (RESERVATION_LOST).
PUT_PLACEMENTS = 3


def put(cid: bytes, tenant: str, key: Key, size: int, opts: Optional[PutOptions],
        sessions: Sessions) -> Op[List[res.Replica]]:
    for n in range(1, PUT_PLACEMENTS + 1):
        reps = yield from _put_start(cid, tenant, key, size, opts, sessions)
        try:
            yield from put_end(cid, tenant, key, types_pb2.TIER_UNSPECIFIED)
            break
        except errors.ReservationLost:
            if n < PUT_PLACEMENTS:
                continue  # nothing was created: place it again
            raise
        except errors.MetadError:
            try:
                yield from put_revoke(cid, tenant, key, types_pb2.TIER_UNSPECIFIED)
            except errors.MetadError:
                pass
            raise
    for r in reps:
        r.status = types_pb2.REPLICA_STATUS_COMPLETE
    return [res.Replica.from_pb(r) for r in reps]


def upsert_start(cid: bytes, tenant: str, key: Key, size: int,
                 opts: Optional[PutOptions]) -> Op[Tuple[List[res.Replica], bool]]:
    r = yield Rpc("md", "UpsertStart", metadata_pb2.UpsertStartRequest(
        tenant=tenant, client_id=cid, key=_key(key), group=_group(opts), size=size, config=_config(opts)))
    return [res.Replica.from_pb(x) for x in r.response.replicas], bool(r.response.reused)


def upsert_end(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "UpsertEnd", metadata_pb2.UpsertEndRequest(tenant=tenant, client_id=cid, key=_key(key), tier=tier))  # type: ignore[arg-type]


def upsert_revoke(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "UpsertRevoke", metadata_pb2.UpsertRevokeRequest(tenant=tenant, client_id=cid, key=_key(key), tier=tier))  # type: ignore[arg-type]


def get(tenant: str, key: Key, stale: bool) -> Op[res.GetResult]:
    r = yield Rpc("md", "Get", metadata_pb2.GetRequest(tenant=tenant, key=_key(key), stale=stale))
    return res.GetResult.from_pb(r.response)


def exists(tenant: str, key: Key, stale: bool) -> Op[bool]:
    r = yield Rpc("md", "Exist", metadata_pb2.ExistRequest(tenant=tenant, key=_key(key), stale=stale))
    return bool(r.response.exists)


def remove(tenant: str, key: Key, force: bool) -> Op[None]:
    yield Rpc("md", "Remove", metadata_pb2.RemoveRequest(tenant=tenant, key=_key(key), force=force))


def remove_all(tenant: str, force: bool) -> Op[res.RemoveAllResult]:
    r = yield Rpc("md", "RemoveAll", metadata_pb2.RemoveAllRequest(tenant=tenant, force=force))
    return res.RemoveAllResult.from_pb(r.response)


def remove_group(tenant: str, group: Key, force: bool) -> Op[int]:
    r = yield Rpc("md", "RemoveGroup", metadata_pb2.RemoveGroupRequest(tenant=tenant, group=_b(group, "group"), force=force))
    return int(r.response.removed)


def list_group_page(tenant: str, group: Key, start_after: Key, limit: int,
                    stale: bool) -> Op[Tuple[List[bytes], bool]]:
    r = yield Rpc("md", "ListGroup", metadata_pb2.ListGroupRequest(
        tenant=tenant, group=_b(group, "group"), stale=stale, start_after=_b(start_after, "start_after"), limit=limit))
    return list(r.response.keys), bool(r.response.truncated)


def list_group(tenant: str, group: Key, stale: bool) -> Op[List[bytes]]:
    out: List[bytes] = []
    after = b""
    while True:
        try:
            keys, more = yield from list_group_page(tenant, group, after, 0, stale)
        except errors.MetadError as e:
            e.partial = out
            raise
        out.extend(keys)
        if not more or not keys:
            return out
        after = keys[-1]


def list_keys_page(tenant: str, prefix: Key, page_token: bytes, limit: int,
                   stale: bool) -> Op[Tuple[List[bytes], bytes]]:
    r = yield Rpc("md", "ListObjectKeys", metadata_pb2.ListObjectKeysRequest(
        tenant=tenant, prefix=_b(prefix, "prefix"), page_token=page_token, limit=limit, stale=stale))
    return list(r.response.keys), bytes(r.response.next_page_token)


def list_keys(tenant: str, prefix: Key, stale: bool) -> Op[List[bytes]]:
    out: List[bytes] = []
    token = b""
    while True:
        try:
            keys, token = yield from list_keys_page(tenant, prefix, token, 0, stale)
        except errors.MetadError as e:
            e.partial = out
            raise
        out.extend(keys)
        if not token:
            return out


def get_by_regex_page(tenant: str, pattern: str, page_token: bytes, limit: int,
                      stale: bool) -> Op[metadata_pb2.GetByRegexResponse]:
    r = yield Rpc("md", "GetByRegex", metadata_pb2.GetByRegexRequest(
        tenant=tenant, pattern=pattern, page_token=page_token, limit=limit, stale=stale))
    resp: metadata_pb2.GetByRegexResponse = r.response
    return resp


def get_by_regex(tenant: str, pattern: str, stale: bool) -> Op[List[res.RegexItem]]:
    out: List[res.RegexItem] = []
    token = b""
    while True:
        try:
            resp = yield from get_by_regex_page(tenant, pattern, token, 0, stale)
        except errors.MetadError as e:
            e.partial = out
            raise
        out.extend(res.RegexItem.from_pb(i) for i in resp.items)
        token = bytes(resp.next_page_token)
        if not token:
            return out


def mount_segment(cid: bytes, seg: types_pb2.SegmentDesc) -> Op[None]:
    yield Rpc("md", "MountSegment", metadata_pb2.MountSegmentRequest(client_id=cid, segment=seg))


def unmount_segment(owner: bytes, seg_id: bytes, grace_ms: int = 0) -> Op[res.UnmountSegmentResult]:
    if grace_ms < 0:
        raise ValueError("grace must not be negative")
    r = yield Rpc("md", "UnmountSegment", metadata_pb2.UnmountSegmentRequest(client_id=owner, segment_id=seg_id,
                                                                              grace_ms=grace_ms))
    return res.UnmountSegmentResult.from_pb(r.response)


def mount_local_disk(cid: bytes, capacity: int, endpoint: str, offload: bool) -> Op[Tuple[bytes, bool]]:
    r = yield Rpc("md", "MountLocalDisk", metadata_pb2.MountLocalDiskRequest(
        client_id=cid, capacity_bytes=capacity, endpoint=endpoint, offload=offload))
    return bytes(r.response.segment_id), bool(r.response.created)


def unmount_local_disk(cid: bytes) -> Op[res.UnmountLocalDiskResult]:
    r = yield Rpc("md", "UnmountLocalDisk", metadata_pb2.UnmountLocalDiskRequest(client_id=cid))
    return res.UnmountLocalDiskResult.from_pb(r.response)


def ping(cid: bytes, cluster: Cluster) -> Op[res.PingResult]:
    r = yield Rpc("md", "Ping", metadata_pb2.PingRequest(client_id=cid))
    resp = res.PingResult.from_pb(r.response)
    if resp.leader_address:
        cluster.set_leader(resp.leader_address, "named by ping")
    return resp


# Batches.

def _spans(n: int, nbytes: Callable[[int], int], max_items: int = MAX_BATCH_ITEMS,
           max_bytes: int = MAX_BATCH_BYTES) -> List[Tuple[int, int]]:
    """[start, end) bounds of consecutive batches over n items, each at most max_items items and
    max_bytes bytes (an item larger than that alone makes a batch)."""
    out: List[Tuple[int, int]] = []
    start = total = 0
    for i in range(n):
        b = nbytes(i)
        if i > start and (i - start == max_items or total + b > max_bytes):
            out.append((start, i))
            start, total = i, 0
        total += b
    if start < n:
        out.append((start, n))
    return out


def _check_repeats(field_name: str, keys: Sequence[bytes]) -> None:
    seen: Dict[bytes, int] = {}
    for i, k in enumerate(keys):
        j = seen.get(k)
        if j is not None:
            raise errors.RepeatedKey(f"a key repeats in the batch: {field_name}[{i}] repeats {field_name}[{j}]")
        seen[k] = i


def _check_count(got: int, want: int) -> None:
    if got != want:
        raise errors.BadResponse(f"malformed response: {got} results for {want} items")


def batch_put_start(cid: bytes, tenant: str, items: Sequence[BatchPutItem], opts: Optional[PutOptions],
                    sessions: Sessions) -> Op[List[res.BatchPutStartResult]]:
    if not all(isinstance(it, BatchPutItem) for it in items):
        raise TypeError("metad: items must be a sequence of BatchPutItem")
    keys = [_key(it.key, f"items[{i}]") for i, it in enumerate(items)]
    groups = [_b(it.group, f"items[{i}].group") for i, it in enumerate(items)]
    _check_repeats("items", keys)
    cfg = _config(opts)
    out: List[res.BatchPutStartResult] = []
    for s, e in _spans(len(items), lambda i: len(keys[i]) + len(groups[i]) + 16):
        req = metadata_pb2.BatchPutStartRequest(tenant=tenant, client_id=cid, config=cfg, items=[
            metadata_pb2.BatchPutStartRequest.Item(key=keys[i], group=groups[i], size=items[i].size) for i in range(s, e)])
        try:
            r = yield Rpc("md", "BatchPutStart", req)
            results = list(r.response.results)
            _check_count(len(results), e - s)
        except errors.MetadError as err:
            err.partial = out
            raise
        if r.attempts > 1 and not sessions():
            yield from _replace_own_pending(req, results)
        out.extend(res.BatchPutStartResult.from_pb(x) for x in results)
    return out


def _replace_own_pending(req: metadata_pb2.BatchPutStartRequest,
                         results: List[metadata_pb2.BatchPutStartResponse.Result]) -> Op[None]:
    """put_start's recovery for a retried batch sent without a session: items answered OBJECT_ALREADY_EXISTS whose
    pending write this client can revoke were placed by a lost attempt; revoke and place them
    again and replace their results. Failures leave the results as they were."""
    idx = [i for i, r in enumerate(results) if r.status.reason == types_pb2.REASON_OBJECT_ALREADY_EXISTS]
    if not idx:
        return
    try:
        rev = yield Rpc("md", "BatchPutRevoke", metadata_pb2.BatchPutRevokeRequest(
            tenant=req.tenant, client_id=req.client_id, keys=[req.items[i].key for i in idx]))
        if len(rev.response.results) != len(idx):
            return
        again = [idx[j] for j, s in enumerate(rev.response.results) if s.reason == types_pb2.REASON_UNSPECIFIED]
        if not again:
            return
        retry = metadata_pb2.BatchPutStartRequest(tenant=req.tenant, client_id=req.client_id, config=req.config,
                                                  items=[req.items[i] for i in again])
        resp = yield Rpc("md", "BatchPutStart", retry)
    except errors.MetadError:
        return
    if len(resp.response.results) != len(again):
        return
    for j, i in enumerate(again):
        results[i] = resp.response.results[j]


def _batch_status(keys: Sequence[Key], make: Callable[[List[bytes]], Rpc]) -> Op[List[res.Status]]:
    bkeys = _keys(keys)
    _check_repeats("keys", bkeys)
    return (yield from _span_status(len(bkeys), lambda i: len(bkeys[i]) + 8, lambda s, e: make(bkeys[s:e])))


def _span_status(n: int, nbytes: Callable[[int], int], make: Callable[[int, int], Rpc]) -> Op[List[res.Status]]:
    """The Statuses of n items sent in the requests of _spans(n, nbytes), make(start, end) being
    the request of items [start, end): one per item, in order; a request that fails raises its
    error with ``partial`` the Statuses before it."""
    out: List[res.Status] = []
    for s, e in _spans(n, nbytes):
        try:
            r = yield make(s, e)
            _check_count(len(r.response.results), e - s)
        except errors.MetadError as err:
            err.partial = out
            raise
        out.extend(res.Status.from_pb(x) for x in r.response.results)
    return out


def batch_put_end(cid: bytes, tenant: str, keys: Sequence[Key], tier: int) -> Op[List[res.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchPutEnd", metadata_pb2.BatchPutEndRequest(
        tenant=tenant, client_id=cid, keys=ks, tier=tier))))  # type: ignore[arg-type]


def batch_put_revoke(cid: bytes, tenant: str, keys: Sequence[Key], tier: int) -> Op[List[res.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchPutRevoke", metadata_pb2.BatchPutRevokeRequest(
        tenant=tenant, client_id=cid, keys=ks, tier=tier))))  # type: ignore[arg-type]


def batch_remove(tenant: str, keys: Sequence[Key], force: bool) -> Op[List[res.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchRemove", metadata_pb2.BatchRemoveRequest(
        tenant=tenant, keys=ks, force=force))))


def notify_offload(cid: bytes, tenant: str, reports: Sequence[OffloadReport]) -> Op[List[res.Status]]:
    if isinstance(reports, OffloadReport) or not all(isinstance(r, OffloadReport) for r in reports):
        raise TypeError("metad: results must be a sequence of OffloadReport")
    keys = [_key(r.key, f"results[{i}]") for i, r in enumerate(reports)]
    _check_repeats("results", keys)
    return (yield from _span_status(len(keys), lambda i: len(keys[i]) + 16, lambda s, e: Rpc(
        "md", "NotifyOffload", metadata_pb2.NotifyOffloadRequest(tenant=tenant, client_id=cid, results=[
            types_pb2.OffloadResult(key=keys[i], size=reports[i].size, success=reports[i].success)
            for i in range(s, e)]))))


def evict_disk_replica(cid: bytes, tenant: str, keys: Sequence[Key],
                       tier: int = types_pb2.TIER_LOCAL_DISK) -> Op[List[res.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "EvictDiskReplica", metadata_pb2.EvictDiskReplicaRequest(
        tenant=tenant, client_id=cid, keys=ks, tier=tier))))  # type: ignore[arg-type]


def _segment_ids(ids: Sequence[bytes], field: str) -> List[bytes]:
    """The bytes of every segment id of ids (16-byte UUIDs, checked by the server); TypeError for one
    id (bytes) given where a sequence is wanted, or an id that is not bytes, bytearray or
    memoryview."""
    if isinstance(ids, _KEY_TYPES):
        raise TypeError(f"metad: {field} must be a sequence of segment ids, not one {type(ids).__name__}")
    out: List[bytes] = []
    for i, x in enumerate(ids):
        if not isinstance(x, (bytes, bytearray, memoryview)):
            raise TypeError(f"metad: {field}[{i}] must be bytes, bytearray or memoryview, not {type(x).__name__}")
        out.append(bytes(x))
    return out


def promotion_alloc_start(cid: bytes, tenant: str, key: Key,
                          preferred: Sequence[bytes]) -> Op[Tuple[res.Replica, int]]:
    req = metadata_pb2.PromotionAllocStartRequest(tenant=tenant, client_id=cid, key=_key(key),
                                                  preferred_segment_ids=_segment_ids(preferred, "preferred"))
    r = yield Rpc("md", "PromotionAllocStart", req)
    return res.Replica.from_pb(r.response.replica), int(r.response.size)


def notify_promotion(cid: bytes, tenant: str, key: Key, success: bool) -> Op[None]:
    yield Rpc("md", "NotifyPromotion", metadata_pb2.NotifyPromotionRequest(
        tenant=tenant, client_id=cid, key=_key(key), success=bool(success)))


def fetch_tasks(cid: bytes, batch: int) -> Op[List[res.ScheduledTask]]:
    if isinstance(batch, bool) or not isinstance(batch, int):
        raise TypeError(f"metad: batch must be an int, not {type(batch).__name__}")
    if not 1 <= batch <= MAX_FETCH_TASKS:
        raise ValueError(f"metad: batch must be in 1..{MAX_FETCH_TASKS}, got {batch}")
    r = yield Rpc("md", "FetchTasks", metadata_pb2.FetchTasksRequest(client_id=cid, batch=batch))
    return [res.ScheduledTask.from_pb(t) for t in r.response.tasks]


def mark_task_to_complete(cid: bytes, task_id: int, success: bool, message: str) -> Op[None]:
    yield Rpc("md", "MarkTaskToComplete", metadata_pb2.MarkTaskToCompleteRequest(
        client_id=cid, task_id=task_id, success=bool(success), message=message))


def batch_put(cid: bytes, tenant: str, items: Sequence[BatchPutItem], opts: Optional[PutOptions],
              sessions: Sessions) -> Op[List[res.Status]]:
    start_err: Optional[errors.MetadError] = None
    try:
        started = yield from batch_put_start(cid, tenant, items, opts, sessions)
    except errors.MetadError as e:
        start_err = e
        started = cast(List[res.BatchPutStartResult], e.partial or [])
    out: List[Optional[res.Status]] = [None] * len(started)
    ok: List[Key] = []
    ok_idx: List[int] = []
    for i, r in enumerate(started):
        if r.status.reason != types_pb2.REASON_UNSPECIFIED:
            out[i] = r.status
        else:
            ok.append(items[i].key)
            ok_idx.append(i)
    try:
        ended = yield from batch_put_end(cid, tenant, ok, types_pb2.TIER_UNSPECIFIED) if ok else _empty()
    except errors.MetadError as e:
        for j, s in enumerate(cast(List[res.Status], e.partial or [])):
            out[ok_idx[j]] = s
        n = next((i for i, s in enumerate(out) if s is None), len(out))
        e.partial = out[:n]
        raise
    for j, s in enumerate(ended):
        out[ok_idx[j]] = s
    if start_err is not None:
        start_err.partial = out
        raise start_err
    return [s for s in out if s is not None]


def _empty() -> Op[List[res.Status]]:
    return []
    yield  # pragma: no cover  (makes this a generator)


def _distinct(keys: Sequence[bytes]) -> Tuple[List[bytes], Optional[List[int]]]:
    pos: Dict[bytes, int] = {}
    uniq: List[bytes] = []
    index: List[int] = []
    for k in keys:
        j = pos.get(k)
        if j is None:
            j = len(uniq)
            pos[k] = j
            uniq.append(k)
        index.append(j)
    if len(uniq) == len(keys):
        return list(keys), None
    return uniq, index


def _read_spans(keys: Sequence[bytes]) -> List[Tuple[int, int]]:
    """The requests of a BatchGet or BatchExist: one up to MAX_READ_BATCH_ITEMS keys and
    MAX_READ_BATCH_BYTES of keys, consecutive ones beyond."""
    return _spans(len(keys), lambda i: len(keys[i]) + 8, MAX_READ_BATCH_ITEMS, MAX_READ_BATCH_BYTES)


def batch_get(tenant: str, keys: Sequence[Key], stale: bool) -> Op[res.BatchGetResult]:
    uniq, index = _distinct(_keys(keys))
    out = metadata_pb2.BatchGetResponse()
    err: Optional[errors.MetadError] = None
    n = 0
    for s, e in _read_spans(uniq):
        while s < e:
            try:
                r = yield Rpc("md", "BatchGet", metadata_pb2.BatchGetRequest(tenant=tenant, keys=uniq[s:e], stale=stale))
                _check_count(len(r.response.results), e - s)
            except errors.MetadError as x:
                err = x
                break
            # The server answers RESPONSE_LIMIT_REACHED from the key where its response reached its
            # size bound on (never the first key): ask again from there.
            got = list(r.response.results)
            for i, item in enumerate(got):
                if i > 0 and item.status.reason == types_pb2.REASON_RESPONSE_LIMIT_REACHED:
                    got = got[:i]
                    break
            out.results.extend(got)
            s += len(got)
            if n == 0 or r.response.lease_ttl_ms < out.lease_ttl_ms:
                out.lease_ttl_ms = r.response.lease_ttl_ms
            n += 1
        if err is not None:
            break
    if index is not None:
        got = list(out.results)
        del out.results[:]
        for j in index:
            if j >= len(got):
                break
            out.results.add().CopyFrom(got[j])
    if err is not None:
        err.partial = res.BatchGetResult.from_pb(out)
        raise err
    return res.BatchGetResult.from_pb(out)


def batch_exists(tenant: str, keys: Sequence[Key], stale: bool) -> Op[res.BatchExistsResult]:
    uniq, index = _distinct(_keys(keys))
    out = metadata_pb2.BatchExistResponse()
    err: Optional[errors.MetadError] = None
    for n, (s, e) in enumerate(_read_spans(uniq)):
        try:
            r = yield Rpc("md", "BatchExist", metadata_pb2.BatchExistRequest(tenant=tenant, keys=uniq[s:e], stale=stale))
            _check_count(len(r.response.exists), e - s)
        except errors.MetadError as x:
            err = x
            break
        out.exists.extend(r.response.exists)
        if n == 0 or r.response.lease_ttl_ms < out.lease_ttl_ms:
            out.lease_ttl_ms = r.response.lease_ttl_ms
    if index is not None:
        got = list(out.exists)
        del out.exists[:]
        out.exists.extend(got[j] for j in index if j < len(got))
    if err is not None:
        err.partial = res.BatchExistsResult.from_pb(out)
        raise err
    return res.BatchExistsResult.from_pb(out)


# Admin.

def register_tenant(name: str, quota_bytes: int) -> Op[int]:
    r = yield Rpc("admin", "RegisterTenant", admin_pb2.RegisterTenantRequest(name=name, quota_bytes=quota_bytes))
    return int(r.response.instance_id)


def unregister_tenant(name: str, force: bool) -> Op[res.UnregisterTenantResult]:
    r = yield Rpc("admin", "UnregisterTenant", admin_pb2.UnregisterTenantRequest(name=name, force=force))
    return res.UnregisterTenantResult.from_pb(r.response)


def list_tenants(stale: bool) -> Op[List[res.TenantInfo]]:
    r = yield Rpc("admin", "ListTenants", admin_pb2.ListTenantsRequest(stale=stale))
    return [res.TenantInfo.from_pb(t) for t in r.response.tenants]


def set_quota(tenant: str, quota_bytes: int) -> Op[res.SetQuotaResult]:
    r = yield Rpc("admin", "SetQuota", admin_pb2.SetQuotaRequest(tenant=tenant, quota_bytes=quota_bytes))
    return res.SetQuotaResult.from_pb(r.response)


def get_quota(tenant: str, stale: bool) -> Op[res.GetQuotaResult]:
    r = yield Rpc("admin", "GetQuota", admin_pb2.GetQuotaRequest(tenant=tenant, stale=stale))
    return res.GetQuotaResult.from_pb(r.response)


def list_segments(tier: int, owner: Optional[bytes], stale: bool) -> Op[List[res.SegmentInfo]]:
    r = yield Rpc("admin", "ListSegments", admin_pb2.ListSegmentsRequest(
        stale=stale, tier=tier, client_id=owner or b""))  # type: ignore[arg-type]
    return [res.SegmentInfo.from_pb(x) for x in r.response.segments]


def list_members() -> Op[res.ListMembersResult]:
    r = yield Rpc("admin", "ListMembers", admin_pb2.ListMembersRequest())
    return res.ListMembersResult.from_pb(r.response)


def transfer_leader(target: str, cluster: Cluster) -> Op[res.TransferLeaderResult]:
    r = yield Rpc("admin", "TransferLeader", admin_pb2.TransferLeaderRequest(target=target))
    resp = res.TransferLeaderResult.from_pb(r.response)
    if resp.leader_address:
        cluster.set_leader(resp.leader_address, "after transfer_leader")
    return resp


def status(endpoint: str) -> Op[res.NodeStatus]:
    r = yield Rpc("admin", "Status", admin_pb2.StatusRequest(), endpoint=endpoint)
    return res.NodeStatus.from_pb(r.response)


def missing_segments(segs: Iterable[types_pb2.SegmentDesc], mounted: Iterable[bytes]) -> List[types_pb2.SegmentDesc]:
    """The segments of segs whose ids are not in mounted."""
    have = set(mounted)
    return [s for s in segs if s.id not in have]


def watch_request(tenant: Optional[str], all_tenants: bool, prefix: Optional[Key], kinds: Optional[_watch.Kinds],
                  start: Optional[_watch.Revision], progress: Optional[float]) -> metadata_pb2.WatchRequest:
    """The WatchRequest of the arguments of watch, checked: TypeError for a prefix, kind or start of
    the wrong type, ValueError for an unknown kind or a progress interval that is not positive or
    over the field's range. The server checks the rest (tenant with all_tenants, a prefix over 4096
    bytes)."""
    req = metadata_pb2.WatchRequest(tenant=tenant or "", all_tenants=all_tenants)
    if prefix is not None:
        req.key_prefix = _b(prefix, "prefix")
    if kinds is not None:
        if isinstance(kinds, (str, int)):
            raise TypeError(f"metad: kinds must be a sequence of kinds, not one {type(kinds).__name__}")
        vals: List[int] = [_watch.kind_value(k) for k in kinds]
        req.kinds.extend(vals)
    if start is not None:
        if not isinstance(start, _watch.Revision):
            raise TypeError(f"metad: start must be a metad.Revision, not {type(start).__name__}")
        req.start.CopyFrom(start.to_pb())
    if progress is not None:
        ms = round(progress * 1000)
        if not 0 < ms <= _watch.MAX_PROGRESS_MS:
            raise ValueError("metad: progress must be a positive number of seconds up to "
                             f"{_watch.MAX_PROGRESS_MS // 1000}, got {progress}")
        req.progress_interval_ms = ms
    return req


def segment(size: int, endpoint: str, *, name: str = "segment", base: int = 0, tier: int = types_pb2.TIER_MEMORY,
            segment_id: Optional[bytes] = None) -> types_pb2.SegmentDesc:
    """A SegmentDesc to mount: a random id unless given; base 0 means 1 GiB for a MEMORY or NOF
    segment (fine for a simulated worker; a real one passes the segment's address in its own
    address space). A DISK segment (a shared root: endpoint its directory, size its quota) or a DFS
    one (a pool: endpoint its file) is files, not addresses: its base is always 0."""
    files = tier in (types_pb2.TIER_DISK, types_pb2.TIER_DFS)
    return types_pb2.SegmentDesc(id=segment_id or new_client_id(), name=name, base=0 if files else base or 1 << 30,
                                 size=size, endpoint=endpoint, tier=tier)  # type: ignore[arg-type]


def file_path(directory: str, tenant: str, key: Key) -> str:
    """The file of an object in a directory of files by tenant and key: a DISK replica's file under
    its shared root (directory = the replica's segment_endpoint), or a worker's LOCAL_DISK file:
    ``<directory>/<hex tenant>/<hex key>`` ("" is the tenant "default")."""
    return "/".join((directory.rstrip("/"), (tenant or "default").encode().hex(), _b(key).hex()))
