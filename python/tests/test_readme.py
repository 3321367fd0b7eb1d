"""The READMEs say what is true: every call of the clients is listed, the key rule is stated, and
the install they give for a machine without a package index works there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

import metad
from cluster import REPO

PY_README = os.path.join(REPO, "python", "README.md")
TOP_README = os.path.join(REPO, "README.md")
OFFLINE_INSTALL = ".venv/bin/pip install --no-build-isolation ./python"


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def from_python_section() -> str:
    text = read(TOP_README)
    start = text.index("## From Python")
    return text[start:text.index("\n## ", start + 1)]


@pytest.mark.parametrize("cls", [metad.Client, metad.AsyncClient], ids=["Client", "AsyncClient"])
def test_every_call_is_listed(cls: type) -> None:
    named = set(re.findall(r"`([a-z_]+)`", read(PY_README)))
    calls = {n for n in dir(cls) if not n.startswith("_")}
    assert sorted(calls - named) == []


def test_the_key_rule_is_stated() -> None:
    for text in (read(PY_README), from_python_section()):
        flat = " ".join(text.split())
        assert re.search(r"`str`.*`bytes`, `bytearray` or `memoryview` of 1\.\.4096 bytes without a NUL byte",
                         flat), text


def test_the_offline_install_works(tmp_path: str) -> None:
    """The command both READMEs give for a machine without a package index (pip cannot fetch
    setuptools for an isolated build), run with the index off: --no-index, as the machine has none,
    and --target instead of a fresh virtual environment."""
    for text in (read(PY_README), from_python_section()):
        assert OFFLINE_INSTALL in text
    src = os.path.join(str(tmp_path), "python")
    shutil.copytree(os.path.join(REPO, "python"), src,
                    ignore=shutil.ignore_patterns(".venv", "build", "*.egg-info", "__pycache__", ".*_cache"))
    target = os.path.join(str(tmp_path), "site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                        "--no-deps", "--target", target, src],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-c", "import metad; print(metad.__file__)"], capture_output=True,
                       text=True, timeout=60, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": target})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(target), r.stdout
    stubs = sorted(f for f in os.listdir(os.path.join(target, "metad", "metadv1")) if f.endswith((".py", ".pyi")))
    assert stubs == ["__init__.py", "admin_pb2.py", "admin_pb2.pyi", "metadata_pb2.py", "metadata_pb2.pyi",
                     "types_pb2.py", "types_pb2.pyi"]


def test_the_kinds_table_matches_the_classes() -> None:
    """Each row of the README's table of kinds names the kind's gRPC code and exactly the reasons
    whose classes are under it."""
    rows = {m.group(1): (m.group(2), set(re.findall(r"`([A-Z][a-z][A-Za-z]*)`", m.group(3))))
            for m in re.finditer(r"^\| `([A-Za-z]+)` \| ([A-Z_]+) \| (.*) \|$", read(PY_README), re.M)}
    assert sorted(rows) == sorted(k.__name__ for k in metad.errors.KINDS)
    for kind in metad.errors.KINDS:
        code, named = rows[kind.__name__]
        classes = {c.__name__ for c in metad.errors.BY_REASON.values() if issubclass(c, kind) and c is not kind}
        assert code == kind.grpc_code.name and named - {"InvalidKey"} == classes, kind
