"""What the generators of the client's code share: the paths, the stubs' import, the comments of
the .proto files, and writing (or checking) their output."""

from __future__ import annotations

import importlib
import os
import re
import sys
import types
from typing import Dict, List

PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON)
PROTO_DIR = os.path.join(REPO, "proto", "metadv1")


class GenError(Exception):
    """The stubs, the .proto files and a generator's table disagree; the message says how."""


def stubs() -> types.ModuleType:
    """This tree's package metad.metadv1 (the generated stubs). Run as a script, a generator
    imports it without the package metad, whose client needs grpc: the stubs need only protobuf."""
    if "metad" not in sys.modules:
        pkg = types.ModuleType("metad")
        pkg.__path__ = [os.path.join(PYTHON, "metad")]
        sys.modules["metad"] = pkg
    return importlib.import_module("metad.metadv1")


def read_proto(name: str) -> str:
    """The text of proto/metadv1/name."""
    with open(os.path.join(PROTO_DIR, name), encoding="utf-8") as f:
        return f.read()


_BLOCK = re.compile(r"(message|enum|service|oneof)\s+(\w+)\s*\{")


def message_comments(proto_text: str) -> Dict[str, str]:
    """The comment right above each message of proto_text, its lines joined, by the message's name
    within the file ("BatchGetResponse.Result" for a nested one)."""
    out: Dict[str, str] = {}
    stack: List[str] = []
    comment: List[str] = []
    for line in proto_text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            comment.append(s[2:].strip())
            continue
        s = s.split("//", 1)[0]
        opens, closes = s.count("{"), s.count("}")
        m = _BLOCK.match(s)
        if m is not None and opens:
            names = [n for n in stack if n] + [m.group(2)]
            if m.group(1) == "message":
                out[".".join(names)] = " ".join(comment)
            stack.append(m.group(2) if m.group(1) == "message" else "")
            opens -= 1
        stack.extend([""] * opens)
        for _ in range(closes):
            stack.pop()
        comment = []
    return out


def write_or_check(path: str, text: str, argv: List[str], doc: str) -> int:
    """Write text to path, or with ``--check`` in argv report (1) whether path differs from it."""
    name = os.path.basename(argv[0])
    rel = os.path.relpath(path, REPO)
    if argv[1:] == ["--check"]:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{name}: {rel} is stale: run python3 python/tools/{name}", file=sys.stderr)
                return 1
        return 0
    if argv[1:]:
        print(doc, file=sys.stderr)
        return 2
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0
