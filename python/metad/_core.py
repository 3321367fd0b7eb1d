"""What the synchronous and the asyncio clients share: configuration, the endpoint list and its
leader choice, the retry rules, the session pool's state (:class:`SessionPool`), and every
operation written once as a generator of RPCs.

An operation (``_ops``-style function below) yields :class:`Rpc` objects and receives a
:class:`Reply` for each, or has the call's :class:`~metad.errors.MetadError` thrown into it; the
client that drives it makes the retried calls, with blocking or with awaiting gRPC.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generator, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union, cast

import grpc

from metad import errors
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

T = TypeVar("T")

ENV_ENDPOINTS = "METAD_ENDPOINTS"
"""Environment variable naming the default endpoints: host:port addresses separated by commas."""

DEFAULT_ENDPOINTS = ("127.0.0.1:6001", "127.0.0.1:6002", "127.0.0.1:6003")
"""The client ports of the local three-node cluster of ``make run``."""

MAX_BATCH_ITEMS = 4096
"""Most items one batch request carries; longer lists are split into consecutive requests."""

MAX_BATCH_BYTES = 3 << 20
"""Most bytes of keys (and groups) one batch request carries."""

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


ENV_CACERT = "METAD_CACERT"
"""Environment variable naming the PEM file of the CA certificates that verify the nodes (several
allowed: an overlap bundle while the CA rotates); setting it turns TLS on."""

ENV_CERT = "METAD_CERT"
"""Environment variable naming the PEM client certificate to present (with METAD_KEY)."""

ENV_KEY = "METAD_KEY"
"""Environment variable naming the PEM key of METAD_CERT."""

ENV_API_KEY = "METAD_API_KEY"
"""Environment variable holding the API key sent on every call (needs TLS)."""

ENV_CERTS_DIR = "METAD_CERTS_DIR"
"""Environment variable naming a certificates directory (``metactl cert`` writes one): without
METAD_CACERT, its ca.crt turns TLS on and, with no certificate, key or API key named, its
client.root.crt/.key are presented when present."""

ROOT_PRINCIPAL = "root"
"""The bootstrap admin principal, whose client certificate a certificates directory may hold."""


@dataclass(frozen=True)
class TLS:
    """TLS material of a client, by file (PEM).

    Attributes:
        ca_file: the CA certificates that verify the nodes; may hold several (an overlap bundle).
        cert_file: the client certificate to authenticate with; None: none (an API key may
            authenticate instead). Needs key_file.
        key_file: the key of cert_file.

    The files are read when a client is created; a renewed certificate is used by clients
    created after the renewal.
    """

    ca_file: str
    cert_file: Optional[str] = None
    key_file: Optional[str] = None

    def validate(self) -> None:
        """Raise ValueError naming the first problem: no CA file, or a certificate without its key
        (or the reverse)."""
        if not self.ca_file:
            raise ValueError("metad: tls.ca_file is required")
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("metad: tls.cert_file and tls.key_file go together "
                             f"(got cert_file={self.cert_file!r}, key_file={self.key_file!r})")

    def channel_credentials(self) -> Any:
        """grpc.ssl_channel_credentials of the files, read now. Raises ValueError for a file that
        cannot be read or holds no PEM block."""
        def read(what: str, path: str) -> bytes:
            try:
                with open(path, "rb") as f:
                    b = f.read()
            except OSError as e:
                raise ValueError(f"metad: tls.{what}: {e}") from None
            if b"-----BEGIN " not in b:
                raise ValueError(f"metad: tls.{what}: {path}: no PEM block")
            return b

        ca = read("ca_file", self.ca_file)
        cert = read("cert_file", self.cert_file) if self.cert_file else None
        key = read("key_file", self.key_file) if self.key_file else None
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def tls_from_env() -> Optional[TLS]:
    """The TLS named by METAD_CACERT, METAD_CERT and METAD_KEY, else by the certificates directory
    METAD_CERTS_DIR (its ca.crt and, when none of METAD_CERT, METAD_KEY and METAD_API_KEY is set,
    its client.root.crt/.key if present); None (plaintext) when no CA file is named or found.
    Raises ValueError for a certificate named without a CA file."""
    ca = os.environ.get(ENV_CACERT, "")
    cert = os.environ.get(ENV_CERT, "")
    key = os.environ.get(ENV_KEY, "")
    d = os.environ.get(ENV_CERTS_DIR, "")
    if not ca and d and os.path.exists(os.path.join(d, "ca.crt")):
        ca = os.path.join(d, "ca.crt")
        rc, rk = (os.path.join(d, f"client.{ROOT_PRINCIPAL}.{ext}") for ext in ("crt", "key"))
        if not cert and not key and not os.environ.get(ENV_API_KEY) and os.path.exists(rc) and os.path.exists(rk):
            cert, key = rc, rk
    if not ca:
        if cert or key:
            raise ValueError(f"metad: {ENV_CERT}/{ENV_KEY} need a CA file to verify the nodes ({ENV_CACERT})")
        return None
    return TLS(ca, cert or None, key or None)


def api_key_from_env() -> Optional[str]:
    """The API key in METAD_API_KEY, or None."""
    return os.environ.get(ENV_API_KEY) or None


def channel_credentials(cfg: "Config") -> Any:
    """The channel credentials of cfg: None for plaintext; the TLS credentials, composed with the
    API key as ``authorization: Bearer <key>`` call credentials when there is one."""
    if cfg.tls is None:
        return None
    creds = cfg.tls.channel_credentials()
    if cfg.api_key:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(cfg.api_key))
    return creds


def split_endpoints(s: str) -> List[str]:
    """Split a comma-separated endpoint list, trimming spaces and dropping empty entries."""
    return [e.strip() for e in s.split(",") if e.strip()]


def default_endpoints() -> List[str]:
    """The endpoints named by METAD_ENDPOINTS, or, when it is unset or empty, 127.0.0.1:6001,
    127.0.0.1:6002 and 127.0.0.1:6003."""
    return split_endpoints(os.environ.get(ENV_ENDPOINTS, "")) or list(DEFAULT_ENDPOINTS)


@dataclass
class Config:
    """Configuration of a client. Every field has the Go client's default.

    Attributes:
        endpoints: client (gRPC) addresses of the cluster's nodes, host:port. Calls go to the first
            until a node names another leader. Default: :func:`default_endpoints`.
        retry_initial: delay before the first retry after UNAVAILABLE, seconds (20 ms). The n-th
            retry waits about ``retry_initial * 2**n``, at most ``retry_max``, drawn uniformly from
            [d/2, d].
        retry_max: cap of the retry delay, seconds (500 ms).
        max_retries: retries of one call after its first attempt (20); negative disables retries.
        attempt_timeout: tells a silent node from a slow one, seconds (1 s). An attempt that has run
            for half of it makes the client ask the node for its gRPC health on the same channel: a
            node that answers is alive and the attempt goes on (asked again every half attempt
            timeout), so a slow leader's write is never retried elsewhere; a node that does not
            answer within the other half is silent: the attempt is abandoned, the call moves to the
            next endpoint at once, and failover passes the silent node by for five attempt
            timeouts. None turns the watch off.
        timeout: default limit of one call, retries included, seconds; None means none (retries
            are still bounded by max_retries). Each call's ``timeout`` argument overrides it.
        client_id: the 16-byte id this client writes and mounts as; None means a random UUID.
        no_session: write without a client session: each write at most once, its outcome unknown
            when its answer is lost. By default (False) the client opens a session with its first
            write and every write is exactly once (see :class:`SessionPool`).
        tls: the TLS material (:class:`TLS`); None: plaintext. Default: :func:`tls_from_env`.
        api_key: sent on every call as ``authorization: Bearer <key>``; needs ``tls`` (a key is
            never sent in clear). Default: METAD_API_KEY.
    """

    endpoints: Sequence[str] = field(default_factory=default_endpoints)
    retry_initial: float = 0.020
    retry_max: float = 0.500
    max_retries: int = 20
    attempt_timeout: Optional[float] = 1.0
    timeout: Optional[float] = None
    client_id: Optional[bytes] = None
    no_session: bool = False
    tls: Optional[TLS] = field(default_factory=tls_from_env)
    api_key: Optional[str] = field(default_factory=api_key_from_env)

    def validate(self) -> None:
        """Raise ValueError naming the first problem of the configuration."""
        if not self.endpoints:
            raise ValueError("metad: no endpoints")
        seen = set()
        for e in self.endpoints:
            host, sep, port = e.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"metad: endpoint {e!r}: want host:port")
            if e in seen:
                raise ValueError(f"metad: endpoint {e!r} listed twice")
            seen.add(e)
        if self.retry_initial <= 0:
            raise ValueError(f"metad: retry_initial must be positive, got {self.retry_initial}")
        if self.retry_max < self.retry_initial:
            raise ValueError(f"metad: retry_max ({self.retry_max}) is less than retry_initial ({self.retry_initial})")
        if self.attempt_timeout is not None and self.attempt_timeout <= 0:
            raise ValueError(f"metad: attempt_timeout must be positive or None, got {self.attempt_timeout}")
        if self.client_id is not None and len(self.client_id) != 16:
            raise ValueError(f"metad: client_id must be 16 bytes, got {len(self.client_id)}")
        if self.tls is not None:
            self.tls.validate()
        if self.api_key:
            if self.tls is None:
                raise ValueError(f"metad: an API key needs TLS (set tls=TLS(ca_file=...) or {ENV_CACERT})")
            if any(c <= " " or c > "~" for c in self.api_key):
                raise ValueError("metad: api_key: printable ASCII without spaces")


@dataclass
class PutOptions:
    """The optional parts of a put or upsert; the defaults ask for one memory replica, no NOF
    replica, no pins, data type 0, the object its own group.

    Attributes:
        group: the explicit group the object joins; "" = its own group (batch puts ignore it: each
            item names its own group).
        memory_replicas: memory replicas wanted, 1..8; 0 = the default (1).
        nof_replicas: NOF replicas wanted, 0..8.
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
        memory_replicas=o.memory_replicas, nof_replicas=o.nof_replicas,
        preferred_segment_ids=list(o.preferred_segments), soft_pin=o.soft_pin,  # type: ignore[arg-type]
        soft_pin_ttl_ms=int(o.soft_pin_ttl * 1000), hard_pin=o.hard_pin, data_type=o.data_type,
        preferred_host=o.host)
    if cfg == types_pb2.ReplicaConfig():
        return None
    return cfg


def _group(o: Optional[PutOptions]) -> bytes:
    return o.group.encode() if o is not None and o.group else b""


Key = Union[str, bytes]
"""An object key or group id: bytes, or a str sent as its UTF-8 bytes."""


def _b(k: Key) -> bytes:
    return k.encode() if isinstance(k, str) else bytes(k)


@dataclass(frozen=True)
class BatchPutItem:
    """One object of a batch put: key, size in bytes, and the explicit group ("" = its own)."""

    key: Key
    size: int
    group: Key = ""


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


def _identity(b: bytes) -> bytes:
    return b


_SERVICES = {"md": ("metad.v1.Metadata", metadata_pb2), "admin": ("metad.v1.Admin", admin_pb2)}


def _multi_callable(channel: Any, service: str, name: str) -> Any:
    full, module = _SERVICES[service]
    sd = module.DESCRIPTOR.services_by_name[full.split(".")[-1]]
    m = sd.methods_by_name[name]
    from google.protobuf import symbol_database
    db = symbol_database.Default()
    req_cls = db.GetSymbol(m.input_type.full_name)
    resp_cls = db.GetSymbol(m.output_type.full_name)
    return channel.unary_unary(f"/{full}/{name}", request_serializer=req_cls.SerializeToString,
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

    def set_leader(self, addr: str) -> None:
        """Make addr (added if new) the endpoint calls go to, clearing any suspicion of it: its
        callers learned it from a successful answer."""
        if not addr:
            return
        with self._mu:
            try:
                ep = self._endpoint_locked(addr)
            except errors.ClientClosed:
                return
            ep.suspect_until = 0.0
            self.cur = ep

    def redirect(self, addr: str) -> bool:
        """Make addr (added if new) the endpoint calls go to after a NOT_LEADER answer named it,
        unless it is suspect (a node that has not heard of an election names the leader it last
        knew). Reports whether calls now go to addr."""
        with self._mu:
            ep = self.by_addr.get(addr)
            if ep is not None and ep.suspect(time.monotonic()):
                return False
            try:
                ep = self._endpoint_locked(addr)
            except errors.ClientClosed:
                return False
            self.cur = ep
            return True

    def advance(self, failed: Endpoint) -> None:
        """Move calls from failed to the next endpoint that is not suspect, unless another call
        already moved them. When every other endpoint is suspect, go back to failed if it is not,
        else to the endpoint whose suspicion ends first."""
        with self._mu:
            if self.cur is not failed:
                return
            now = time.monotonic()
            first: Optional[Endpoint] = None
            n = len(self.eps)
            for i in range(1, n + 1):
                ep = self.eps[(failed.idx + i) % n]
                if not ep.suspect(now):
                    self.cur = ep
                    return
                if first is None or ep.suspect_until < first.suspect_until:
                    first = ep
            assert first is not None
            self.cur = first

    def follow_hint(self, ep: Endpoint, initial_metadata: Optional[Iterable[Tuple[str, Any]]]) -> None:
        """Switch to the leader a forwarding follower named in its answer's x-metad-leader header,
        so the next call skips the hop."""
        for k, v in initial_metadata or ():
            if k == LEADER_HEADER:
                if v and v != ep.addr and self.cur is ep:
                    self.set_leader(str(v))
                return


# What the retry loop does after a failed attempt.
STOP, REDIRECT, FAILOVER = 0, 1, 2


def classify(err: errors.MetadError, addr: str) -> Tuple[int, str]:
    """Decide what to do after err from an attempt at addr: STOP for a deterministic rejection
    or a local error, REDIRECT (with the address) for NOT_LEADER naming another node, FAILOVER
    for UNAVAILABLE, a connection error, or NOT_LEADER naming no other node."""
    if isinstance(err, errors.NotLeader):
        if err.leader_address and err.leader_address != addr:
            return REDIRECT, err.leader_address
        return FAILOVER, ""
    if isinstance(err, errors.Unavailable) and err.code is not None:
        return FAILOVER, ""
    return STOP, ""


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
            if q.room():
                seq = q.next
                q.next += 1
                q.inflight.add(seq)
                return types_pb2.SessionHeader(session_id=q.id, seq=seq, first_unacked_seq=q.floor())
        return None

    def full(self) -> bool:
        """Whether no more sessions may be opened: a write must wait for a number."""
        return len(self.open) >= MAX_SESSIONS

    def opened(self, resp: metadata_pb2.OpenSessionResponse) -> None:
        """Add the session OpenSession answered."""
        self.open.append(_Seqs(resp.session_id, max(resp.window, 1)))

    def release(self, h: types_pb2.SessionHeader) -> None:
        """Release h's number (its call returned)."""
        for q in self.open:
            if q.id == h.session_id:
                q.inflight.discard(h.seq)
                return

    def expired(self, h: types_pb2.SessionHeader) -> None:
        """Forget the session h named, so that a later write opens another."""
        self.open = [q for q in self.open if q.id != h.session_id]

    def using(self) -> bool:
        """Whether writes carry a header (sessions open, or to be opened)."""
        return not self.off


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


# ---------------------------------------------------------------------------------------------
# Operations. Each is a generator that yields Rpc and returns the call's result.


Sessions = Callable[[], bool]
"""Reports whether the client writes within sessions (:meth:`SessionPool.using`, False with
``Config.no_session``)."""


def put_start(cid: bytes, tenant: str, key: Key, size: int, opts: Optional[PutOptions],
              sessions: Sessions) -> Op[List[types_pb2.Replica]]:
    req = metadata_pb2.PutStartRequest(tenant=tenant, client_id=cid, key=_b(key), group=_group(opts), size=size,
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
            yield Rpc("md", "PutRevoke", metadata_pb2.PutRevokeRequest(tenant=tenant, client_id=cid, key=_b(key)))
        except errors.MetadError:
            raise e from None
        r = yield Rpc("md", "PutStart", req)
    return list(r.response.replicas)


def put_end(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "PutEnd", metadata_pb2.PutEndRequest(tenant=tenant, client_id=cid, key=_b(key), tier=tier))  # type: ignore[arg-type]


def put_revoke(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "PutRevoke", metadata_pb2.PutRevokeRequest(tenant=tenant, client_id=cid, key=_b(key), tier=tier))  # type: ignore[arg-type]


# How many times put places an object whose reservation a leader change lost (RESERVATION_LOST).
PUT_PLACEMENTS = 3


def put(cid: bytes, tenant: str, key: Key, size: int, opts: Optional[PutOptions],
        sessions: Sessions) -> Op[List[types_pb2.Replica]]:
    for n in range(1, PUT_PLACEMENTS + 1):
        reps = yield from put_start(cid, tenant, key, size, opts, sessions)
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
    return reps


def upsert_start(cid: bytes, tenant: str, key: Key, size: int,
                 opts: Optional[PutOptions]) -> Op[Tuple[List[types_pb2.Replica], bool]]:
    r = yield Rpc("md", "UpsertStart", metadata_pb2.UpsertStartRequest(
        tenant=tenant, client_id=cid, key=_b(key), group=_group(opts), size=size, config=_config(opts)))
    return list(r.response.replicas), bool(r.response.reused)


def upsert_end(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "UpsertEnd", metadata_pb2.UpsertEndRequest(tenant=tenant, client_id=cid, key=_b(key), tier=tier))  # type: ignore[arg-type]


def upsert_revoke(cid: bytes, tenant: str, key: Key, tier: int) -> Op[None]:
    yield Rpc("md", "UpsertRevoke", metadata_pb2.UpsertRevokeRequest(tenant=tenant, client_id=cid, key=_b(key), tier=tier))  # type: ignore[arg-type]


def get(tenant: str, key: Key, stale: bool) -> Op[metadata_pb2.GetResponse]:
    r = yield Rpc("md", "Get", metadata_pb2.GetRequest(tenant=tenant, key=_b(key), stale=stale))
    resp: metadata_pb2.GetResponse = r.response
    return resp


def exist(tenant: str, key: Key, stale: bool) -> Op[bool]:
    r = yield Rpc("md", "Exist", metadata_pb2.ExistRequest(tenant=tenant, key=_b(key), stale=stale))
    return bool(r.response.exists)


def remove(tenant: str, key: Key, force: bool) -> Op[None]:
    yield Rpc("md", "Remove", metadata_pb2.RemoveRequest(tenant=tenant, key=_b(key), force=force))


def remove_all(tenant: str, force: bool) -> Op[metadata_pb2.RemoveAllResponse]:
    r = yield Rpc("md", "RemoveAll", metadata_pb2.RemoveAllRequest(tenant=tenant, force=force))
    resp: metadata_pb2.RemoveAllResponse = r.response
    return resp


def remove_group(tenant: str, group: Key, force: bool) -> Op[int]:
    r = yield Rpc("md", "RemoveGroup", metadata_pb2.RemoveGroupRequest(tenant=tenant, group=_b(group), force=force))
    return int(r.response.removed)


def list_group_page(tenant: str, group: Key, start_after: Key, limit: int,
                    stale: bool) -> Op[Tuple[List[bytes], bool]]:
    r = yield Rpc("md", "ListGroup", metadata_pb2.ListGroupRequest(
        tenant=tenant, group=_b(group), stale=stale, start_after=_b(start_after), limit=limit))
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
        tenant=tenant, prefix=_b(prefix), page_token=page_token, limit=limit, stale=stale))
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


def get_by_regex(tenant: str, pattern: str, stale: bool) -> Op[List[metadata_pb2.GetByRegexResponse.Item]]:
    out: List[metadata_pb2.GetByRegexResponse.Item] = []
    token = b""
    while True:
        try:
            resp = yield from get_by_regex_page(tenant, pattern, token, 0, stale)
        except errors.MetadError as e:
            e.partial = out
            raise
        out.extend(resp.items)
        token = bytes(resp.next_page_token)
        if not token:
            return out


def mount_segment(cid: bytes, seg: types_pb2.SegmentDesc) -> Op[None]:
    yield Rpc("md", "MountSegment", metadata_pb2.MountSegmentRequest(client_id=cid, segment=seg))


def unmount_segment(owner: bytes, seg_id: bytes, grace_ms: int = 0) -> Op[metadata_pb2.UnmountSegmentResponse]:
    if grace_ms < 0:
        raise ValueError("grace must not be negative")
    r = yield Rpc("md", "UnmountSegment", metadata_pb2.UnmountSegmentRequest(client_id=owner, segment_id=seg_id,
                                                                              grace_ms=grace_ms))
    resp: metadata_pb2.UnmountSegmentResponse = r.response
    return resp


def ping(cid: bytes, cluster: Cluster) -> Op[metadata_pb2.PingResponse]:
    r = yield Rpc("md", "Ping", metadata_pb2.PingRequest(client_id=cid))
    resp: metadata_pb2.PingResponse = r.response
    if resp.leader_address:
        cluster.set_leader(resp.leader_address)
    return resp


# Batches.

def _spans(n: int, nbytes: Callable[[int], int]) -> List[Tuple[int, int]]:
    """[start, end) bounds of consecutive batches over n items, each at most MAX_BATCH_ITEMS
    items and MAX_BATCH_BYTES bytes (an item larger than that alone makes a batch)."""
    out: List[Tuple[int, int]] = []
    start = total = 0
    for i in range(n):
        b = nbytes(i)
        if i > start and (i - start == MAX_BATCH_ITEMS or total + b > MAX_BATCH_BYTES):
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
                    sessions: Sessions) -> Op[List[metadata_pb2.BatchPutStartResponse.Result]]:
    keys = [_b(it.key) for it in items]
    groups = [_b(it.group) for it in items]
    _check_repeats("items", keys)
    cfg = _config(opts)
    out: List[metadata_pb2.BatchPutStartResponse.Result] = []
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
        out.extend(results)
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


def _batch_status(keys: Sequence[Key], make: Callable[[List[bytes]], Rpc]) -> Op[List[types_pb2.Status]]:
    bkeys = [_b(k) for k in keys]
    _check_repeats("keys", bkeys)
    out: List[types_pb2.Status] = []
    for s, e in _spans(len(bkeys), lambda i: len(bkeys[i]) + 8):
        try:
            r = yield make(bkeys[s:e])
            _check_count(len(r.response.results), e - s)
        except errors.MetadError as err:
            err.partial = out
            raise
        out.extend(r.response.results)
    return out


def batch_put_end(cid: bytes, tenant: str, keys: Sequence[Key], tier: int) -> Op[List[types_pb2.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchPutEnd", metadata_pb2.BatchPutEndRequest(
        tenant=tenant, client_id=cid, keys=ks, tier=tier))))  # type: ignore[arg-type]


def batch_put_revoke(cid: bytes, tenant: str, keys: Sequence[Key], tier: int) -> Op[List[types_pb2.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchPutRevoke", metadata_pb2.BatchPutRevokeRequest(
        tenant=tenant, client_id=cid, keys=ks, tier=tier))))  # type: ignore[arg-type]


def batch_remove(tenant: str, keys: Sequence[Key], force: bool) -> Op[List[types_pb2.Status]]:
    return (yield from _batch_status(keys, lambda ks: Rpc("md", "BatchRemove", metadata_pb2.BatchRemoveRequest(
        tenant=tenant, keys=ks, force=force))))


def batch_put(cid: bytes, tenant: str, items: Sequence[BatchPutItem], opts: Optional[PutOptions],
              sessions: Sessions) -> Op[List[types_pb2.Status]]:
    start_err: Optional[errors.MetadError] = None
    try:
        started = yield from batch_put_start(cid, tenant, items, opts, sessions)
    except errors.MetadError as e:
        start_err = e
        started = cast(List[metadata_pb2.BatchPutStartResponse.Result], e.partial or [])
    out: List[Optional[types_pb2.Status]] = [None] * len(started)
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
        for j, s in enumerate(cast(List[types_pb2.Status], e.partial or [])):
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


def _empty() -> Op[List[types_pb2.Status]]:
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


def batch_get(tenant: str, keys: Sequence[Key], stale: bool) -> Op[metadata_pb2.BatchGetResponse]:
    uniq, index = _distinct([_b(k) for k in keys])
    out = metadata_pb2.BatchGetResponse()
    err: Optional[errors.MetadError] = None
    n = 0
    for s, e in _spans(len(uniq), lambda i: len(uniq[i]) + 8):
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
            for i, res in enumerate(got):
                if i > 0 and res.status.reason == types_pb2.REASON_RESPONSE_LIMIT_REACHED:
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
        err.partial = out
        raise err
    return out


def batch_exist(tenant: str, keys: Sequence[Key], stale: bool) -> Op[metadata_pb2.BatchExistResponse]:
    uniq, index = _distinct([_b(k) for k in keys])
    out = metadata_pb2.BatchExistResponse()
    err: Optional[errors.MetadError] = None
    for n, (s, e) in enumerate(_spans(len(uniq), lambda i: len(uniq[i]) + 8)):
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
        err.partial = out
        raise err
    return out


# Admin.

def register_tenant(name: str, quota_bytes: int) -> Op[int]:
    r = yield Rpc("admin", "RegisterTenant", admin_pb2.RegisterTenantRequest(name=name, quota_bytes=quota_bytes))
    return int(r.response.instance_id)


def unregister_tenant(name: str, force: bool) -> Op[admin_pb2.UnregisterTenantResponse]:
    r = yield Rpc("admin", "UnregisterTenant", admin_pb2.UnregisterTenantRequest(name=name, force=force))
    resp: admin_pb2.UnregisterTenantResponse = r.response
    return resp


def list_tenants(stale: bool) -> Op[List[admin_pb2.TenantInfo]]:
    r = yield Rpc("admin", "ListTenants", admin_pb2.ListTenantsRequest(stale=stale))
    return list(r.response.tenants)


def set_quota(tenant: str, quota_bytes: int) -> Op[admin_pb2.SetQuotaResponse]:
    r = yield Rpc("admin", "SetQuota", admin_pb2.SetQuotaRequest(tenant=tenant, quota_bytes=quota_bytes))
    resp: admin_pb2.SetQuotaResponse = r.response
    return resp


def get_quota(tenant: str, stale: bool) -> Op[admin_pb2.GetQuotaResponse]:
    r = yield Rpc("admin", "GetQuota", admin_pb2.GetQuotaRequest(tenant=tenant, stale=stale))
    resp: admin_pb2.GetQuotaResponse = r.response
    return resp


def list_segments(tier: int, owner: Optional[bytes], stale: bool) -> Op[List[admin_pb2.SegmentInfo]]:
    r = yield Rpc("admin", "ListSegments", admin_pb2.ListSegmentsRequest(
        stale=stale, tier=tier, client_id=owner or b""))  # type: ignore[arg-type]
    return list(r.response.segments)


def list_members() -> Op[admin_pb2.ListMembersResponse]:
    r = yield Rpc("admin", "ListMembers", admin_pb2.ListMembersRequest())
    resp: admin_pb2.ListMembersResponse = r.response
    return resp


def transfer_leader(target: str, cluster: Cluster) -> Op[admin_pb2.TransferLeaderResponse]:
    r = yield Rpc("admin", "TransferLeader", admin_pb2.TransferLeaderRequest(target=target))
    resp: admin_pb2.TransferLeaderResponse = r.response
    if resp.leader_address:
        cluster.set_leader(resp.leader_address)
    return resp


def status(endpoint: str) -> Op[admin_pb2.StatusResponse]:
    r = yield Rpc("admin", "Status", admin_pb2.StatusRequest(), endpoint=endpoint)
    resp: admin_pb2.StatusResponse = r.response
    return resp


def missing_segments(segs: Iterable[types_pb2.SegmentDesc], mounted: Iterable[bytes]) -> List[types_pb2.SegmentDesc]:
    """The segments of segs whose ids are not in mounted."""
    have = set(mounted)
    return [s for s in segs if s.id not in have]


def segment(size: int, endpoint: str, *, name: str = "segment", base: int = 0, tier: int = types_pb2.TIER_MEMORY,
            segment_id: Optional[bytes] = None) -> types_pb2.SegmentDesc:
    """A SegmentDesc to mount: a random id unless given; base 0 means 1 GiB (fine for a simulated
    worker; a real one passes the segment's address in its own address space)."""
    return types_pb2.SegmentDesc(id=segment_id or new_client_id(), name=name, base=base or 1 << 30, size=size,
                                 endpoint=endpoint, tier=tier)  # type: ignore[arg-type]
