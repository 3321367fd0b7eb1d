"""Writes metad/_reasons.py: the exception class of every value of the wire's reason enum
(``metad.v1.Reason``), read from its descriptor (metad.metadv1.types_pb2), each a subclass of its
kind (metad/_kinds.py) and documented by the enum value's comment in proto/metadv1/types.proto.

    python3 python/tools/gen_reasons.py          # rewrite metad/_reasons.py (make proto runs it)
    python3 python/tools/gen_reasons.py --check  # exit 1 if it is not what this would write

A reason is listed once, in KIND below, with the kind whose gRPC status code the server answers it
with (server/errors.go, mapReason). A reason of the enum missing from KIND stops the generator (and
fails tests/test_errors.py); so does an entry of KIND the enum does not have. A reason whose class
name is its kind's name (UNAVAILABLE) is that kind's class itself.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import textwrap
from typing import Dict, List, Tuple

from genlib import PYTHON, GenError, read_proto, stubs, write_or_check

OUT = os.path.join(PYTHON, "metad", "_reasons.py")

KIND: Dict[str, str] = {
    "INVALID_PARAMS": "InvalidArgument",
    "TENANT_NOT_REGISTERED": "NotFound",
    "TENANT_NOT_EMPTY": "Conflict",
    "TENANT_QUOTA_EXCEEDED": "ResourceExhausted",
    "OBJECT_NOT_FOUND": "NotFound",
    "OBJECT_ALREADY_EXISTS": "AlreadyExists",
    "OBJECT_HAS_LEASE": "Conflict",
    "REPLICA_IS_NOT_READY": "Conflict",
    "INVALID_WRITE": "Conflict",
    "ILLEGAL_CLIENT": "PermissionDenied",
    "NO_AVAILABLE_HANDLE": "ResourceExhausted",
    "SEGMENT_NOT_FOUND": "NotFound",
    "NOT_LEADER": "Unavailable",
    "UNAVAILABLE": "Unavailable",
    "SEGMENT_OWNED_BY_OTHER_CLIENT": "PermissionDenied",
    "TENANT_ALREADY_EXISTS": "AlreadyExists",
    "STATE_REPLACED": "Unavailable",
    "MEMBER_NOT_FOUND": "NotFound",
    "SESSION_EXPIRED": "Conflict",
    "SEQUENCE_TOO_OLD": "Conflict",
    "AUTH_REVISION_STALE": "Aborted",
    "KEY_NOT_FOUND": "NotFound",
    "ROLE_NOT_FOUND": "NotFound",
    "KEY_ALREADY_EXISTS": "AlreadyExists",
    "AUTH_LIMIT_EXCEEDED": "ResourceExhausted",
    "NO_REPLICA_ON_SEGMENT": "Conflict",
    "RESPONSE_LIMIT_REACHED": "ResourceExhausted",
    "OBJECT_HAS_REPLICATION_TASK": "Conflict",
    "OBJECT_NO_REPLICATION_TASK": "Conflict",
    "REPLICA_NOT_FOUND": "NotFound",
    "TASK_NOT_FOUND": "NotFound",
    "TASK_PENDING_LIMIT_EXCEEDED": "ResourceExhausted",
    "DRAIN_NOT_FOUND": "NotFound",
    "WATCH_COMPACTED": "Conflict",
    "WATCH_FELL_BEHIND": "Conflict",
    "SEGMENT_DRAINING": "Conflict",
    "DRAIN_NOT_RUNNING": "Conflict",
    "RESERVATION_LOST": "Aborted",
    "LEARNER_NOT_CAUGHT_UP": "Conflict",
    "RATE_LIMITED": "ResourceExhausted",
}
"""The kind (a class of metad/_kinds.py) of every reason, by its name without REASON_."""


def class_name(reason: str) -> str:
    """OBJECT_NOT_FOUND -> ObjectNotFound."""
    return "".join(w.capitalize() for w in reason.split("_"))


def reasons() -> List[Tuple[str, int]]:
    """(name without REASON_, number) of every value of metad.v1.Reason but REASON_UNSPECIFIED, in
    the order of the enum's declaration, from its descriptor."""
    types_pb2 = importlib.import_module(stubs().__name__ + ".types_pb2")
    out = []
    for v in types_pb2.Reason.DESCRIPTOR.values:
        if v.number != 0:
            out.append((str(v.name).removeprefix("REASON_"), int(v.number)))
    return out


def comments(proto_text: str) -> Dict[str, str]:
    """The comment above each value of enum Reason in proto_text, by name without REASON_, its
    lines joined."""
    m = re.search(r"^enum Reason \{\n(.*?)^\}", proto_text, re.S | re.M)
    if m is None:
        raise GenError("types.proto: no enum Reason")
    out: Dict[str, str] = {}
    lines: List[str] = []
    for line in m.group(1).splitlines():
        s = line.strip()
        if s.startswith("//"):
            lines.append(s[2:].strip())
            continue
        v = re.fullmatch(r"REASON_([A-Z0-9_]+)\s*=\s*\d+\s*;", s)
        if v is not None:
            out[v.group(1)] = " ".join(lines)
        lines = []
    return out


def render(values: List[Tuple[str, int]], docs: Dict[str, str]) -> str:
    """The text of metad/_reasons.py for values and their docs; GenError when KIND or the docs
    miss a reason, or KIND names one the enum lacks."""
    names = [n for n, _ in values]
    missing = [n for n in names if n not in KIND]
    if missing:
        raise GenError(f"no kind for REASON_{', REASON_'.join(missing)}: add it to KIND in tools/gen_reasons.py "
                       "with the kind of the gRPC code server/errors.go answers it with")
    stale = sorted(set(KIND) - set(names))
    if stale:
        raise GenError(f"KIND names REASON_{', REASON_'.join(stale)}, which metad.v1.Reason does not have")
    undocumented = [n for n in names if not docs.get(n)]
    if undocumented:
        raise GenError(f"types.proto: no comment above REASON_{', REASON_'.join(undocumented)}")
    kinds = sorted(set(KIND.values()))
    classes = [n for n in names if class_name(n) != KIND[n]]
    out = [
        "# Code generated by tools/gen_reasons.py from metad.v1.Reason (proto/metadv1/types.proto). DO NOT EDIT.",
        '"""The exception class of every wire reason (``metad.v1.Reason``), each a subclass of its kind',
        "(:mod:`metad._kinds`), documented by the reason's comment in proto/metadv1/types.proto.",
        "Users import them from :mod:`metad` or :mod:`metad.errors`.\"\"\"",
        "",
        "from __future__ import annotations",
        "",
        "from typing import Dict, Type",
        "",
    ]
    out += textwrap.wrap("from metad._kinds import (" + ", ".join(kinds + ["MetadError"]) + ")", 100,
                         subsequent_indent="                         ", break_on_hyphens=False)
    out += ["from metad.metadv1 import types_pb2", "", "__all__ = ["]
    out += textwrap.wrap(", ".join(f'"{class_name(n)}"' for n in classes), 100,
                         initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)
    out[-1] += ","
    out.append("]")
    for n in classes:
        doc = docs[n]
        if '"""' in doc or "\\" in doc:
            raise GenError(f"types.proto: the comment of REASON_{n} has a backslash or triple quote")
        body = textwrap.wrap(doc, 96, initial_indent='    """', subsequent_indent="    ", break_on_hyphens=False)
        body[-1] += '"""'
        out += ["", "", f"class {class_name(n)}({KIND[n]}):"] + body + [
            "", '    __module__ = "metad.errors"', f"    reason = types_pb2.REASON_{n}"]
    out += ["", "", "BY_REASON: Dict[int, Type[MetadError]] = {"]
    out += [f"    types_pb2.REASON_{n}: {class_name(n)}," for n in names]
    out += ["}", '"""The class of every reason but REASON_UNSPECIFIED."""', ""]
    return "\n".join(out)


def generate() -> str:
    """The text metad/_reasons.py should have."""
    return render(reasons(), comments(read_proto("types.proto")))


def main(argv: List[str]) -> int:
    try:
        text = generate()
    except GenError as e:
        print(f"gen_reasons: {e}", file=sys.stderr)
        return 1
    return write_or_check(OUT, text, argv, __doc__ or "")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
