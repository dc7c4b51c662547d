"""A small OpenAI-compatible server for a local model: ``sourcebias serve --model smollm2``.

Serves ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``, ``GET /props``
and ``GET /health`` from :class:`~sourcebias.llmcalls.backends.local.LocalBackend`, so that several
workers (``sourcebias generate --base-url ...`` on several machines, notebooks) share one
loaded model, and so that the HTTP client is tested against a real server.

Why hand-written on the standard library: the usual servers (vLLM, llama.cpp's server,
llama-cpp-python) need a GPU or a native build; this one needs nothing beyond the local
backend. It is not a high-throughput server: requests are answered one at a time (the
backend serialises generation), and at most ``max_pending`` requests wait; more get
``429 Too Many Requests`` with ``Retry-After``. Streaming and ``n > 1`` are not supported
(answered with 400).

Request fields honoured: ``model``, ``messages`` / ``prompt``, ``temperature``, ``top_p``,
``max_tokens`` (or ``max_completion_tokens``), ``seed``, and ``logprobs`` / ``top_logprobs`` (chat:
a boolean and 0-20; completions: an integer 0-20), answered with the model's log-probabilities of
each generated token and of the most likely tokens at each step. Answers carry ``finish_reason``
(``stop`` or ``length``), ``usage`` and, when set, a ``system_fingerprint``.

What it says about its model (what a client's answer store records,
:mod:`sourcebias.llmcalls.backends.served`): the ``/v1/models`` entry's ``root`` and ``meta``
(``model_info``) and ``/props``'s ``model_path`` and ``chat_template`` (``props``), as vLLM and
llama.cpp's server do; :class:`~sourcebias.llmcalls.simulated.SimulatedServer` sets them to test
what a client does when a server reports another model.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sourcebias.llmcalls.backends.base import GenerationError, GenerationRequest

DEFAULT_MAX_TOKENS = 512


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.code = code


class GenerationServer(ThreadingHTTPServer):
    """A threading HTTP server that answers OpenAI-style requests with ``backend``.

    ``model_names`` are the names accepted in the ``model`` field (the first is listed by
    ``/v1/models``); requests naming another model get 404, as from OpenAI or vLLM. What the
    server reports about its model (attributes, which may be changed while it serves):
    ``model_info`` (more fields of the ``/v1/models`` entry), ``props`` (``/props``; ``None``: 404
    as from a server without it), ``fingerprint`` (each answer's ``system_fingerprint``) and
    ``response_model`` (each answer's ``model``; default: the name asked for).
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], backend: Any, model_names: list[str], *, max_pending: int = 64, quiet: bool = False):
        super().__init__(address, _Handler)
        self.backend = backend
        self.model_names = model_names
        self.model_info: dict[str, Any] = {}
        self.props: dict[str, Any] | None = None
        self.fingerprint: str | None = None
        self.response_model: str | None = None
        self.max_pending = max_pending
        self.quiet = quiet
        self.pending = 0
        self.served = 0
        self.rejected = 0
        self.started = time.time()
        self._count_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (killed, timed out) is routine for this server: one line, no traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            if not self.quiet:
                sys.stderr.write(f"{client_address[0]} - client disconnected ({type(exc).__name__})\n")
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        if isinstance(host, bytes):  # (typeshed allows bytes addresses; a TCP server has a str host)
            host = host.decode()
        return f"http://{host}:{port}/v1"

    def enter(self) -> bool:
        with self._count_lock:
            if self.pending >= self.max_pending:
                self.rejected += 1
                return False
            self.pending += 1
            return True

    def leave(self) -> None:
        with self._count_lock:
            self.pending -= 1
            self.served += 1


class _Handler(BaseHTTPRequestHandler):
    server: GenerationServer
    protocol_version = "HTTP/1.1"  # keep-alive, as clients pool connections
    server_version = "sourcebias"
    # An answer is written in two parts (headers, then body): with Nagle's algorithm the body waits
    # for the client's delayed ACK of the headers, 40 ms per request on Linux (measured: 46 ms per
    # request against 3.5 ms with it off, issue 40).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    # -- plumbing ---------------------------------------------------------------------------
    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": code, "code": code}}, headers)

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            raise _BadRequest("request body is not valid JSON") from None
        if not isinstance(data, dict):
            raise _BadRequest("request body must be a JSON object")
        return data

    # -- routes -----------------------------------------------------------------------------
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send(
                200,
                {
                    "status": "ok",
                    "model": self.server.model_names[0],
                    "pending": self.server.pending,
                    "served": self.server.served,
                    "rejected": self.server.rejected,
                },
            )
        elif path == "/v1/models":
            entry = {
                "id": self.server.model_names[0],
                "object": "model",
                "created": int(self.server.started),
                "owned_by": "sourcebias",
                **self.server.model_info,
            }
            self._send(200, {"object": "list", "data": [entry]})
        elif path == "/props" and self.server.props is not None:
            self._send(200, self.server.props)
        else:
            self._error(404, f"no route GET {path}", "not_found")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._error(404, f"no route POST {path}", "not_found")
            return
        try:
            body = self._read_json()
            request = self._parse(body, chat=path.endswith("chat/completions"))
        except _BadRequest as exc:
            self._error(exc.status, str(exc), exc.code)
            return
        if not self.server.enter():
            self._error(429, f"server busy: {self.server.max_pending} requests already waiting", "rate_limit_exceeded", {"Retry-After": "1"})
            return
        try:
            result = self.server.backend.generate(request)
        except GenerationError as exc:
            self._error(400 if not exc.retryable else 500, str(exc), "invalid_request_error" if not exc.retryable else "server_error")
            return
        except Exception as exc:  # a failure of the model is the server's, reported as 500
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")
            return
        finally:
            self.server.leave()
        usage = {
            "prompt_tokens": result.prompt_tokens or 0,
            "completion_tokens": result.completion_tokens or 0,
            "total_tokens": (result.prompt_tokens or 0) + (result.completion_tokens or 0),
        }
        created = int(time.time())
        model = self.server.response_model or body.get("model") or self.server.model_names[0]
        if path.endswith("chat/completions"):
            logprobs = None if result.logprobs is None else {"content": result.logprobs}
            choice = {"index": 0, "message": {"role": "assistant", "content": result.text}, "finish_reason": result.finish_reason, "logprobs": logprobs}
            payload = {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [choice],
                "usage": usage,
            }
        else:
            choice = {"index": 0, "text": result.text, "finish_reason": result.finish_reason, "logprobs": _legacy_logprobs(result.logprobs)}
            payload = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": created, "model": model, "choices": [choice], "usage": usage}
        if self.server.fingerprint is not None:
            payload["system_fingerprint"] = self.server.fingerprint
        self._send(200, payload)

    def _parse(self, body: dict[str, Any], *, chat: bool) -> GenerationRequest:
        model = body.get("model")
        if model is not None and model not in self.server.model_names:
            raise _BadRequest(f"The model '{model}' does not exist; this server serves '{self.server.model_names[0]}'", 404, "model_not_found")
        if body.get("stream"):
            raise _BadRequest("streaming is not supported by this server")
        if int(body.get("n", 1) or 1) != 1:
            raise _BadRequest("only n=1 is supported")
        temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
        top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
        if top_p == 0.0:
            raise _BadRequest("top_p must be greater than 0")
        max_tokens = body.get("max_completion_tokens")
        if max_tokens is None:
            max_tokens = body.get("max_tokens")
        if max_tokens is None:  # absent or null: the server's default
            max_tokens = DEFAULT_MAX_TOKENS
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _BadRequest("max_tokens must be a positive integer")
        seed = body.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise _BadRequest("seed must be an integer")
        top_logprobs = _logprobs_request(body, chat)
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise _BadRequest("'messages' must be a non-empty list")
            clean: list[dict[str, str]] = []
            for m in messages:
                if not isinstance(m, dict) or "role" not in m:
                    raise _BadRequest("each message needs a 'role' and 'content'")
                clean.append({"role": str(m["role"]), "content": _content_text(m.get("content"))})
            prompt = clean[-1]["content"]
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1:
                prompt = prompt[0]
            if not isinstance(prompt, str):
                raise _BadRequest("'prompt' must be a string")
            clean = []
        return GenerationRequest(
            key=uuid.uuid4().hex[:8],
            messages=clean,
            prompt=prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            top_logprobs=top_logprobs,
        )


def _logprobs_request(body: dict[str, Any], chat: bool) -> int | None:
    """``None`` (no log-probabilities) or how many top tokens per step: chat requests send
    ``logprobs: true`` and ``top_logprobs: k``; completions send ``logprobs: k``."""
    raw = body.get("logprobs")
    if chat:
        if raw is None or raw is False:
            if body.get("top_logprobs"):
                raise _BadRequest("'top_logprobs' needs 'logprobs': true")
            return None
        if raw is not True:
            raise _BadRequest("'logprobs' must be a boolean")
        k = body.get("top_logprobs") or 0
    else:
        if raw is None:
            return None
        k = raw
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 20:
        raise _BadRequest("'top_logprobs' must be an integer in [0, 20]")
    return k


def _legacy_logprobs(content: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The completions API's ``logprobs`` object from the chat format's ``content`` list."""
    if content is None:
        return None
    return {
        "tokens": [t["token"] for t in content],
        "token_logprobs": [t["logprob"] for t in content],
        "top_logprobs": [{e["token"]: e["logprob"] for e in t["top_logprobs"]} for t in content],
    }


def _number(body: dict[str, Any], name: str, default: float, lo: float, hi: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value <= hi:
        raise _BadRequest(f"'{name}' must be a number in [{lo}, {hi}]")
    return float(value)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")
    if content is None:
        return ""
    raise _BadRequest("message 'content' must be a string or a list of text parts")


def make_server(
    backend: Any, *, host: str = "127.0.0.1", port: int = 8000, model_names: list[str] | None = None, max_pending: int = 64, quiet: bool = False
) -> GenerationServer:
    """A bound (not yet serving) :class:`GenerationServer`; call ``serve_forever()`` on it. A
    :class:`~sourcebias.llmcalls.backends.local.LocalBackend` is reported as vLLM and llama.cpp
    report theirs: the model's name and weights digest (``root``, ``meta``), its resolved path and
    chat template (``/props``)."""
    names = list(dict.fromkeys(model_names or [backend.model]))
    server = GenerationServer((host, port), backend, names, max_pending=max_pending, quiet=quiet)
    if getattr(backend, "kind", None) == "local":
        from sourcebias.models.llm import resolve_lm

        server.model_info = {"root": backend.model, "meta": {"weights": backend.weights()}}
        server.props = {"model_path": resolve_lm(backend.model), "chat_template": getattr(backend.tokenizer, "chat_template", None) or ""}
    return server
