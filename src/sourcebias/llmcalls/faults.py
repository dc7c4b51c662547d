"""A fault-injecting HTTP proxy on loopback: what a client meets between it and a model server, on
purpose and counted.

:class:`FaultProxy` stands in front of an OpenAI-compatible server (a
:class:`~sourcebias.llmcalls.simulated.SimulatedServer`, ``sourcebias serve``, llama.cpp's server)
and passes every request through, except the POST requests its ``plan`` names, which get a fault
instead. The plan is a function of the request's number (0, 1, 2... in arrival order; the model
probes, GET requests, always pass) or a ``{number: fault}`` mapping::

    with SimulatedServer(responder) as server, FaultProxy(server, burst("503", start=2, count=5)) as url:
        client = open_client(f"openai:sim@{url}")
        ...   # the 3rd to 7th requests get 503; every call is still answered, after 5 retries

Faults (:data:`FAULTS`):

* ``429``: ``429 Too Many Requests`` with ``Retry-After: <retry_after>``;
* ``500``, ``502``, ``503``: that status with an OpenAI-style error body;
* ``reset``: the server's answer cut mid-body, the connection reset (TCP RST);
* ``cut``: the server's answer cut mid-body, the connection closed (FIN: fewer bytes than its
  ``Content-Length``);
* ``drop``: the connection closed before any answer;
* ``slow``: the answer held back ``slow_seconds`` (longer than the client's time-out), then sent;
* ``malformed``: status 200 with the first half of the server's JSON (not JSON);
* ``no-choices``: status 200 with a JSON object that holds no answer (``"choices": []``).

``probe_seconds`` holds back every GET (the model probes) that long, as a server that runs one
request at a time (llama-cpp-python's) answers ``GET /models`` after the calls in flight.

``injected`` counts the faults given, ``requests`` the POST requests received and ``forwarded``
those that reached the server (a fault after the server answered, ``reset``, ``cut``, ``slow``,
``malformed`` and ``no-choices``, is one of them: the server did the work, the client lost it).
A server behind the proxy that cannot be reached answers ``502 Bad Gateway``, as a real proxy
does. Written on the standard library's HTTP server because a fault mid-body or a reset
connection needs the socket in hand, which no mocking layer of an HTTP client gives.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

#: the faults a plan may name
FAULTS = ("429", "500", "502", "503", "reset", "cut", "drop", "slow", "malformed", "no-choices")
Plan = Callable[[int], "str | None"]


def burst(fault: str, start: int, count: int) -> Plan:
    """A plan: requests ``start`` to ``start + count - 1`` get ``fault``, the others pass."""
    return lambda n: fault if start <= n < start + count else None


def every(fault: str, k: int, first: int = 0) -> Plan:
    """A plan: every ``k``-th request from ``first`` on gets ``fault`` (``first``, ``first + k``...)."""
    return lambda n: fault if n >= first and (n - first) % k == 0 else None


def _as_plan(plan: Mapping[int, str] | Plan | None) -> Plan:
    if plan is None:
        return lambda n: None
    if isinstance(plan, Mapping):
        table = dict(plan)
        return table.get
    return plan


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FaultProxy


class _Handler(BaseHTTPRequestHandler):
    server: _ProxyServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the counts say what happened."""

    def do_GET(self) -> None:
        if self.server.owner.probe_seconds:  # a busy server: GET /models waits behind the calls in flight
            time.sleep(self.server.owner.probe_seconds)
        status, headers, body = self.server.owner.forward("GET", self.path, b"")
        self._reply(status, body, headers)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        proxy = self.server.owner
        fault = proxy.next_fault()
        if fault in ("429", "500", "502", "503"):
            extra = {"Retry-After": f"{proxy.retry_after:g}"} if fault == "429" else {}
            message = {"429": "rate limited (injected)", "500": "internal error (injected)", "502": "bad gateway (injected)", "503": "overloaded (injected)"}[
                fault
            ]
            self._reply(int(fault), _error(message), extra)
            return
        if fault == "drop":
            self._reset()
            return
        if fault == "slow":
            time.sleep(proxy.slow_seconds)
        status, headers, answer = proxy.forward("POST", self.path, body)
        if fault in ("reset", "cut"):
            self._reply_cut(status, answer, headers, reset=fault == "reset")
        elif fault == "malformed":
            self._reply(200, answer[: len(answer) // 2], headers)
        elif fault == "no-choices":
            self._reply(200, json.dumps({"object": "chat.completion", "choices": []}).encode(), {})
        else:
            with contextlib.suppress(OSError):  # a slow answer's client has gone
                self._reply(status, answer, headers)

    def _reply(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        for k, v in headers.items():
            if k.lower() == "retry-after":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reply_cut(self, status: int, body: bytes, headers: Mapping[str, str], reset: bool) -> None:
        """The status line, the headers (with the whole body's length) and half the body, then a
        reset (or a plain close)."""
        self.send_response(status)
        self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.close_connection = True
        if reset:
            self._reset()

    def _reset(self) -> None:
        """Close the connection with a TCP reset (SO_LINGER 0), as a crashed server or a proxy does."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "server_error"}}).encode()


class FaultProxy:
    """``with FaultProxy(upstream, plan) as url:`` a proxy at ``url`` (``http://127.0.0.1:PORT`` and
    the upstream's path, e.g. ``/v1``) in front of ``upstream`` (a base URL, or a
    :class:`~sourcebias.llmcalls.simulated.SimulatedServer`), injecting the faults ``plan`` names
    (see the module). ``plan`` may be changed while it serves (:attr:`plan`)."""

    def __init__(
        self,
        upstream: Any,
        plan: Mapping[int, str] | Plan | None = None,
        *,
        retry_after: float = 1.0,
        slow_seconds: float = 2.0,
        probe_seconds: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 60.0,
    ):
        base = upstream.url if hasattr(upstream, "url") else str(upstream)
        parts = urlsplit(base)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"FaultProxy: the upstream must be http://HOST:PORT/..., got {base}")
        self.upstream = (parts.hostname, parts.port)
        self.prefix = parts.path.rstrip("/")
        self.plan = _as_plan(plan)
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.probe_seconds = probe_seconds
        self.timeout = timeout
        self.injected: Counter[str] = Counter()
        self.requests = 0
        self.forwarded = 0
        self._lock = threading.Lock()
        self._server = _ProxyServer((host, port), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.prefix}"

    def set_plan(self, plan: Mapping[int, str] | Plan | None) -> None:
        """Inject what ``plan`` names from now on (request numbers go on counting)."""
        self.plan = _as_plan(plan)

    def next_fault(self) -> str | None:
        """The fault of the next POST request (counted), or ``None``."""
        with self._lock:
            n = self.requests
            self.requests += 1
            fault = self.plan(n)
            if fault is not None:
                if fault not in FAULTS:
                    raise ValueError(f"FaultProxy: unknown fault '{fault}' (known: {', '.join(FAULTS)})")
                self.injected[fault] += 1
            return fault

    def forward(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` of the upstream's answer to the request; 502 when it cannot be reached."""
        conn = http.client.HTTPConnection(*self.upstream, timeout=self.timeout)
        try:
            conn.request(method, path, body=body or None, headers={"Content-Type": "application/json"} if body else {})
            resp = conn.getresponse()
            data = resp.read()
            if method == "POST":
                with self._lock:
                    self.forwarded += 1
            return resp.status, dict(resp.getheaders()), data
        except (OSError, http.client.HTTPException) as exc:
            return 502, {}, _error(f"upstream unreachable: {type(exc).__name__}")
        finally:
            conn.close()

    def __enter__(self) -> str:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fault-proxy", daemon=True)
        self._thread.start()
        return self.url

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
