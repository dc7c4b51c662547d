"""A test harness: ``sourcebias serve`` in a child process on a loopback port (start, wait until
ready, ``kill -9``, restart). Used by the generation tests and ``benchmarks/bench_generate_throughput.py``;
not part of the package."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free now on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """``sourcebias serve`` in a child process on a loopback port: start, wait, kill -9, restart.

    ``extra_args`` go to ``sourcebias serve`` (e.g. ``["--max-pending", "2"]``); the child's
    output goes to ``log_path`` (default: discarded).
    """

    def __init__(
        self,
        model: str = "smollm2",
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        extra_args: list[str] | None = None,
        log_path: str | Path | None = None,
        env: dict[str, str] | None = None,
    ):
        self.model = model
        self.host = host
        self.port = port or free_port(host)
        self.extra_args = list(extra_args or [])
        self.log_path = Path(log_path) if log_path else None
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "sourcebias", "serve", "--model", self.model, "--host", self.host, "--port", str(self.port), "--quiet", *self.extra_args]

    def start(self, wait: bool = True, timeout: float = 180.0) -> ServerProcess:
        cmd = self.command()
        out = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        env = {**os.environ, **(self.env or {})}
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        if out is not subprocess.DEVNULL:
            out.close()
        self.starts += 1
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Poll ``/health`` until it answers 200; raise ``RuntimeError`` if the child exits or time runs out."""
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"server exited with status {self.proc.returncode} (see {self.log_path or 'its output'})")
            try:
                if httpx.get(f"http://{self.host}:{self.port}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"server on port {self.port} not ready after {timeout:.0f} s")

    def kill(self) -> None:
        """``kill -9`` the server (no clean shutdown: in-flight requests die with it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def restart(self, wait: bool = True) -> ServerProcess:
        self.kill()
        return self.start(wait=wait)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SimulatedProcess(ServerProcess):
    """A :class:`~sourcebias.llmcalls.simulated.SimulatedServer` answering with
    ``sim_server_child.respond`` in a child process on a loopback port (start, wait, kill -9,
    restart): each answer takes ``latency`` seconds in one of ``parallel`` slots."""

    def __init__(self, *, latency: float = 0.0, parallel: int | None = None, model: str = "sim", **kw: Any):
        src = str(Path(__file__).resolve().parents[1] / "src")
        env = {"PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p), **(kw.pop("env", None) or {})}
        super().__init__(model, env=env, **kw)
        self.latency = latency
        self.parallel = parallel

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            str(Path(__file__).with_name("sim_server_child.py")),
            "--port",
            str(self.port),
            "--latency",
            str(self.latency),
            "--model",
            self.model,
        ]
        return cmd + (["--parallel", str(self.parallel)] if self.parallel else [])
