"""The examples run against a live cluster as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys

import metad
from cluster import Cluster

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def test_worker_and_reader(cluster: Cluster, client: metad.Client) -> None:
    # The client fixture's segment is mounted and has served puts, so the leader's arenas cover
    # it; the example's segment is mounted a moment before its puts, which prefer it: each must be
    # placed there, or the worker would write into memory it does not have.
    for i in range(4):
        client.put(f"example-warm/{i}", 4096)
    env = dict(os.environ, METAD_ENDPOINTS=",".join(cluster.endpoints))
    env.pop("METAD_CERTS_DIR", None)
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "worker_and_reader.py")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    for i in range(3):
        assert f"example/{i}: b'cached block {i}'" in out.stdout, out.stdout
    assert "example/missing: OBJECT_NOT_FOUND" in out.stdout, out.stdout
