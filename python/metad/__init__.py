"""metad: the Python client of metad, the Raft-replicated metadata service of a KV-cache store.

    import metad
    with metad.Client(["10.0.0.1:6001", "10.0.0.2:6001", "10.0.0.3:6001"]) as c:
        c.put(b"k1", 4096)
        print(c.get(b"k1").replicas)

:class:`Client` is synchronous; :class:`metad.aio.AsyncClient` is its asyncio form. Failures are
:class:`MetadError` subclasses, one per wire reason (:class:`ObjectNotFound`, ...), each under
its kind (:class:`NotFound`, :class:`Conflict`, ...: see :mod:`metad.errors`). A call that
answers a message returns a frozen dataclass of :mod:`metad.results` (:class:`GetResult`,
:class:`Replica`, ...) with the message's fields under their proto names and ``raw``, the message
itself; requests take the messages of :mod:`metad.metadv1` (generated from proto/ by ``make
proto``) where they take one (:func:`segment` builds a ``SegmentDesc``). ``Client.watch`` streams
the changes of objects (:class:`WatchBatch` of :class:`WatchEvent`, resumed from a
:class:`Revision` on another member when one fails).

Writes are exactly once within client sessions, opened by the client with its first write: every
retry of a write carries the call's session and sequence number, and the cluster answers a retry of
a write that applied with its first answer. ``Config(no_session=True)`` writes without (each write
at most once). See :class:`metad._core.SessionPool`.

Connections are plaintext unless TLS is configured: ``Client(endpoints, tls=metad.TLS(ca_file=...,
cert_file=..., key_file=...), api_key=...)``, or ``Client(Config.from_env())`` for the endpoints,
TLS and API key of the METAD_ENDPOINTS, METAD_CACERT, METAD_CERT, METAD_KEY, METAD_API_KEY and
METAD_CERTS_DIR environment variables (``Config()`` reads none). The API key is sent on every call
as ``authorization: Bearer <key>`` and only over TLS.

Keys are str (UTF-8), bytes, bytearray or memoryview, of 1..4096 bytes without a NUL byte: another
type is a TypeError and a key breaking the rule an :class:`InvalidKey` (a ValueError), both raised
before any call. The client logs to the standard ``logging`` logger ``metad`` (failovers and
redirects at INFO, retries at DEBUG, abandoned attempts and calls at WARNING) and adds only a
NullHandler to it: nothing is printed unless the application configures logging.
"""

import logging as _logging

from metad import errors as _errors
from metad import results as _results
from metad._config import (DEFAULT_ENDPOINTS, ENV_API_KEY, ENV_CACERT, ENV_CERT, ENV_CERTS_DIR, ENV_ENDPOINTS,
                           ENV_KEY, TLS, Config, api_key_from_env, check_endpoint, default_endpoints, split_endpoints,
                           tls_from_env)
from metad._core import new_client_id
from metad._ops import (MAX_BATCH_BYTES, MAX_BATCH_ITEMS, MAX_KEY_BYTES, MAX_READ_BATCH_BYTES, MAX_READ_BATCH_ITEMS,
                        BatchPutItem, Key, OffloadReport, PutOptions, file_path, segment)
from metad._watch import WATCH_KINDS, Revision, WatchBatch, WatchEvent
from metad._watchers import AsyncWatch, Watch
from metad.aio import AsyncClient
from metad._pingloop import PingLoop
from metad.client import Client
from metad._reasons import *  # noqa: F401,F403  (the class of every reason, for type checkers too)
from metad.errors import *  # noqa: F401,F403  (every exception class, error_for, item_error, reason_name)
from metad.results import *  # noqa: F401,F403  (what the calls return)
from metad.metadv1 import admin_pb2, metadata_pb2, types_pb2

_logging.getLogger("metad").addHandler(_logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "PingLoop", "Watch", "AsyncWatch", "Revision", "WatchBatch", "WatchEvent",
    "WATCH_KINDS", "Config", "PutOptions", "BatchPutItem", "OffloadReport", "Key", "segment", "file_path",
    "new_client_id", "default_endpoints", "split_endpoints", "check_endpoint", "DEFAULT_ENDPOINTS", "ENV_ENDPOINTS",
    "TLS", "tls_from_env", "api_key_from_env", "ENV_CACERT", "ENV_CERT", "ENV_KEY", "ENV_API_KEY", "ENV_CERTS_DIR",
    "MAX_BATCH_ITEMS", "MAX_BATCH_BYTES", "MAX_READ_BATCH_ITEMS", "MAX_READ_BATCH_BYTES", "MAX_KEY_BYTES",
    "types_pb2", "metadata_pb2", "admin_pb2",
]
__all__ += _errors.__all__ + _results.__all__
