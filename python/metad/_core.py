"""What the synchronous and the asyncio clients share to make calls: the endpoint list and its
leader choice (:class:`Cluster`), the retry rules and their log, and the session pool's state
(:class:`SessionPool`). The configuration is :mod:`metad._config`; the operations, each written
once as a generator of :class:`Rpc` objects, are :mod:`metad._ops`.

An operation yields :class:`Rpc` objects and receives a :class:`Reply` for each, or has the call's
:class:`~metad.errors.MetadError` thrown into it; the client that drives it makes the retried
calls, with blocking or with awaiting gRPC.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generator, Iterable, List, Optional, Tuple, TypeVar

import grpc

from metad import errors
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

T = TypeVar("T")

log = logging.getLogger("metad")
"""The client's logger (the package gives it only a NullHandler: nothing is printed unless the
application configures logging). DEBUG: each retry, with the attempt, the endpoint, the error
and the backoff, and each session reopened after SESSION_EXPIRED. INFO: the endpoint calls go to
changed (a failover, a NOT_LEADER redirect, a leader named by a forwarding follower, ping or
transfer_leader). WARNING: an attempt abandoned by the watchdog (its node fell silent; the outcome
is unknown) and a call given up while its error was one the client retries (retries or the call's
timeout ran out)."""

LEADER_HEADER = "x-metad-leader"
"""Response header a follower sets on a call it forwarded: the leader's client address."""

SUSPECT_ATTEMPTS = 5
"""How long, in attempt timeouts, failover passes by an endpoint found silent."""

MAX_SEND_BYTES = 16 << 20
MAX_RECV_BYTES = 64 << 20

CHANNEL_OPTIONS: List[Tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_SEND_BYTES),
    ("grpc.max_receive_message_length", MAX_RECV_BYTES),
    # Reconnect quickly to a restarted node; calls never wait for a connection (a node that is
    # down fails fast with UNAVAILABLE and the call moves on).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
]

HEALTH_METHOD = "/grpc.health.v1.Health/Check"
"""The gRPC health check the attempt watchdog sends. Its request is sent empty (every service) and
its answer is not decoded: any answer proves the node alive."""


@dataclass
class Rpc:
    """One unary call an operation asks for: service "md" (Metadata) or "admin", the method name,
    the request; endpoint, when set, sends it there once, without retries or redirects."""

    service: str
    method: str
    request: Any
    endpoint: Optional[str] = None


@dataclass
class Reply:
    """The answer to an Rpc and how many attempts it took."""

    response: Any
    attempts: int


Op = Generator[Rpc, Reply, T]


class Endpoint:
    """One node's address, its channel and stubs, and suspect_until: the monotonic time until
    which failover passes it by (0 or past = healthy). Shared by every call; suspect_until is read
    and written without a lock (a float store is atomic in CPython)."""

    def __init__(self, addr: str, idx: int, channel: Any) -> None:
        self.addr = addr
        self.idx = idx
        self.channel = channel
        self.suspect_until = 0.0
        self._calls: Dict[Tuple[str, str], Any] = {}
        self._streams: Dict[Tuple[str, str], Any] = {}
        self.health = channel.unary_unary(HEALTH_METHOD, request_serializer=_identity,
                                          response_deserializer=_identity)

    def suspect(self, now: float) -> bool:
        """Whether failover should pass this endpoint by at now (time.monotonic())."""
        return self.suspect_until > now

    def method(self, service: str, name: str) -> Any:
        """The multi-callable of service ("md" or "admin") method name on this channel."""
        k = (service, name)
        mc = self._calls.get(k)
        if mc is None:
            mc = _multi_callable(self.channel, service, name)
            self._calls[k] = mc
        return mc

    def stream(self, service: str, name: str) -> Any:
        """The multi-callable of service's server-streaming method name on this channel."""
        k = (service, name)
        mc = self._streams.get(k)
        if mc is None:
            mc = _multi_callable(self.channel, service, name, stream=True)
            self._streams[k] = mc
        return mc


def _identity(b: bytes) -> bytes:
    return b


_SERVICES = {"md": ("metad.v1.Metadata", metadata_pb2), "admin": ("metad.v1.Admin", admin_pb2)}


def _multi_callable(channel: Any, service: str, name: str, stream: bool = False) -> Any:
    full, module = _SERVICES[service]
    sd = module.DESCRIPTOR.services_by_name[full.split(".")[-1]]
    m = sd.methods_by_name[name]
    from google.protobuf import symbol_database
    db = symbol_database.Default()
    req_cls = db.GetSymbol(m.input_type.full_name)
    resp_cls = db.GetSymbol(m.output_type.full_name)
    make = channel.unary_stream if stream else channel.unary_unary
    return make(f"/{full}/{name}", request_serializer=req_cls.SerializeToString,
                response_deserializer=resp_cls.FromString)


class Cluster:
    """The endpoint list and the endpoint calls go to (the believed leader), safe for use from
    any thread. Endpoints are only added (learned from the cluster), never dropped."""

    def __init__(self, addrs: Iterable[str], dial: Callable[[str], Any]) -> None:
        self._dial = dial
        self._mu = threading.Lock()
        self.eps: List[Endpoint] = []
        self.by_addr: Dict[str, Endpoint] = {}
        self.closed = False
        for a in addrs:
            self._endpoint_locked(a)
        self.cur: Endpoint = self.eps[0]

    def _endpoint_locked(self, addr: str) -> Endpoint:
        ep = self.by_addr.get(addr)
        if ep is None:
            if self.closed:
                raise errors.ClientClosed("client closed")
            ep = Endpoint(addr, len(self.eps), self._dial(addr))
            self.eps.append(ep)
            self.by_addr[addr] = ep
        return ep

    def addrs(self) -> List[str]:
        with self._mu:
            return [e.addr for e in self.eps]

    def close(self) -> List[Any]:
        """Mark closed and return the channels to close (once; later calls get [])."""
        with self._mu:
            if self.closed:
                return []
            self.closed = True
            return [e.channel for e in self.eps]

    def set_leader(self, addr: str, why: str) -> None:
        """Make addr (added if new) the endpoint calls go to, clearing any suspicion of it: its
        callers learned it from a successful answer (why says which, for the log)."""
        if not addr:
            return
        with self._mu:
            try:
                ep = self._endpoint_locked(addr)
            except errors.ClientClosed:
                return
            ep.suspect_until = 0.0
            old, self.cur = self.cur, ep
        if old is not ep:
            log.info("calls move from %s to %s, the leader %s", old.addr, addr, why)

    def redirect(self, addr: str) -> bool:
        """Make addr (added if new) the endpoint calls go to after a NOT_LEADER answer named it,
        unless it is suspect (a node that has not heard of an election names the leader it last
        knew). Reports whether calls now go to addr."""
        with self._mu:
            ep = self.by_addr.get(addr)
            if ep is not None and ep.suspect(time.monotonic()):
                log.info("not redirected to %s, named leader by NOT_LEADER: it fell silent lately", addr)
                return False
            try:
                ep = self._endpoint_locked(addr)
            except errors.ClientClosed:
                return False
            old, self.cur = self.cur, ep
        if old is not ep:
            log.info("redirect: calls move from %s to %s, named leader by NOT_LEADER", old.addr, addr)
        return True

    def advance(self, failed: Endpoint, why: errors.MetadError) -> None:
        """Move calls from failed to the next endpoint that is not suspect, unless another call
        already moved them. When every other endpoint is suspect, go back to failed if it is not,
        else to the endpoint whose suspicion ends first. why (the attempt's error) is logged."""
        with self._mu:
            if self.cur is not failed:
                return
            now = time.monotonic()
            first: Optional[Endpoint] = None
            n = len(self.eps)
            for i in range(1, n + 1):
                ep = self.eps[(failed.idx + i) % n]
                if not ep.suspect(now):
                    first = ep
                    break
                if first is None or ep.suspect_until < first.suspect_until:
                    first = ep
            assert first is not None
            self.cur = first
        if first is not failed:
            log.info("failover: calls move from %s to %s after %s", failed.addr, first.addr, why)

    def follow_hint(self, ep: Endpoint, initial_metadata: Optional[Iterable[Tuple[str, Any]]]) -> None:
        """Switch to the leader a forwarding follower named in its answer's x-metad-leader header,
        so the next call skips the hop."""
        for k, v in initial_metadata or ():
            if k == LEADER_HEADER:
                if v and v != ep.addr and self.cur is ep:
                    self.set_leader(str(v), f"named by {ep.addr}, which forwarded a call")
                return


# What the retry loop does after a failed attempt.
STOP, REDIRECT, FAILOVER = 0, 1, 2


def classify(err: errors.MetadError, addr: str) -> Tuple[int, str]:
    """Decide what to do after err from an attempt at addr: STOP for a deterministic rejection
    or a local error, REDIRECT (with the address) for NOT_LEADER naming another node, FAILOVER
    for UNAVAILABLE (the reason, or the status without one: a connection error) or NOT_LEADER
    naming no other node. The other reasons of the Unavailable kind (STATE_REPLACED) stop."""
    if isinstance(err, errors.NotLeader):
        if err.leader_address and err.leader_address != addr:
            return REDIRECT, err.leader_address
        return FAILOVER, ""
    if isinstance(err, errors.Unavailable) and err.reason == types_pb2.REASON_UNAVAILABLE and err.code is not None:
        return FAILOVER, ""
    return STOP, ""


def retryable(err: errors.MetadError, addr: str) -> bool:
    """Whether the retry loop would try err's call again (a silent node, or not STOP)."""
    return getattr(err, "_silent", False) or classify(err, addr)[0] != STOP


def log_retry(rpc: Rpc, attempt: int, addr: str, err: errors.MetadError, delay: float) -> None:
    """Log (DEBUG) that attempt of rpc at addr failed with err and the call goes again after delay."""
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s: attempt %d at %s failed: %s; retrying %s", rpc.method, attempt, addr, err,
                  f"in {delay:.3f}s" if delay > 0 else "at once")


def log_abandoned(rpc: Rpc, attempt: int, err: errors.MetadError) -> None:
    """Log (WARNING) an attempt the watchdog abandoned (its node fell silent)."""
    log.warning("%s: attempt %d abandoned: %s", rpc.method, attempt, err)


def log_gave_up(rpc: Rpc, attempts: int, addr: str, err: errors.MetadError, why: str) -> None:
    """Log (WARNING) a call given up for why while its last error (at addr) was one the client
    retries."""
    if retryable(err, addr):
        log.warning("%s: giving up after %d attempt%s (%s): %s", rpc.method, attempts,
                    "" if attempts == 1 else "s", why, err)


def give_up_reason(deadline: Optional[float], attempts: int, max_retries: int, closed: bool) -> str:
    """Why the retry loop stops after attempts ("" if it goes on)."""
    if closed:
        return "the client was closed"
    if deadline is not None and time.monotonic() >= deadline:
        return "the call's timeout ran out"
    if attempts > max_retries:
        return "no retries left" if max_retries >= 0 else "retries are off"
    return ""


def jitter(d: float) -> float:
    """A delay drawn uniformly from [d/2, d]."""
    return random.uniform(d / 2, d)


def silent_error(ep: Endpoint, attempt_timeout: float) -> errors.OutcomeUnknown:
    half = attempt_timeout / 2
    return errors.OutcomeUnknown(
        f"{ep.addr} stopped answering (no health answer within {attempt_timeout - half:g}s); the outcome is unknown",
        code=grpc.StatusCode.UNAVAILABLE, reason=types_pb2.REASON_UNAVAILABLE)


def new_client_id() -> bytes:
    """A random (version 4) UUID in wire form."""
    return uuid.uuid4().bytes


# ---------------------------------------------------------------------------------------------
# Sessions (exactly-once writes).

MAX_SESSIONS = 4
"""Most sessions one client writes through. A write takes a number of any open session whose
window has room; one slow write pins its session's window (its answer, and every later one of that
session, stay unacknowledged), so the others carry on, and a client opens another session only when
every open one is full."""

_SESSION_HEADER = types_pb2.SessionHeader.DESCRIPTOR.full_name
_session_fields: Dict[str, bool] = {}


def takes_session(request: Any) -> bool:
    """Whether request has a ``session`` field of type ``metad.v1.SessionHeader``: the requests
    of the writes the cluster runs at most once per (session, seq). Read from the message
    descriptor (and remembered per message type)."""
    d = getattr(request, "DESCRIPTOR", None)
    if d is None:
        return False
    name = d.full_name
    got = _session_fields.get(name)
    if got is None:
        fd = d.fields_by_name.get("session")
        got = fd is not None and fd.message_type is not None and fd.message_type.full_name == _SESSION_HEADER
        _session_fields[name] = got
    return got


class _Seqs:
    """One open session: its id, its window, the next sequence number and those in use (the
    numbers of calls that have not returned)."""

    def __init__(self, session_id: int, window: int) -> None:
        self.id = session_id
        self.window = window
        self.next = 1
        self.inflight: set[int] = set()

    def floor(self) -> int:
        """The lowest number in use, or next when none is."""
        return min(self.inflight, default=self.next)

    def room(self) -> bool:
        """Whether one more number fits in the window."""
        return self.next - self.floor() < self.window


class SessionPool:
    """The client sessions of one client and the numbers in use, without locking or waiting: the
    synchronous client guards it with a threading.Condition, the asyncio client with an
    asyncio.Condition, and each serializes opening a session with a lock of its own.

    Unless ``Config.no_session`` is set, a client opens a session on the cluster with its first
    write that takes a header (OpenSession, through the normal retried call path) and numbers its
    writes: every request with a ``session`` field (:func:`takes_session`) carries the session, a
    sequence number of its own (from 1 per session) that every retry of the call reuses, to any
    endpoint, and the lowest number of that session still waiting for its answer. The number is
    released when the call returns. The cluster runs a numbered write at most once and answers a
    retry of one that applied with the first answer: a retried put_start returns the replicas of the
    attempt whose answer was lost, a retried remove succeeds. A session's numbers in use span at
    most its window (OpenSessionResponse.window); a client writes through up to
    :data:`MAX_SESSIONS` sessions, opening another only when every open one is full, and a write
    waits (within its timeout) only while all of them are full.

    A session unused for its ttl expires. A call whose first attempt meets SESSION_EXPIRED
    (nothing was done) drops that session, opens a new one and goes again, once; one whose later
    attempt meets it raises :class:`~metad.errors.SessionExpired`: an earlier attempt may have
    applied. An error opening a session is raised with ``attempts`` 0: the write was not sent. A
    cluster that answers OpenSession with UNIMPLEMENTED turns sessions off for good; without a
    session a write is at most once and its outcome is unknown when its answer is lost.
    """

    def __init__(self) -> None:
        self.off = False
        self.open: List[_Seqs] = []

    def take(self) -> Optional[types_pb2.SessionHeader]:
        """The header of the next number of an open session with room, that number now in use;
        None when sessions are off or none has room (see :meth:`full`)."""
        if self.off:
            return None
        for q in self.open:
            low = q.floor()  # also the floor once seq (= next, above every number in use) is in use
            if q.next - low < q.window:
                seq = q.next
                q.next += 1
                q.inflight.add(seq)
                return types_pb2.SessionHeader(session_id=q.id, seq=seq, first_unacked_seq=low)
        return None

    def full(self) -> bool:
        """Whether no more sessions may be opened: a write must wait for a number."""
        return len(self.open) >= MAX_SESSIONS

    def opened(self, resp: metadata_pb2.OpenSessionResponse) -> None:
        """Add the session OpenSession answered."""
        self.open.append(_Seqs(resp.session_id, max(resp.window, 1)))

    def release(self, h: types_pb2.SessionHeader) -> bool:
        """Release h's number (its call returned). Reports whether a write waiting for a number may
        now find one: h's number was the lowest in use of its session, so that session's window
        moved on (releasing any other number leaves every session's room as it was)."""
        for q in self.open:
            if q.id == h.session_id:
                seq = h.seq
                if seq not in q.inflight:
                    return False
                low = q.floor()
                q.inflight.discard(seq)
                return seq == low
        return False

    def expired(self, h: types_pb2.SessionHeader) -> None:
        """Forget the session h named, so that a later write opens another."""
        self.open = [q for q in self.open if q.id != h.session_id]

    def using(self) -> bool:
        """Whether writes carry a header (sessions open, or to be opened)."""
        return not self.off

    def drain(self) -> List[int]:
        """Forget every open session and return their ids (close ends them on the cluster)."""
        ids = [q.id for q in self.open]
        self.open = []
        return ids


# CLOSE_SESSION_TIMEOUT bounds close()'s CloseSession calls, in seconds: the sessions are closed for
# the cluster's sake (their kept answers go at once rather than at their ttl), so a cluster that
# does not answer in time, or does not know the call, only keeps them until they expire.
CLOSE_SESSION_TIMEOUT = 1.0


def close_session_rpc(session_id: int) -> Rpc:
    """The retried CloseSession call that ends one of the client's sessions."""
    return Rpc("md", "CloseSession", metadata_pb2.CloseSessionRequest(session_id=session_id))


def open_session_rpc(cid: bytes) -> Rpc:
    """The retried OpenSession call that opens a session for client cid."""
    return Rpc("md", "OpenSession", metadata_pb2.OpenSessionRequest(client_id=cid))


def unimplemented(err: errors.MetadError) -> bool:
    """Whether err says the cluster does not know the method (OpenSession of a cluster without
    sessions)."""
    return bool(err.code == grpc.StatusCode.UNIMPLEMENTED)


def session_wait_timeout() -> errors.MetadError:
    """The error of a write whose timeout ran out while every session's window was full: nothing
    was sent."""
    return errors.MetadError("every session's window stayed full until the call's timeout; nothing was sent",
                             code=grpc.StatusCode.DEADLINE_EXCEEDED)


def set_header(request: Any, h: Optional[types_pb2.SessionHeader]) -> None:
    """Put h in request's session field, or clear the field when h is None."""
    if h is None:
        request.ClearField("session")
    else:
        request.session.CopyFrom(h)
