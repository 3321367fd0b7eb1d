"""The configuration of a client (:class:`Config`), its TLS material (:class:`TLS`), the
METAD_* environment variables :meth:`Config.from_env` reads, and the endpoint rule
(:func:`check_endpoint`)."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Union

import grpc

ENV_ENDPOINTS = "METAD_ENDPOINTS"
"""Environment variable naming the default endpoints: host:port addresses separated by commas."""

DEFAULT_ENDPOINTS = ("127.0.0.1:6001", "127.0.0.1:6002", "127.0.0.1:6003")
"""The client ports of the local three-node cluster of ``make run``."""
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


_DNS_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")


def check_endpoint(e: object) -> None:
    """Raise ValueError unless e is host:port, the host a DNS name, an IPv4 address or an IPv6
    address in brackets ("[::1]:6001"), the port a decimal number in 1..65535: a URL
    ("https://h:1"), a missing or bad port, an empty host or one with spaces is refused here rather
    than failing at the first call. TypeError for anything but a str."""
    if not isinstance(e, str):
        raise TypeError(f"metad: endpoint {e!r}: want a str host:port, not {type(e).__name__}")

    def bad(why: str) -> ValueError:
        return ValueError(f"metad: endpoint {e!r}: want host:port ({why})")

    if "://" in e:
        raise bad("no scheme: the client speaks gRPC, over TLS when tls= is given")
    host, sep, port = e.rpartition(":")
    if not sep:
        raise bad("no port")
    if not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise bad(f"port {port!r} is not a number in 1..65535")
    if not host:
        raise bad("empty host")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise bad(f"{host} is not an IPv6 address") from None
        return
    if ":" in host:
        raise bad("an IPv6 address goes in brackets: [::1]:6001")
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise bad(f"{host!r} is not an IPv4 address") from None
        return
    name = host[:-1] if host.endswith(".") else host
    if len(name) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in name.split(".")):
        raise bad(f"{host!r} is not a host name")


def split_endpoints(s: str) -> List[str]:
    """Split a comma-separated endpoint list, trimming spaces and dropping empty entries."""
    return [e.strip() for e in s.split(",") if e.strip()]


def default_endpoints() -> List[str]:
    """The endpoints named by METAD_ENDPOINTS, or, when it is unset or empty, 127.0.0.1:6001,
    127.0.0.1:6002 and 127.0.0.1:6003."""
    return split_endpoints(os.environ.get(ENV_ENDPOINTS, "")) or list(DEFAULT_ENDPOINTS)


@dataclass
class Config:
    """Configuration of a client. Every field has the Go client's default; ``Config()`` reads no
    environment variable (:meth:`from_env` does).

    Attributes:
        endpoints: client (gRPC) addresses of the cluster's nodes, host:port. Calls go to the first
            until a node names another leader. Default: :data:`DEFAULT_ENDPOINTS` (the local
            cluster of ``make run``).
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
        tls: the TLS material (:class:`TLS`); None (the default): plaintext.
        api_key: sent on every call as ``authorization: Bearer <key>``; needs ``tls`` (a key is
            never sent in clear). Default: None.
    """

    endpoints: Sequence[str] = field(default_factory=lambda: list(DEFAULT_ENDPOINTS))
    retry_initial: float = 0.020
    retry_max: float = 0.500
    max_retries: int = 20
    attempt_timeout: Optional[float] = 1.0
    timeout: Optional[float] = None
    client_id: Optional[bytes] = None
    no_session: bool = False
    tls: Optional[TLS] = None
    api_key: Optional[str] = None

    @classmethod
    def from_env(cls, **fields: Any) -> "Config":
        """A Config whose endpoints, tls and api_key come from the environment, those of fields
        given excepted: endpoints from METAD_ENDPOINTS (:func:`default_endpoints`), tls from
        METAD_CACERT, METAD_CERT, METAD_KEY and METAD_CERTS_DIR (:func:`tls_from_env`), api_key
        from METAD_API_KEY (:func:`api_key_from_env`); every other field is the default or as
        given (``Config.from_env(timeout=5.0)``). Raises ValueError as tls_from_env does, and
        TypeError for a name that is not a field."""
        if "endpoints" not in fields:
            fields["endpoints"] = default_endpoints()
        if "tls" not in fields:
            fields["tls"] = tls_from_env()
        if "api_key" not in fields:
            fields["api_key"] = api_key_from_env()
        return cls(**fields)

    def validate(self) -> None:
        """Raise ValueError naming the first problem of the configuration (TypeError for an
        endpoint that is not a str)."""
        if isinstance(self.endpoints, str) or not self.endpoints:
            raise ValueError("metad: no endpoints" if not self.endpoints else
                             f"metad: endpoints {self.endpoints!r}: want a list of host:port, not one str")
        seen = set()
        for e in self.endpoints:
            check_endpoint(e)
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


def client_config(endpoints: Union[Sequence[str], Config, None], config: Optional[Config],
                  tls: Optional[TLS], api_key: Optional[str]) -> Config:
    """The validated configuration of a client made with these arguments: config (or Config()),
    with endpoints, tls and api_key replacing its fields when given. A Config given as endpoints
    (``Client(Config(...))``) is the configuration. Raises ValueError (TypeError for arguments of the
    wrong type) naming the first problem: a malformed endpoint is refused here, not at the first
    call."""
    if isinstance(endpoints, Config):
        if config is not None:
            raise TypeError("metad: two configurations given (a Config as endpoints and config=)")
        endpoints, config = None, endpoints
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"metad: config must be a metad.Config, not {type(config).__name__}")
    cfg = config or Config()
    if endpoints is not None:
        cfg = dataclasses.replace(cfg, endpoints=endpoints if isinstance(endpoints, str) else list(endpoints))
    if tls is not None:
        cfg = dataclasses.replace(cfg, tls=tls)
    if api_key is not None:
        cfg = dataclasses.replace(cfg, api_key=api_key)
    cfg.validate()
    return cfg
