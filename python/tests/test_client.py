"""The synchronous client against a real 3-node cluster: every call, the error mapping, and one
bad input per call (InvalidParams)."""

from __future__ import annotations

import uuid
from typing import Callable

import pytest

import metad
from cluster import Cluster, wait_for
from metad.metadv1 import admin_pb2, types_pb2


def key(prefix: str = "k") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def test_put_start_end_get_exists_remove(client: metad.Client) -> None:
    k = key()
    reps = client.put_start(k, 4096, options=metad.PutOptions(data_type=7))
    assert len(reps) == 1 and reps[0].status == types_pb2.REPLICA_STATUS_PROCESSING and reps[0].size == 4096
    with pytest.raises(metad.ReplicaIsNotReady):
        client.get(k)
    assert client.exists(k) is False
    client.put_end(k)
    client.put_end(k)  # idempotent
    got = client.get(k)
    assert got.size == 4096 and got.data_type == 7 and got.lease_ttl_ms > 0
    assert got.replicas[0].status == types_pb2.REPLICA_STATUS_COMPLETE
    assert client.get(k, stale=True).lease_ttl_ms == 0
    assert client.exists(k) and client.exists(k, stale=True)
    with pytest.raises(metad.ObjectHasLease):
        client.remove(k)
    client.remove(k, force=True)
    assert not client.exists(k)


def test_put_revoke_and_put(client: metad.Client) -> None:
    k = key()
    client.put_start(k, 100)
    client.put_revoke(k)
    assert not client.exists(k)
    reps = client.put(k, 100)
    assert reps[0].status == types_pb2.REPLICA_STATUS_COMPLETE
    with pytest.raises(metad.ObjectAlreadyExists) as ei:
        client.put_start(k, 100)
    assert ei.value.key == k.encode() and ei.value.tenant == "default" and ei.value.attempts == 1


def test_upsert(client: metad.Client) -> None:
    k = key()
    reps, reused = client.upsert_start(k, 256)
    assert reps and not reused
    client.upsert_end(k)
    reps, reused = client.upsert_start(k, 256)
    assert reused
    client.upsert_revoke(k)  # the rewrite is abandoned, and with it the object
    assert not client.exists(k)
    client.upsert_start(k, 512)
    client.upsert_end(k)
    assert client.get(k).size == 512


def test_batches(client: metad.Client) -> None:
    ks = [key("b") for _ in range(5)]
    res = client.batch_put_start([metad.BatchPutItem(k, 64) for k in ks[:3]])
    assert [metad.item_error(r.status) for r in res] == [None] * 3
    assert all(r.replicas for r in res)
    client.batch_put_revoke(ks[2:3])
    st = client.batch_put_end(ks[:3])
    assert metad.item_error(st[0]) is None and isinstance(metad.item_error(st[2]), metad.ObjectNotFound)
    st = client.batch_put([metad.BatchPutItem(k, 64) for k in ks[3:]] + [metad.BatchPutItem(ks[0], 64)])
    assert [type(metad.item_error(s)) for s in st] == [type(None), type(None), metad.ObjectAlreadyExists]
    got = client.batch_get([ks[0], ks[2], ks[0], ks[4]])
    assert [metad.item_error(r.status) is None for r in got.results] == [True, False, True, True]
    assert isinstance(metad.item_error(got.results[1].status), metad.ObjectNotFound)
    assert list(client.batch_exists([ks[0], ks[2], ks[3]]).exists) == [True, False, True]
    st = client.batch_remove([ks[0], ks[2]], force=True)
    assert metad.item_error(st[0]) is None and isinstance(metad.item_error(st[1]), metad.ObjectNotFound)
    with pytest.raises(metad.RepeatedKey):
        client.batch_put_end([ks[1], ks[1]])


def test_batch_split_over_item_limit(client: metad.Client) -> None:
    ks = [key("s") for _ in range(metad.MAX_BATCH_ITEMS + 10)]
    st = client.batch_put([metad.BatchPutItem(k, 64) for k in ks])
    assert len(st) == len(ks) and all(metad.item_error(s) is None for s in st)
    assert all(client.batch_exists(ks).exists)
    assert all(metad.item_error(s) is None for s in client.batch_remove(ks, force=True))


def test_groups(client: metad.Client) -> None:
    g = key("g")
    ks = sorted(key("m") for _ in range(3))
    for k in ks:
        client.put(k, 64, options=metad.PutOptions(group=g))
    client.batch_put([metad.BatchPutItem(key("m"), 64, group=g)])
    members = client.list_group(g)
    assert len(members) == 4 and [k.encode() for k in ks] == [m for m in members if m in {k.encode() for k in ks}]
    page, more = client.list_group_page(g, limit=2)
    assert len(page) == 2 and more
    page2, more2 = client.list_group_page(g, start_after=page[-1], limit=10)
    assert len(page2) == 2 and not more2
    assert client.remove_group(g, force=True) == 4
    assert not client.exists(ks[0])


def test_list_keys_and_get_by_regex(client: metad.Client) -> None:
    t = key("scan")
    client.register_tenant(t)
    for k in ("b1", "a2", "a1", "c1"):
        client.put(k, 64, tenant=t)
        client.put(t + k, 64)  # another tenant's keys never appear
    assert client.list_keys(tenant=t) == [b"a1", b"a2", b"b1", b"c1"]
    page, token = client.list_keys_page(tenant=t, limit=2)
    assert page == [b"a1", b"a2"] and token
    page2, token2 = client.list_keys_page(tenant=t, page_token=token, limit=10)
    assert page2 == [b"b1", b"c1"] and not token2
    assert client.list_keys(tenant=t, prefix=b"a") == [b"a1", b"a2"]
    items = client.get_by_regex(r"^a\d$", tenant=t)
    assert [i.key for i in items] == [b"a1", b"a2"] and all(len(i.replicas) == 1 for i in items)
    with pytest.raises(metad.ObjectHasLease):
        client.remove("a1", tenant=t)
    with pytest.raises(metad.InvalidParams):
        client.get_by_regex("((", tenant=t)


def test_tenants_and_quota(client: metad.Client) -> None:
    t = key("t")
    assert client.register_tenant(t, 1 << 20) > 0
    with pytest.raises(metad.TenantAlreadyExists):
        client.register_tenant(t)
    assert t in [x.name for x in client.list_tenants()]
    q = client.get_quota(t)
    assert q.requested_quota_bytes == 1 << 20 and q.capacity_bytes > 0
    assert client.set_quota(t, 4096).requested_quota_bytes == 4096
    client.put("a", 4096, tenant=t)
    client.get("a", tenant=t)  # leased: the tenant-quota eviction cannot take it for b
    with pytest.raises(metad.TenantQuotaExceeded) as ei:
        client.put_start("b", 4096, tenant=t)
    assert ei.value.tenant == t
    with pytest.raises(metad.TenantNotEmpty):
        client.unregister_tenant(t)
    assert client.remove_all(tenant=t, force=True).removed == 1
    assert client.unregister_tenant(t, force=True).objects_removed == 0
    with pytest.raises(metad.TenantNotRegistered):
        client.put_start("c", 64, tenant=t)


def test_segments_and_ping(cluster: Cluster, client: metad.Client) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=10.0)) as w:
        seg = metad.segment(1 << 20, "sim://w", name="w")
        w.mount_segment(seg)
        w.mount_segment(seg)  # idempotent
        mine = w.list_segments(owner=w.client_id)
        assert [s.segment.id for s in mine] == [seg.id] and mine[0].segment.owner_client_id == w.client_id
        assert seg.id in [s.segment.id for s in client.list_segments(tier=types_pb2.TIER_MEMORY)]
        with pytest.raises(metad.SegmentOwnedByOtherClient):
            client.unmount_segment(seg.id)
        p = w.ping()
        assert list(p.segment_ids) == [seg.id] and p.client_ttl_ms == 60000 and p.leader_address == w.leader()
        assert sorted(p.member_addresses) == sorted(cluster.endpoints)
        loop = w.ping_loop([seg], interval=0.05)
        try:
            # The cluster loses the segment; the loop mounts it again.
            assert w.unmount_segment(seg.id).replicas_dropped == 0
            wait_for(lambda: loop.remounts >= 1, 10, "a remount")
            wait_for(lambda: [s.segment.id for s in w.list_segments(owner=w.client_id)] == [seg.id], 10, "the segment back")
        finally:
            loop.stop()
        assert loop.pings > 0
        w.unmount_segment(seg.id)
        with pytest.raises(metad.SegmentNotFound):
            w.unmount_segment(seg.id)


def test_no_available_handle(cluster: Cluster) -> None:
    with metad.Client(cluster.endpoints, metad.Config(timeout=10.0)) as c:
        with pytest.raises(metad.NoAvailableHandle):
            c.put_start(key(), 1 << 40)


def test_illegal_client_and_invalid_write(cluster: Cluster, client: metad.Client) -> None:
    k = key()
    client.put_start(k, 64)
    with metad.Client(cluster.endpoints) as other:
        with pytest.raises(metad.IllegalClient):
            other.put_end(k)
    client.put_end(k)
    with pytest.raises(metad.InvalidWrite):
        client.put_revoke(k)  # nothing is being written


def test_kinds_on_real_refusals(cluster: Cluster, client: metad.Client) -> None:
    """A refusal of the cluster is caught by its kind, and the kind's gRPC code is the status code
    the cluster answered with."""
    k = key()
    with pytest.raises(metad.NotFound) as nf:
        client.get(k)
    client.put(k, 64)
    client.get(k)  # leased
    with pytest.raises(metad.AlreadyExists) as ae:
        client.put_start(k, 64)
    with pytest.raises(metad.Conflict) as cf:
        client.remove(k)
    with pytest.raises(metad.ResourceExhausted) as rx:
        client.put_start(key(), 1 << 40)
    with pytest.raises(metad.InvalidArgument) as ia:
        client.get_by_regex("((")
    client.put_start(k + "w", 64)
    with metad.Client(cluster.endpoints, metad.Config(timeout=10.0)) as other:
        with pytest.raises(metad.PermissionDenied) as pd:
            other.put_end(k + "w")
    client.put_revoke(k + "w")
    client.remove(k, force=True)
    for ei, cls, kind in ((nf, metad.ObjectNotFound, metad.NotFound), (ae, metad.ObjectAlreadyExists, metad.AlreadyExists),
                          (cf, metad.ObjectHasLease, metad.Conflict), (rx, metad.NoAvailableHandle, metad.ResourceExhausted),
                          (ia, metad.InvalidParams, metad.InvalidArgument), (pd, metad.IllegalClient, metad.PermissionDenied)):
        assert type(ei.value) is cls and ei.value.code == kind.grpc_code, (cls, ei.value.code)


def test_status_members_transfer(cluster: Cluster, client: metad.Client) -> None:
    leader = cluster.leader(client)
    st = client.status(leader.client)
    assert st.role == admin_pb2.NODE_ROLE_LEADER and st.name == leader.name and st.version
    rows = client.status_all(timeout=5)
    assert [r[0] for r in rows][:3] == cluster.endpoints and all(r[1] is not None for r in rows)
    m = client.list_members()
    assert sorted(x.name for x in m.members) == ["n1", "n2", "n3"]
    with pytest.raises(metad.MemberNotFound):
        client.transfer_leader("nope")
    target = next(n for n in cluster.nodes if n is not leader)
    r = client.transfer_leader(target.name)
    assert r.leader_name == target.name and client.leader() == target.client
    client.put(key(), 64)  # the new leader takes writes
    with pytest.raises(metad.MetadError):  # an unreachable endpoint, asked once
        client.status("127.0.0.1:1", timeout=2)


def test_follows_leader_hint(cluster: Cluster, client: metad.Client) -> None:
    leader = cluster.leader(client)
    followers = [n.client for n in cluster.nodes if n is not leader]
    with metad.Client(followers + [leader.client]) as c:
        assert c.leader() == followers[0]
        c.exists(key())  # forwarded by the follower, whose answer names the leader
        assert c.leader() == leader.client


def test_closed_client(cluster: Cluster) -> None:
    c = metad.Client(cluster.endpoints)
    c.close()
    with pytest.raises(metad.ClientClosed):
        c.get("x")


def test_config_validation() -> None:
    for bad in (metad.Config(endpoints=[]), metad.Config(endpoints=["nohostport"]),
                metad.Config(endpoints=["a:1", "a:1"]), metad.Config(client_id=b"short"),
                metad.Config(retry_initial=1.0, retry_max=0.5)):
        with pytest.raises(ValueError):
            metad.Client(config=bad)


BAD = b"bad\x00key"  # NUL is not allowed in keys and group ids
# One bad input per call that takes input; transfer_leader's only input is a member name, which is
# MEMBER_NOT_FOUND when wrong (test_status_members_transfer), and ping, status, status_all and
# list_members take none the server could reject.
BAD_CALLS: "dict[str, Callable[[metad.Client], object]]" = {
    "put_start": lambda c: c.put_start(BAD, 64),
    "put_end": lambda c: c.put_end(BAD),
    "put_revoke": lambda c: c.put_revoke(BAD),
    "put": lambda c: c.put(key(), 0),
    "upsert_start": lambda c: c.upsert_start(BAD, 64),
    "upsert_end": lambda c: c.upsert_end(BAD),
    "upsert_revoke": lambda c: c.upsert_revoke(BAD),
    "get": lambda c: c.get(BAD),
    "exists": lambda c: c.exists(b""),
    "remove": lambda c: c.remove(BAD),
    "remove_all": lambda c: c.remove_all(tenant="_reserved"),
    "list_group": lambda c: c.list_group(BAD),
    "list_group_page": lambda c: c.list_group_page(b""),
    "list_keys": lambda c: c.list_keys(tenant="_reserved"),
    "list_keys_page": lambda c: c.list_keys_page(page_token=b"not a token"),
    "get_by_regex": lambda c: c.get_by_regex("(("),
    "remove_group": lambda c: c.remove_group(b""),
    "batch_put_start": lambda c: c.batch_put_start([metad.BatchPutItem(BAD, 64)]),
    "batch_put_end": lambda c: c.batch_put_end([BAD]),
    "batch_put_revoke": lambda c: c.batch_put_revoke([BAD]),
    "batch_put": lambda c: c.batch_put([metad.BatchPutItem(key(), 0)]),
    "batch_get": lambda c: c.batch_get([BAD]),
    "batch_exists": lambda c: c.batch_exists([b""]),
    "batch_remove": lambda c: c.batch_remove([BAD]),
    "mount_segment": lambda c: c.mount_segment(metad.segment(100, "sim://x")),
    "unmount_segment": lambda c: c.unmount_segment(b"short"),
    "list_segments": lambda c: c.list_segments(owner=b"short"),
    "register_tenant": lambda c: c.register_tenant("_reserved"),
    "unregister_tenant": lambda c: c.unregister_tenant("\x01"),
    "set_quota": lambda c: c.set_quota("_reserved", 1),
    "get_quota": lambda c: c.get_quota("\x01"),
}


@pytest.mark.parametrize("call", sorted(BAD_CALLS))
def test_bad_input(client: metad.Client, call: str) -> None:
    with pytest.raises(metad.InvalidParams) as ei:
        BAD_CALLS[call](client)
    e = ei.value
    # A bad object key is refused by the client before any call (InvalidKey), the rest by the server.
    assert e.reason == types_pb2.REASON_INVALID_PARAMS and e.message
    assert e.attempts == (0 if isinstance(e, metad.InvalidKey) else 1)
    assert isinstance(e, metad.MetadError)
