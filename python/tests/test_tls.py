"""TLS and API keys: the sync and asyncio clients against an in-process gRPC server serving TLS
with a member certificate made by ``metactl cert`` (bin/metactl), which records what each call
carried: its authorization metadata and the client certificate's common name."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from concurrent import futures
from typing import Any, Iterator, List, Optional, Tuple

import grpc
import pytest

import metad
from cluster import REPO
from metad.metadv1 import metadata_pb2

METACTL = os.environ.get("METACTL_BIN", os.path.join(REPO, "bin", "metactl"))
KEY = "mtd_0123456789abcdef_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3Jl"


def cert(certs: str, *args: str) -> None:
    subprocess.run([METACTL, "cert", *args, "--certs-dir", certs], check=True, capture_output=True, timeout=30)


class Recorder:
    """What the server saw of its last Ping: (authorization, client certificate common name)."""

    def __init__(self) -> None:
        self.mu = threading.Lock()
        self.seen: Optional[Tuple[str, str]] = None

    def ping(self, req: metadata_pb2.PingRequest, ctx: Any) -> metadata_pb2.PingResponse:
        md = dict(ctx.invocation_metadata())
        auth = ctx.auth_context()
        cn = b"".join(auth.get("x509_common_name", [])).decode()
        with self.mu:
            self.seen = (str(md.get("authorization", "")), cn)
        return metadata_pb2.PingResponse(client_ttl_ms=10000)

    def last(self) -> Optional[Tuple[str, str]]:
        with self.mu:
            return self.seen


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = str(tmp_path_factory.mktemp("certs"))
    cert(d, "create-ca")
    cert(d, "create-member", "--name", "n1", "--hosts", "127.0.0.1")
    cert(d, "create-client", "--name", "alice")
    other = os.path.join(d, "other")
    cert(other, "create-ca")
    return d


def serve(pki: str, require_client_auth: bool) -> Iterator[Tuple[str, Recorder]]:
    """Serve Ping over TLS with n1's certificate; gRPC Python's server asks for (and verifies) a
    client certificate only when it requires one."""
    def read(name: str) -> bytes:
        with open(os.path.join(pki, name), "rb") as f:
            return f.read()

    rec = Recorder()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler("metad.v1.Metadata", {
        "Ping": grpc.unary_unary_rpc_method_handler(
            rec.ping, request_deserializer=metadata_pb2.PingRequest.FromString,
            response_serializer=metadata_pb2.PingResponse.SerializeToString)})
    srv.add_generic_rpc_handlers((handler,))
    creds = grpc.ssl_server_credentials([(read("member.n1.key"), read("member.n1.crt"))],
                                        root_certificates=read("ca.crt"),
                                        require_client_auth=require_client_auth)
    port = srv.add_secure_port("127.0.0.1:0", creds)
    srv.start()
    try:
        yield f"127.0.0.1:{port}", rec
    finally:
        srv.stop(None)


@pytest.fixture(scope="module")
def server(pki: str) -> Iterator[Tuple[str, Recorder]]:
    """A server that takes no client certificate (clients authenticate by key)."""
    yield from serve(pki, False)


@pytest.fixture(scope="module")
def mtls_server(pki: str) -> Iterator[Tuple[str, Recorder]]:
    """A server that requires a client certificate of the cluster CA."""
    yield from serve(pki, True)


def cfg() -> metad.Config:
    return metad.Config(timeout=5.0, max_retries=-1, attempt_timeout=None)


def test_sync_client_certificate_and_key(pki: str, server: Tuple[str, Recorder],
                                         mtls_server: Tuple[str, Recorder]) -> None:
    addr, rec = mtls_server
    ca = os.path.join(pki, "ca.crt")
    tls = metad.TLS(ca_file=ca, cert_file=os.path.join(pki, "client.alice.crt"),
                    key_file=os.path.join(pki, "client.alice.key"))
    with metad.Client([addr], cfg(), tls=tls) as c:
        assert c.ping().client_ttl_ms == 10000
    assert rec.last() == ("", "alice")
    addr, rec = server
    with metad.Client([addr], cfg(), tls=metad.TLS(ca_file=ca), api_key=KEY) as c:
        c.ping()
    assert rec.last() == ("Bearer " + KEY, "")


def test_async_client_certificate_and_key(pki: str, mtls_server: Tuple[str, Recorder]) -> None:
    addr, rec = mtls_server
    ca = os.path.join(pki, "ca.crt")
    seen: List[Optional[Tuple[str, str]]] = []

    async def main() -> None:
        tls = metad.TLS(ca_file=ca, cert_file=os.path.join(pki, "client.alice.crt"),
                        key_file=os.path.join(pki, "client.alice.key"))
        async with metad.AsyncClient([addr], cfg(), tls=tls, api_key=KEY) as a:
            await a.ping()
            seen.append(rec.last())

    asyncio.run(main())
    assert seen == [("Bearer " + KEY, "alice")]


def test_wrong_ca_and_plaintext_are_refused(pki: str, server: Tuple[str, Recorder],
                                            mtls_server: Tuple[str, Recorder]) -> None:
    addr, _ = server
    with metad.Client([addr], cfg(), tls=metad.TLS(ca_file=os.path.join(pki, "other", "ca.crt"))) as c:
        with pytest.raises(metad.Unavailable):
            c.ping()
    with metad.Client([addr], cfg()) as c:
        with pytest.raises(metad.Unavailable):
            c.ping()
    # A node that requires a client certificate refuses a client without one.
    with metad.Client([mtls_server[0]], cfg(), tls=metad.TLS(ca_file=os.path.join(pki, "ca.crt")), api_key=KEY) as c:
        with pytest.raises(metad.Unavailable):
            c.ping()


def test_configuration_errors(pki: str) -> None:
    ca = os.path.join(pki, "ca.crt")
    with pytest.raises(ValueError, match="needs TLS"):
        metad.Client(["127.0.0.1:1"], cfg(), api_key=KEY)
    with pytest.raises(ValueError, match="go together"):
        metad.Client(["127.0.0.1:1"], cfg(), tls=metad.TLS(ca_file=ca, cert_file=ca))
    with pytest.raises(ValueError, match="ca_file"):
        metad.Client(["127.0.0.1:1"], cfg(), tls=metad.TLS(ca_file=os.path.join(pki, "missing.crt")))
    with pytest.raises(ValueError, match="api_key"):
        metad.Client(["127.0.0.1:1"], cfg(), tls=metad.TLS(ca_file=ca), api_key="a b")


def test_environment(pki: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for v in (metad.ENV_CACERT, metad.ENV_CERT, metad.ENV_KEY, metad.ENV_API_KEY, metad.ENV_CERTS_DIR):
        monkeypatch.delenv(v, raising=False)
    assert metad.Config.from_env().tls is None and metad.Config.from_env().api_key is None
    monkeypatch.setenv(metad.ENV_CERTS_DIR, pki)
    assert metad.Config.from_env().tls == metad.TLS(ca_file=os.path.join(pki, "ca.crt"))  # no client.root.crt there
    cert(pki, "create-client", "--name", "root")
    assert metad.Config.from_env().tls == metad.TLS(os.path.join(pki, "ca.crt"), os.path.join(pki, "client.root.crt"),
                                                    os.path.join(pki, "client.root.key"))
    monkeypatch.setenv(metad.ENV_API_KEY, KEY)
    c = metad.Config.from_env()
    assert c.tls == metad.TLS(ca_file=os.path.join(pki, "ca.crt")) and c.api_key == KEY
    assert metad.Config().tls is None and metad.Config().api_key is None  # Config() reads no variable
    monkeypatch.delenv(metad.ENV_CERTS_DIR)
    monkeypatch.setenv(metad.ENV_CERT, os.path.join(pki, "client.alice.crt"))
    with pytest.raises(ValueError, match="need a CA file"):
        metad.Config.from_env()
    metad.Config()  # nor fails on one
    assert metad.Config.from_env(tls=None).tls is None  # a tls given is not read from the environment
