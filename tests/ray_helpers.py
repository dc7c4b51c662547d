"""A Ray cluster of ``ray start`` nodes on loopback for tests: each node a session of its own, so
that a worker node is killed (SIGKILL, as a machine lost) and the cluster stopped by process group
alone, never by ``ray stop`` (which would stop every Ray on the machine)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackCluster:
    """A head and one worker node, each a ``ray start`` in a session of its own, so that each
    node's processes (raylet, its workers, the head's GCS) form one process group: the worker node
    is killed, and the cluster stopped, by its groups alone (never ``ray stop``, which would stop
    every Ray on the machine)."""

    def __init__(self) -> None:
        self.temp = Path(tempfile.mkdtemp(prefix="sbray", dir="/tmp"))  # short: Ray's socket paths
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        # Ray >= 2.5x authenticates with a token when one exists; every node and the driver share it
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"}
        # the head declares a node dead after 3 missed 1 s health checks (Ray's default: 5 of 3 s)
        self.env |= {"RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000", "RAY_health_check_failure_threshold": "3"}
        self.groups: dict[str, int] = {}

    def start_node(self, name: str, *args: str) -> None:
        common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--num-gpus=0", f"--temp-dir={self.temp}", "--disable-usage-stats"]
        proc = subprocess.Popen(
            [RAY, "start", *args, *common], env=self.env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.groups[name] = proc.pid  # the daemons stay in the group of the (exited) ray start
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start {name} failed:\n{out[-3000:]}")

    def processes(self, name: str) -> list:
        """The node's processes: its ``ray start``'s group and their descendants (Ray puts its
        worker processes in groups of their own)."""
        import psutil

        group = [p for p in psutil.process_iter() if _group_of(p.pid) == self.groups[name]]
        found = {p.pid: p for p in group}
        for p in group:
            with contextlib.suppress(psutil.NoSuchProcess):
                found.update({c.pid: c for c in p.children(recursive=True)})
        return [p for p in found.values() if _running(p)]

    def node_id(self, name: str) -> str:
        """The node's Ray id (from its raylet's command line)."""
        for p in self.processes(name):
            ids = [a.split("=", 1)[1] for a in p.cmdline() if a.startswith("--node_id=")]
            if ids:
                return ids[0]
        raise RuntimeError(f"no raylet for node {name}")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        for p in self.processes(name):
            with contextlib.suppress(Exception):
                p.send_signal(sig)

    def alive(self, name: str) -> bool:
        return bool(self.processes(name))

    def stop(self) -> None:
        for name in reversed(list(self.groups)):
            self.kill(name, signal.SIGTERM)
        deadline = time.time() + 5
        while time.time() < deadline and any(self.alive(n) for n in self.groups):
            time.sleep(0.2)
        for name in self.groups:
            self.kill(name, signal.SIGKILL)
        shutil.rmtree(self.temp, ignore_errors=True)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _running(p) -> bool:
    import psutil

    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
