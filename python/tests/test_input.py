"""What the clients check before any call, on the scripted fake: the types of keys, the key rule,
the endpoints, and the ways to pass a configuration."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, List, Type

import pytest

import metad
from fake import ENDPOINTS, FakeServer, Script, fake_aio_client, fake_client

# Every call that takes object keys, in both clients: (name, how to call it with key k).
KEY_CALLS: Dict[str, Callable[[Any, Any], Any]] = {
    "put_start": lambda c, k: c.put_start(k, 64),
    "put_end": lambda c, k: c.put_end(k),
    "put_revoke": lambda c, k: c.put_revoke(k),
    "put": lambda c, k: c.put(k, 64),
    "upsert_start": lambda c, k: c.upsert_start(k, 64),
    "upsert_end": lambda c, k: c.upsert_end(k),
    "upsert_revoke": lambda c, k: c.upsert_revoke(k),
    "get": lambda c, k: c.get(k),
    "exists": lambda c, k: c.exists(k),
    "remove": lambda c, k: c.remove(k),
    "batch_put_start": lambda c, k: c.batch_put_start([metad.BatchPutItem("fine", 64), metad.BatchPutItem(k, 64)]),
    "batch_put_end": lambda c, k: c.batch_put_end(["fine", k]),
    "batch_put_revoke": lambda c, k: c.batch_put_revoke(["fine", k]),
    "batch_put": lambda c, k: c.batch_put([metad.BatchPutItem("fine", 64), metad.BatchPutItem(k, 64)]),
    "batch_get": lambda c, k: c.batch_get(["fine", k]),
    "batch_exists": lambda c, k: c.batch_exists(["fine", k]),
    "batch_remove": lambda c, k: c.batch_remove(["fine", k]),
}

# Calls that take a group id or a key prefix, which have the keys' types.
OTHER_CALLS: Dict[str, Callable[[Any, Any], Any]] = {
    "list_group": lambda c, g: c.list_group(g),
    "list_group_page": lambda c, g: c.list_group_page("g", start_after=g),
    "remove_group": lambda c, g: c.remove_group(g),
    "list_keys": lambda c, p: c.list_keys(prefix=p),
    "list_keys_page": lambda c, p: c.list_keys_page(prefix=p),
    "put_start group": lambda c, g: c.put_start("k", 64, options=metad.PutOptions(group=g)),
    "batch_put_start group": lambda c, g: c.batch_put_start([metad.BatchPutItem("k", 64, group=g)]),
}

# Not keys: an int block hash (bytes(10**8) would be 100 MB of NULs), a list of ints (bytes([104,
# 105]) is b"hi"), and other values bytes() takes or refuses.
NOT_KEYS: List[Any] = [5, 10**8, [104, 105], (104, 105), True, None, 1.5, bytearray, {b"k": 1}]

# Keys that break the rule (1..4096 bytes, no NUL), in each of the types keys take.
BAD_KEYS: List[Any] = [b"", "", b"a\x00b", "a\x00", bytearray(b"\x00"), memoryview(b"x" * 4097), "x" * 4097,
                       "\u00e9" * 2049]


def drive(aio: bool, monkeypatch: pytest.MonkeyPatch, call: Callable[[Any], Any]) -> FakeServer:
    """Run call(client) on a fresh fake client (sync, or asyncio when aio), raising what it raises;
    returns the fake server so that the test can see what was sent."""
    if not aio:
        c, srv = fake_client(monkeypatch, Script())
        setattr(c, "_fake_server", srv)
        with c:
            call(c)
        return srv
    a, srv = fake_aio_client(monkeypatch, Script())
    setattr(a, "_fake_server", srv)

    async def main() -> None:
        async with a:
            await call(a)
    asyncio.run(main())
    return srv


def raises_before_any_call(aio: bool, monkeypatch: pytest.MonkeyPatch, call: Callable[[Any], Any],
                           exc: Type[BaseException]) -> BaseException:
    """The exc that call(client) raises on a fresh fake client, checked to have sent nothing (not
    even OpenSession)."""
    box: List[FakeServer] = []

    def recorded(c: Any) -> Any:
        box.append(c._fake_server)
        return call(c)
    with pytest.raises(exc) as ei:
        drive(aio, monkeypatch, recorded)
    assert box and box[0].log == [], f"sent {[m for _, m, _ in box[0].log]}"
    return ei.value


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
@pytest.mark.parametrize("call", sorted(KEY_CALLS))
def test_a_key_of_another_type_is_a_type_error_before_any_call(monkeypatch: pytest.MonkeyPatch, call: str,
                                                               aio: bool) -> None:
    for k in NOT_KEYS:
        e = raises_before_any_call(aio, monkeypatch, lambda c: KEY_CALLS[call](c, k), TypeError)
        assert "str, bytes, bytearray or memoryview" in str(e), (k, e)


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
@pytest.mark.parametrize("call", sorted(OTHER_CALLS))
def test_a_group_or_prefix_of_another_type_is_a_type_error(monkeypatch: pytest.MonkeyPatch, call: str,
                                                           aio: bool) -> None:
    for g in (5, [104, 105], None):
        raises_before_any_call(aio, monkeypatch, lambda c: OTHER_CALLS[call](c, g), TypeError)


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
@pytest.mark.parametrize("call", sorted(KEY_CALLS))
def test_a_key_breaking_the_rule_is_a_value_error_before_any_call(monkeypatch: pytest.MonkeyPatch, call: str,
                                                                  aio: bool) -> None:
    for k in BAD_KEYS:
        e = raises_before_any_call(aio, monkeypatch, lambda c: KEY_CALLS[call](c, k), ValueError)
        assert isinstance(e, metad.InvalidKey) and isinstance(e, metad.InvalidParams), e
        assert e.attempts == 0 and e.reason == metad.types_pb2.REASON_INVALID_PARAMS
        assert "NUL byte at" in str(e) or "not in 1..4096" in str(e), e
        if call.startswith("batch_"):
            assert str(e).startswith(("INVALID_PARAMS: keys[1]: key: ", "INVALID_PARAMS: items[1]: key: ")), e


def test_rule_messages_name_the_item() -> None:
    def err(call: Callable[[metad.Client], Any]) -> str:
        with metad.Client(ENDPOINTS, metad.Config()) as c, pytest.raises(metad.InvalidKey) as ei:
            call(c)
        return str(ei.value)
    assert err(lambda c: c.exists(b"ab\x00")) == "INVALID_PARAMS: key: NUL byte at 2"
    assert err(lambda c: c.get("")) == "INVALID_PARAMS: key: length 0 not in 1..4096"
    assert err(lambda c: c.batch_exists(["a"] * 5000 + ["\u00e9" * 2049])) == \
        "INVALID_PARAMS: keys[5000]: key: length 4098 not in 1..4096"


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
def test_one_key_where_a_list_is_wanted_is_a_type_error(monkeypatch: pytest.MonkeyPatch, aio: bool) -> None:
    # Iterating b"abc" gives ints, "abc" one-character keys: neither is what the caller meant.
    for call in ("batch_get", "batch_exists", "batch_remove", "batch_put_end", "batch_put_revoke"):
        for one in (b"abc", "abc", bytearray(b"abc")):
            raises_before_any_call(aio, monkeypatch, lambda c: getattr(c, call)(one), TypeError)
    raises_before_any_call(aio, monkeypatch, lambda c: c.batch_put_start(["k"]), TypeError)


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
def test_keys_of_every_type_are_sent_as_their_bytes(monkeypatch: pytest.MonkeyPatch, aio: bool) -> None:
    def call(c: Any) -> Any:
        if not aio:
            for k in ("h\u00e9", b"h\xc3\xa9", bytearray(b"h\xc3\xa9"), memoryview(b"h\xc3\xa9")):
                c.exists(k)
            c.exists("x" * 4096)
            return None

        async def run() -> None:
            for k in ("h\u00e9", b"h\xc3\xa9", bytearray(b"h\xc3\xa9"), memoryview(b"h\xc3\xa9")):
                await c.exists(k)
            await c.exists("x" * 4096)
        return run()
    srv = drive(aio, monkeypatch, call)
    assert [r.key for _, r in srv.sent("Exist")] == [b"h\xc3\xa9"] * 4 + [b"x" * 4096]


# ---------------------------------------------------------------------------------------------
# Endpoints.

BAD_ENDPOINTS = [
    "https://127.0.0.1:7601", "http://localhost:6001", "grpc://h:1", "dns:///h:1",
    "127.0.0.1", "localhost", "127.0.0.1:", ":6001", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:port",
    "127.0.0.1:+1", "127.0.0.1:6001/", "h:1/path", "::1:6001", "[::1]", "[::1:6001", "[zz::1]:6001",
    "999.0.0.1:6001", "1.2.3:6001", "my host:1", " 127.0.0.1:1", "127.0.0.1:1 ", "-bad.example:1",
    "bad-.example:1", "a..b:1", "x" * 64 + ".example:1", "",
]
GOOD_ENDPOINTS = ["127.0.0.1:6001", "localhost:1", "[::1]:6001", "[fe80::1%eth0]:6001", "node-1.example.com:443",
                  "metad_n1:65535", "n1.:6001", "10.0.0.1:1"]


@pytest.mark.parametrize("endpoint", BAD_ENDPOINTS)
def test_a_malformed_endpoint_is_a_value_error_at_construction(endpoint: str) -> None:
    with pytest.raises(ValueError, match="want host:port"):
        metad.Client([endpoint], metad.Config())
    with pytest.raises(ValueError, match="want host:port"):
        metad.Client(config=metad.Config(endpoints=["127.0.0.1:1", endpoint]))

    async def aio() -> None:
        metad.AsyncClient([endpoint], metad.Config())
    with pytest.raises(ValueError, match="want host:port"):
        asyncio.run(aio())


def test_endpoint_messages() -> None:
    def msg(e: str) -> str:
        with pytest.raises(ValueError) as ei:
            metad.check_endpoint(e)
        return str(ei.value)
    assert msg("https://127.0.0.1:7601") == ("metad: endpoint 'https://127.0.0.1:7601': want host:port (no scheme: "
                                             "the client speaks gRPC, over TLS when tls= is given)")
    assert "port '0' is not a number in 1..65535" in msg("h:0")
    assert "no port" in msg("h")
    assert "empty host" in msg(":1")
    assert "an IPv6 address goes in brackets" in msg("::1:1")


def test_good_endpoints_and_other_types() -> None:
    for e in GOOD_ENDPOINTS:
        metad.check_endpoint(e)
    with metad.Client(GOOD_ENDPOINTS, metad.Config()) as c:
        assert c.endpoints() == GOOD_ENDPOINTS
    with pytest.raises(TypeError):
        metad.Client([6001], metad.Config())  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not one str"):
        metad.Client("127.0.0.1:6001", metad.Config())  # a list of one, not its characters
    with pytest.raises(ValueError, match="no endpoints"):
        metad.Client([], metad.Config())


# ---------------------------------------------------------------------------------------------
# Configurations.


def test_a_config_in_place_of_endpoints_is_the_configuration() -> None:
    cfg = metad.Config(endpoints=["127.0.0.1:7001", "127.0.0.1:7002"], timeout=3.0)
    with metad.Client(cfg) as c:
        assert c.endpoints() == ["127.0.0.1:7001", "127.0.0.1:7002"] and c.config.timeout == 3.0

    async def aio() -> List[str]:
        async with metad.AsyncClient(cfg) as a:
            return a.endpoints()
    assert asyncio.run(aio()) == ["127.0.0.1:7001", "127.0.0.1:7002"]
    with pytest.raises(TypeError, match="two configurations"):
        metad.Client(cfg, cfg)
    with pytest.raises(TypeError, match="metad.Config"):
        metad.Client(ENDPOINTS, {"timeout": 1.0})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="want host:port"):
        metad.Client(metad.Config(endpoints=["https://h:1"]))


def test_only_from_env_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Config() and a client made without a Config read no METAD_* variable; Config.from_env()
    takes the endpoints, TLS and API key from them, fields given excepted."""
    monkeypatch.setenv(metad.ENV_ENDPOINTS, "h1:1, h2:2")
    monkeypatch.setenv(metad.ENV_CACERT, "/nonexistent/ca.crt")
    monkeypatch.setenv(metad.ENV_API_KEY, "k")
    for v in (metad.ENV_CERT, metad.ENV_KEY, metad.ENV_CERTS_DIR):
        monkeypatch.delenv(v, raising=False)
    assert metad.Config() == metad.Config(endpoints=list(metad.DEFAULT_ENDPOINTS), tls=None, api_key=None)
    with metad.Client() as c:
        assert c.endpoints() == list(metad.DEFAULT_ENDPOINTS) and c.config.tls is None
    env = metad.Config.from_env()
    assert env.endpoints == ["h1:1", "h2:2"] and env.tls == metad.TLS("/nonexistent/ca.crt") and env.api_key == "k"
    assert metad.Config.from_env(endpoints=["h3:3"], tls=None, api_key=None, timeout=2.0) == metad.Config(
        endpoints=["h3:3"], timeout=2.0)
    with pytest.raises(ValueError, match="ca_file"):
        metad.Client(env)  # the CA file named is read when the client is made
    with pytest.raises(TypeError):
        metad.Config.from_env(nope=1)


def test_file_path_and_file_segments() -> None:
    assert metad.file_path("/mnt/shared/c1/", "", "k/1") == "/mnt/shared/c1/" + b"default".hex() + "/" + b"k/1".hex()
    assert metad.file_path("/r", "t", b"\x00\xff") == "/r/74/00ff"
    root = metad.segment(1 << 30, "/mnt/shared/c1", tier=metad.types_pb2.TIER_DISK, base=4096)
    pool = metad.segment(1 << 30, "dfs://pool", tier=metad.types_pb2.TIER_DFS)
    mem = metad.segment(1 << 30, "127.0.0.1:9000")
    assert (root.base, pool.base, mem.base) == (0, 0, 1 << 30)
