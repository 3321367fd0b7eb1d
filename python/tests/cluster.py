"""A 3-node metad cluster on loopback for the tests and the benchmark: real processes of
bin/metad, free 127.0.0.1 ports, data in a temporary directory, every process stopped by stop()."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, TypeVar

import metad
from metad.metadv1 import admin_pb2

T = TypeVar("T")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METAD = os.environ.get("METAD_BIN", os.path.join(REPO, "bin", "metad"))

# The short Raft timeouts of test/e2e (NewCluster), so elections take well under a second.
FAST_RAFT = ["--heartbeat-timeout", "300ms", "--election-timeout", "300ms", "--leader-lease-timeout", "150ms"]


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out for outgoing connections and port 0 (Linux's
    ip_local_port_range; 32768 where it cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n: int) -> List[int]:
    """n loopback ports that were free a moment ago, drawn below the ephemeral range: a port the
    kernel could give to an outgoing connection may be taken by one (the tests open thousands)
    between this check and the process that binds it. Port 0 where that range is too narrow."""
    low, high = 20000, _ephemeral_low()
    rng = random.Random()
    socks: List[socket.socket] = []
    try:
        for _ in range(n):
            for _attempt in range(64):
                s = socket.socket()
                port = rng.randrange(low, high) if high - low >= 1024 else 0
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    s.close()
                    continue
                socks.append(s)
                break
            else:
                raise RuntimeError(f"no free loopback port in [{low}, {high}) after 64 tries")
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(cond: Callable[[], Optional[T]], timeout: float, what: str, every: float = 0.05) -> T:
    """Poll cond until it returns a value other than None/False, or fail after timeout seconds."""
    end = time.monotonic() + timeout
    last: Optional[BaseException] = None
    while time.monotonic() < end:
        try:
            v = cond()
            if v:
                return v
        except ProcessDied:
            raise
        except Exception as e:  # the condition may fail while the cluster settles
            last = e
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout}s (last error: {last})")


class ProcessDied(RuntimeError):
    """A node's process exited while a test waited on it: wait_for stops at once, with its log."""


@dataclass
class Node:
    name: str
    client: str
    peer: str
    metrics: str
    data: str
    log: str
    proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]


class Cluster:
    """Three metad processes bootstrapping one cluster; extra flags go to every node."""

    def __init__(self, extra: Optional[List[str]] = None, fast: bool = True) -> None:
        if not os.access(METAD, os.X_OK):
            raise RuntimeError(f"{METAD} not found: build it with `go build -o bin/ ./cmd/...`")
        self.dir = tempfile.mkdtemp(prefix="metad-py-")
        ports = free_ports(9)
        self.nodes = [Node(f"n{i+1}", f"127.0.0.1:{ports[3*i]}", f"127.0.0.1:{ports[3*i+1]}",
                           f"127.0.0.1:{ports[3*i+2]}", os.path.join(self.dir, f"n{i+1}"),
                           os.path.join(self.dir, f"n{i+1}.log")) for i in range(3)]
        self.initial = ",".join(f"{n.name}={n.peer}" for n in self.nodes)
        self.extra = (FAST_RAFT if fast else []) + (extra or [])
        for n in self.nodes:
            self.start(n)

    @property
    def endpoints(self) -> List[str]:
        return [n.client for n in self.nodes]

    def start(self, n: Node) -> None:
        args = [METAD, "--name", n.name, "--data-dir", n.data, "--listen-client", n.client,
                "--listen-peer", n.peer, "--listen-metrics", n.metrics, "--initial-cluster", self.initial,
                "--log-level", "warn", "--insecure"] + self.extra
        with open(n.log, "ab") as log:
            n.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def kill(self, n: Node) -> None:
        """SIGKILL n and wait for it to exit."""
        if n.proc is not None:
            n.proc.kill()
            n.proc.wait()
            n.proc = None

    def pause(self, n: Node) -> None:
        """SIGSTOP n and wait until the kernel shows it stopped (the signal is asynchronous: a
        call sent at once could still be answered)."""
        assert n.proc is not None
        n.proc.send_signal(signal.SIGSTOP)
        pid = n.proc.pid

        def stopped() -> bool:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
        wait_for(stopped, 5.0, f"{n.name} stopped")

    def resume(self, n: Node) -> None:
        if n.proc is not None:
            n.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL after 10 s) and remove the data."""
        for n in self.nodes:
            if n.proc is not None:
                n.proc.send_signal(signal.SIGCONT)
                n.proc.terminate()
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(10)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
                    n.proc.wait()
                n.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def leader(self, c: metad.Client, timeout: float = 15.0) -> Node:
        """The node that reports itself leader, and that the live nodes agree on, waited for."""
        def find() -> Optional[Node]:
            live = [n for n in self.nodes if n.proc is not None]
            for n in live:
                self.check_alive(n)
            names = set()
            for n in live:
                st = c.status(n.client, timeout=1.0)
                names.add(st.leader_name)
            if len(names) != 1:
                return None
            name = names.pop()
            for n in live:
                if n.name == name and c.status(n.client, timeout=1.0).role == admin_pb2.NODE_ROLE_LEADER:
                    return n
            return None
        try:
            return wait_for(find, timeout, "a leader the live nodes agree on")
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{self.logs()}") from None

    def wait_up(self, n: Node, c: metad.Client, timeout: float = 30.0) -> None:
        """Wait until n's process answers Status with an applied entry; fail at once if it exits,
        and with the nodes' logs on timeout."""
        def up() -> bool:
            self.check_alive(n)
            return c.status(n.client, timeout=1.0).applied_index > 0
        try:
            wait_for(up, timeout, f"{n.name} up")
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{self.logs()}") from None

    def check_alive(self, n: Node) -> None:
        """Raise ProcessDied, with the end of n's log, if n's process has exited on its own."""
        if n.proc is not None and n.proc.poll() is not None:
            try:
                with open(n.log) as f:
                    tail = f.read()[-2000:]
            except OSError:
                tail = ""
            raise ProcessDied(f"{n.name} exited with {n.proc.returncode}:\n{tail}")

    def logs(self) -> str:
        out = []
        for n in self.nodes:
            try:
                with open(n.log) as f:
                    out.append(f"--- {n.name}\n" + f.read()[-4000:])
            except OSError:
                pass
        return "\n".join(out)


def serving(flags: List[str]) -> Iterator["Cluster"]:
    """A fixture's body: a Cluster started with flags, yielded once it has a leader and every
    member has recorded its binary's feature level (until then the leader refuses the commands
    above level 1, such as MountLocalDisk's), stopped after."""
    c = Cluster(flags)
    try:
        with metad.Client(c.endpoints) as cl:
            c.leader(cl)

            def recorded() -> bool:
                members = cl.list_members().members
                levels = {m.feature_level for m in members}
                return len(members) == len(c.nodes) and len(levels) == 1 and 0 not in levels

            wait_for(recorded, 20.0, "every member's feature level recorded")
        yield c
    finally:
        c.stop()
