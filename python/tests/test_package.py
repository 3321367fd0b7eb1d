"""The package ships only the client's schemas: the stubs of metad.metadv1 are exactly those the
client imports, and make proto (proto/generate.sh) generates exactly those."""

from __future__ import annotations

import os
import re

import metad
from cluster import REPO

PACKAGE = os.path.dirname(os.path.abspath(metad.__file__))
STUBS = os.path.join(PACKAGE, "metadv1")


def shipped() -> set[str]:
    return {f for f in os.listdir(STUBS) if f.endswith((".py", ".pyi")) and f != "__init__.py"}


def test_the_stubs_shipped_are_those_the_client_imports() -> None:
    imported: set[str] = set()
    for f in os.listdir(PACKAGE):
        if f.endswith(".py"):
            with open(os.path.join(PACKAGE, f), encoding="utf-8") as fh:
                for names in re.findall(r"^from metad\.metadv1 import ([\w, ]+)$", fh.read(), re.M):
                    imported.update(n.strip() for n in names.split(","))
    assert imported == {"types_pb2", "metadata_pb2", "admin_pb2"}
    assert shipped() == {f"{m}.{ext}" for m in imported for ext in ("py", "pyi")}


def test_make_proto_generates_the_stubs_shipped() -> None:
    with open(os.path.join(REPO, "proto", "generate.sh"), encoding="utf-8") as f:
        m = re.search(r"^PYTHON_PROTOS=\(([^)]*)\)$", f.read(), re.M)
    assert m is not None
    protos = m.group(1).split()
    assert {f"{os.path.basename(p).removesuffix('.proto')}_pb2.{ext}" for p in protos
            for ext in ("py", "pyi")} == shipped()
