"""Fixtures: one 3-node cluster for the whole session, a client with a mounted memory segment."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import metad  # noqa: E402
from cluster import Cluster, serving  # noqa: E402


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    yield from serving(["--client-ttl", "60s"])


@pytest.fixture(scope="session")
def client(cluster: Cluster) -> Iterator[metad.Client]:
    """A client that owns a 1 GiB memory segment, so puts have room."""
    with metad.Client(cluster.endpoints, metad.Config(timeout=15.0)) as c:
        c.mount_segment(metad.segment(1 << 30, "sim://pytest", name="pytest"))
        yield c
