"""What a watch (:meth:`metad.Client.watch`, :meth:`metad.AsyncClient.watch`) yields and is asked
with: :class:`Revision`, the place of an event in the replicated log; :class:`WatchEvent`, one change
of one object, group or segment; :class:`WatchBatch`, one response of the stream. Frozen dataclasses
with ``raw``, the message (a Revision made by the caller has none), as the results of
:mod:`metad.results`; an event's kind is its name ("STORED", "GROUP_CREATED", ...: WATCH_KINDS).
Users import them from :mod:`metad`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional, Tuple, Union

from metad import results
from metad.metadv1 import metadata_pb2, types_pb2

__all__ = ["Revision", "WatchEvent", "WatchBatch", "WATCH_KINDS"]

_PREFIX = "WATCH_EVENT_KIND_"

WATCH_KINDS: Tuple[str, ...] = tuple(
    n.removeprefix(_PREFIX) for n in metadata_pb2.WatchEventKind.keys() if n != _PREFIX + "UNSPECIFIED")
"""The names of the event kinds, in their wire order: STORED (the object became readable: its first
COMPLETE replica), CHANGED (its COMPLETE replicas changed), REMOVED (it stopped being readable, not by
eviction), EVICTED (it stopped being readable by eviction), GROUP_CREATED (an explicit group got its
first object), GROUP_REMOVED (it is gone), SEGMENT_MOUNTED and SEGMENT_UNMOUNTED (segment events
belong to no tenant: only a watch of all tenants with no prefix gets them)."""

_KIND_NAME: Dict[int, str] = {metadata_pb2.WatchEventKind.Value(_PREFIX + n): n for n in WATCH_KINDS}
_KIND_VALUE: Dict[str, int] = {n: v for v, n in _KIND_NAME.items()}

MAX_PROGRESS_MS = (1 << 32) - 1
"""The longest progress interval the request can say, in milliseconds."""

DEFAULT_PROGRESS = 5.0
"""The server's progress interval when the request names none, seconds."""

MIN_PROGRESS = 0.1
"""The shortest progress interval the server keeps (a shorter one is raised to it), seconds."""


def kind_name(kind: int) -> str:
    """The name of a WatchEventKind value ("STORED"), or ``KIND_<n>`` for one this package does not
    know."""
    return _KIND_NAME.get(kind, f"KIND_{kind}")


@dataclass(frozen=True, order=True)
class Revision:
    """The place of one watch event in the replicated log: the index of the entry whose apply made
    it, and its position among that entry's events; ordered by index, then position. A batch's
    ``next`` is where to resume (``watch(start=batch.next)``); ``str()`` renders ``index.position``."""

    index: int
    position: int = 0

    @classmethod
    def from_pb(cls, m: types_pb2.Revision) -> Revision:
        """The Revision of m."""
        return cls(m.index, m.position)

    def to_pb(self) -> types_pb2.Revision:
        """The message of this revision."""
        return types_pb2.Revision(index=self.index, position=self.position)

    def __str__(self) -> str:
        return f"{self.index}.{self.position}"


_new = object.__new__


@dataclass(frozen=True)
class WatchEvent:
    """One change of one object, group or segment: where it is in the log (revision), what happened
    (kind, a name of WATCH_KINDS), when the leader proposed it (time_unix_nano, its clock), and for an
    object its tenant, key, explicit group (b"" for a singleton) and size, and its COMPLETE replicas
    after the change (none for REMOVED and EVICTED), with their segments' endpoints as the member
    knew them when it sent the event; for a group event its tenant and group (key b""); for a segment
    event the segment as mounted (segment; None for the others, tenant "").

    The fields of ``metad.v1.WatchEvent``, the kind by name; ``raw`` is the message."""

    revision: Revision
    kind: str
    tenant: str
    key: bytes
    group: bytes
    size: int
    replicas: Tuple[results.Replica, ...]
    time_unix_nano: int
    segment: Optional[results.SegmentDesc]
    raw: metadata_pb2.WatchEvent = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, m: metadata_pb2.WatchEvent) -> WatchEvent:
        """The WatchEvent of m."""
        o: WatchEvent = _new(cls)
        d = o.__dict__
        d["revision"] = Revision(m.revision.index, m.revision.position)
        d["kind"] = kind_name(m.kind)
        d["tenant"] = m.tenant
        d["key"] = m.key
        d["group"] = m.group
        d["size"] = m.size
        d["replicas"] = tuple([results.Replica.from_pb(x) for x in m.replicas])
        d["time_unix_nano"] = m.time_unix_nano
        d["segment"] = results.SegmentDesc.from_pb(m.segment) if m.HasField("segment") else None
        d["raw"] = m
        return o


@dataclass(frozen=True)
class WatchBatch:
    """One response of a watch: its events in revision order (none in a progress response, and in
    the stream's first, which names where it starts), next (every matching event before it has been
    yielded: resume from it), and the member's applied and commit indexes (applied_index below
    commit_index means the member is catching up).

    The fields of ``metad.v1.WatchResponse``; ``raw`` is the message."""

    events: Tuple[WatchEvent, ...]
    next: Revision
    applied_index: int
    commit_index: int
    raw: metadata_pb2.WatchResponse = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, m: metadata_pb2.WatchResponse) -> WatchBatch:
        """The WatchBatch of m."""
        o: WatchBatch = _new(cls)
        d = o.__dict__
        d["events"] = tuple([WatchEvent.from_pb(x) for x in m.events])
        d["next"] = Revision(m.next.index, m.next.position)
        d["applied_index"] = m.applied_index
        d["commit_index"] = m.commit_index
        d["raw"] = m
        return o


Kinds = Iterable[Union[str, int]]
"""Event kinds to watch: names ("STORED", or "WATCH_EVENT_KIND_STORED") or WatchEventKind values."""


def kind_value(k: Union[str, int]) -> int:
    """The WatchEventKind value of k (a name or a value): TypeError for another type, ValueError
    for a kind this package does not know."""
    if isinstance(k, bool) or not isinstance(k, (str, int)):
        raise TypeError(f"metad: a watch kind must be a str or an int, not {type(k).__name__}")
    if isinstance(k, str):
        v = _KIND_VALUE.get(k.upper().removeprefix(_PREFIX))
        if v is None:
            raise ValueError(f"metad: unknown watch kind {k!r} (want one of {', '.join(WATCH_KINDS)})")
        return v
    if k not in _KIND_NAME:
        raise ValueError(f"metad: unknown watch kind {k}")
    return k


def progress_of(req: metadata_pb2.WatchRequest) -> float:
    """The progress interval the server keeps for req, seconds."""
    ms = req.progress_interval_ms
    return DEFAULT_PROGRESS if ms == 0 else max(ms / 1000, MIN_PROGRESS)
