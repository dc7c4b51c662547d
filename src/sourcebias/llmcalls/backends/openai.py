"""OpenAI-compatible HTTP backend (vLLM, llama.cpp server, TGI, ``sourcebias serve``, OpenAI).

Written on httpx rather than the ``openai`` package because rewriting a corpus needs three
things that package does not give together: a pool of several base URLs (replicas on several
machines) with least-busy selection, retries that move to another server, and no hidden
retry/timeout defaults that would make the run's behaviour hard to state in the manifest.

Retries: 429, 5xx and network errors (refused connection, reset, timeout) are retried with
exponential backoff and jitter, honouring ``Retry-After``; other 4xx answers (bad request,
authentication, unknown model) are not, since repeating them cannot succeed.

The API key is read from an environment variable and kept only in the request header: it is
never part of :meth:`OpenAIBackend.describe`, of error messages or of any file.
"""

from __future__ import annotations

import email.utils
import os
import random
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls.backends.base import GenerationError, GenerationRequest, GenerationResult, estimate_tokens, redact_url_credentials
from sourcebias.llmcalls.backends.served import Probe, probe

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
RETRY_STATUS = {408, 409, 425, 429}
#: requests in flight per server of the pool when no concurrency is given (a pool of N servers: 4 N)
CONCURRENCY_PER_SERVER = 4


def normalize_base_url(url: str) -> str:
    """Check a base URL and return it without a trailing slash.

    ``http://host:8000`` becomes ``http://host:8000/v1`` (the path every OpenAI-compatible
    server serves); a URL with a path (``https://api.openai.com/v1``, a proxy prefix) is kept.
    """
    raw = url.strip()
    try:
        parsed = httpx.URL(raw)
    except Exception:
        raise ConfigError(f"--base-url '{url}' is not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"--base-url '{url}' must look like http://HOST:PORT/v1 (scheme http or https and a host)")
    base = raw.rstrip("/")
    if parsed.path in ("", "/"):
        base += "/v1"
    return base


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or ``None``."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class _Server:
    url: str
    in_flight: int = 0
    failures: int = 0  # consecutive
    down_until: float = 0.0
    requests: int = 0
    errors: int = 0
    verified: bool = False  # its report compared with the answer store's (reset when it fails)
    refused: bool = False  # its last connection was refused (nothing listening)
    responded: bool = False  # it has given an HTTP answer (of any status)


class OpenAIBackend:
    """Chat (``/chat/completions``) or plain (``/completions``) requests to a pool of servers.

    Parameters
    ----------
    base_urls:
        One or more base URLs (``http://host:8000/v1``); requests go to the least busy server
        that is not cooling down after a failure (ties broken round-robin).
    model:
        The model name sent in each request (as the server knows it).
    api_key_env:
        Environment variable holding the API key. With the default (``OPENAI_API_KEY``) a
        missing variable means no ``Authorization`` header (local servers need none); when
        ``require_api_key`` is set (the user named the variable) a missing one is an error.
    concurrency:
        Requests in flight at once over the whole pool (default: :data:`CONCURRENCY_PER_SERVER`
        per server, so that a pool of N servers is N times as fast as one).
    timeout, connect_timeout:
        Seconds for one request (read) and for opening a connection.
    max_retries:
        Retries after the first attempt (so ``max_retries + 1`` attempts in all).
    backoff_base, backoff_max:
        Delay before retry ``i`` is drawn from ``[d/2, d]`` with ``d = min(backoff_max, backoff_base * 2**i)``;
        a ``Retry-After`` header replaces it (capped at ``retry_after_max``). A server that failed
        ``n`` times in a row is left out of the pool for at least ``min(backoff_max,
        backoff_base * 2**(n-1))`` seconds (a dead server of a pool is asked less and less often
        while the others answer its share).
    chat:
        ``True``: chat completions with messages (the server applies the model's chat template);
        ``False``: completions with the rendered prompt (base models).
    startup_attempts:
        Attempts of a request refused by every server before any server has answered (then it
        fails: nothing is listening there).
    what:
        Where the user named the model and servers (``--judge openai:M@URL``, a stage spec),
        named in errors.

    ``retries`` counts the retries of every request (429, 5xx, network faults).
    """

    kind = "openai"

    def __init__(
        self,
        base_urls: list[str] | str,
        model: str,
        *,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        require_api_key: bool = False,
        concurrency: int | None = None,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        max_retries: int = 8,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_max: float = 120.0,
        chat: bool = True,
        startup_attempts: int = 3,
        what: str = "",
    ):
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ConfigError("give at least one --base-url")
        if concurrency is not None and concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        self.model = model
        self.chat = chat
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.timeout = timeout
        self.startup_attempts = max(1, startup_attempts)
        self.what = what
        self.retries = 0
        self._answered = False  # has any server of the pool answered a request?
        self._expected: dict[str, Any] | None = None
        self._probed: dict[str, Probe] = {}
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env)
        if require_api_key and not key:
            raise ConfigError(f"environment variable {api_key_env} (named by --api-key-env) is not set")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._servers = [_Server(normalize_base_url(u)) for u in dict.fromkeys(urls)]
        self.concurrency = concurrency or CONCURRENCY_PER_SERVER * len(self._servers)
        self._lock = threading.Lock()
        self._rr = 0
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # one connection per request in flight over the pool (idle ones to other servers are closed first)
            limits=httpx.Limits(max_connections=self.concurrency + 4, max_keepalive_connections=self.concurrency),
            headers={"User-Agent": "sourcebias"},
            # a request goes out in two writes (headers, body): without TCP_NODELAY the body may wait
            # for the server's delayed ACK (curl and asyncio's servers set it too)
            transport=httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]),
        )

    # -- pool -------------------------------------------------------------------------------
    @property
    def base_urls(self) -> list[str]:
        return [s.url for s in self._servers]

    def _acquire(self, avoid: _Server | None = None) -> _Server:
        """The least busy server not cooling down (ties round-robin); a retry (``avoid``: the server
        its last attempt failed on) goes to another one when another is up."""
        with self._lock:
            now = time.monotonic()
            up = [s for s in self._servers if s.down_until <= now] or sorted(self._servers, key=lambda s: s.down_until)[:1]
            if avoid is not None and len(up) > 1:
                up = [s for s in up if s is not avoid] or up
            n = len(self._servers)
            order = {id(s): (self._servers.index(s) - self._rr) % n for s in up}
            server = min(up, key=lambda s: (s.in_flight, order[id(s)]))
            self._rr = (self._servers.index(server) + 1) % n
            server.in_flight += 1
            server.requests += 1
            return server

    def _release(self, server: _Server, ok: bool, cooldown: float = 0.0, busy: bool = False) -> None:
        with self._lock:
            server.in_flight -= 1
            if ok:
                server.failures = 0
                server.down_until = 0.0
            else:
                server.failures += 1
                server.errors += 1
                if not busy:  # a server failing in a row is kept out longer each time (a busy one is healthy)
                    cooldown = max(cooldown, min(self.backoff_max, self.backoff_base * 2 ** (server.failures - 1)))
                server.down_until = max(server.down_until, time.monotonic() + cooldown)

    def _delay(self, attempt: int) -> float:
        d = min(self.backoff_max, self.backoff_base * (2**attempt))
        return d / 2 + random.uniform(0, d / 2)

    # -- requests ---------------------------------------------------------------------------
    def _body(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": int(request.max_tokens),
        }
        if request.seed is not None:
            body["seed"] = int(request.seed)
        k = request.top_logprobs
        if self.chat:
            body["messages"] = request.messages
            if k is not None:
                body["logprobs"] = True
                if k > 0:
                    body["top_logprobs"] = int(k)
            return "/chat/completions", body
        body["prompt"] = request.prompt
        if k is not None:
            body["logprobs"] = int(k)  # the legacy completions API: an integer
        return "/completions", body

    def _parse(self, data: Any) -> GenerationResult:
        try:
            choice = data["choices"][0]
            if self.chat:
                text = (choice.get("message") or {}).get("content") or ""
            else:
                text = choice.get("text") or ""
            usage = data.get("usage") or {}
            return GenerationResult(
                text=str(text),
                finish_reason=choice.get("finish_reason"),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                logprobs=parse_logprobs(choice.get("logprobs")),
                model=_text_or_none(data.get("model")),
                system_fingerprint=_text_or_none(data.get("system_fingerprint")),
            )
        except (KeyError, IndexError, TypeError, AttributeError):
            raise GenerationError(f"malformed response (no choices[0]): {str(data)[:200]}", retryable=True) from None

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Send one request, retrying transient failures; raises :class:`GenerationError` when it gives up.

        Before any server of the pool has answered, a refused connection (nothing listening) is
        tried only ``startup_attempts`` times in all: a wrong URL or a server not started fails
        in seconds, naming the URL. Once a server has answered, refused connections are retried
        like the other transient faults (a server restarting mid-run)."""
        path, body = self._body(request)
        t0 = time.perf_counter()
        last, failed_on = "no attempt", None
        for attempt in range(self.max_retries + 1):
            server = failed_on = self._acquire(failed_on)
            result, last, wait, refused = self._attempt(server, path, body, self._delay(attempt))
            if result is not None:
                result.seconds, result.attempts, result.server = time.perf_counter() - t0, attempt + 1, server.url
                return result
            if refused and attempt + 1 >= self.startup_attempts and self._nothing_listening():
                urls = ", ".join(redact_url_credentials(u) for u in self.base_urls)
                raise GenerationError(
                    f"nothing answers at {urls} (connection refused, {attempt + 1} attempts over {time.perf_counter() - t0:.1f} s): "
                    f"start the server or correct the URL{self._named_by()}",
                    retryable=False,
                    attempts=attempt + 1,
                )
            if attempt < self.max_retries:
                with self._lock:
                    self.retries += 1
                time.sleep(wait)
        raise GenerationError(f"gave up after {self.max_retries + 1} attempts; last error: {last}", retryable=True, attempts=self.max_retries + 1)

    def _nothing_listening(self) -> bool:
        """No server of the pool has ever answered, and each refused its last connection."""
        with self._lock:
            return not self._answered and all(s.refused and not s.responded for s in self._servers)

    def _attempt(self, server: _Server, path: str, body: dict[str, Any], wait: float) -> tuple[GenerationResult | None, str, float, bool]:
        """One try on ``server``: ``(result or None, the error, the wait before the next try,
        whether the connection was refused)``; raises :class:`GenerationError` when repeating
        cannot help (a 4xx other than 408/409/425/429, a server now serving another model)."""
        try:
            resp = self._client.post(server.url + path, json=body, headers=self._headers)
        except httpx.TransportError as exc:  # refused, reset, timeout, broken keep-alive connection
            server.verified = False  # it may come back with another model
            server.refused = isinstance(exc, httpx.ConnectError)
            self._release(server, ok=False, cooldown=wait)
            return None, redact_url_credentials(f"{server.url}: {type(exc).__name__}: {exc}".rstrip(": ")), wait, server.refused
        server.refused, server.responded = False, True
        status = resp.status_code
        if status == 200:
            try:
                result = self._parse(resp.json())
            except (ValueError, GenerationError) as exc:
                self._release(server, ok=False, cooldown=wait)
                return None, redact_url_credentials(f"{server.url}: {exc}"), wait, False
            self._release(server, ok=True)
            self._answered = True
            if self._expected is not None and not server.verified:
                self._verify(server)
            return result, "", 0.0, False
        last = redact_url_credentials(f"{server.url}: HTTP {status}: {_error_message(resp)}")
        if status in RETRY_STATUS or status >= 500:
            after = parse_retry_after(resp.headers.get("Retry-After"))
            if after is not None:
                wait = min(after, self.retry_after_max)
            # A busy server (429) is healthy: only keep it out of the pool for the wait.
            self._release(server, ok=False, cooldown=wait, busy=status == 429)
            return None, last, wait, False
        self._release(server, ok=True)
        named = f" It was named by {self.what}." if self.what else ""
        hint = f" (is '{self.model}' a name this server knows?{named})" if status == 404 else ""
        raise GenerationError(last + hint, retryable=False)

    def _named_by(self) -> str:
        return f"; it was named by {self.what}" if self.what else ""

    # -- what the servers serve --------------------------------------------------------------
    def probe(self, timeout: float = 5.0) -> list[Probe]:
        """Ask every server what it serves as ``model`` (:mod:`sourcebias.llmcalls.backends.served`)."""
        return [probe(self._client, s.url, self.model, self._headers, timeout) for s in self._servers]

    def expect(self, identity: dict[str, Any] | None) -> None:
        """From now on, check every server once (and again after it failed) against ``identity``,
        what it reported when the answer store was made: one that reports otherwise stops the
        run (:class:`GenerationError`, not retried). Servers that answered ``identity`` already are
        marked checked by :meth:`mark_verified`."""
        self._expected = identity

    def mark_verified(self, urls: Sequence[str]) -> None:
        """Servers whose report was just compared (by the client that opened the store)."""
        with self._lock:
            for s in self._servers:
                if s.url in urls:
                    s.verified = True

    def _verify(self, server: _Server) -> None:
        # The server has just answered, so it is up; a busy one (llama.cpp's Python server runs one
        # request at a time) answers GET /models after its calls in flight: wait as long as for a call.
        report = probe(self._client, server.url, self.model, self._headers, self.timeout)
        if report.identity is not None and report.identity == self._expected:
            server.verified = True
            return
        if report.status in ("refused", "unreachable"):  # no report: not a sign of another model
            raise GenerationError(
                f"{redact_url_credentials(server.url)} answered but could not be asked what it serves as '{self.model}' ({report.note}); "
                f"that answer is not stored: a rerun sends it again{self._named_by()}",
                retryable=True,
            )
        got = report.identity if report.identity is not None else report.note
        raise GenerationError(
            f"{redact_url_credentials(server.url)} now reports {got} for '{self.model}', not what its answers were stored with "
            f"({self._expected}): the model behind the name changed; its answers are not mixed with the stored ones{self._named_by()}",
            retryable=False,
        )

    # -- checks and bookkeeping --------------------------------------------------------------
    def check(self, timeout: float = 5.0) -> dict[str, tuple[bool, str]]:
        """``GET /models`` on every server (a quick start-up check): ``{url: (usable, note)}``.

        Unreachable servers and refused credentials (401/403) are not usable; a server without
        ``/models`` (404) or not listing the model is usable with a note (some providers alias
        names or do not implement the listing).
        """
        out: dict[str, tuple[bool, str]] = {}
        for report in self.probe(timeout):
            self._probed[report.url] = report
            out[redact_url_credentials(report.url)] = (report.usable, report.note)
        return out

    def require_usable(self, timeout: float = 5.0) -> list[str]:
        """Check every server (:meth:`check`) before any work.

        Returns:
            A warning line for each usable server whose check noted something.

        Raises:
            ConfigError: when no server is usable (the backend is closed first).
        """
        checks = self.check(timeout)
        if not any(usable for usable, _ in checks.values()):
            self.close()
            raise ConfigError("no server is usable: " + "; ".join(f"{u}: {note}" for u, (_, note) in checks.items()))
        return [f"{url}: {note}" for url, (_, note) in checks.items() if note != "ok"]

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def stats(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {redact_url_credentials(s.url): {"requests": s.requests, "errors": s.errors} for s in self._servers}

    def served(self) -> dict[str, Any]:
        """What each checked server reported serving (``{url: identity or note}``)."""
        return {redact_url_credentials(u): p.identity if p.status == "ok" else p.note for u, p in self._probed.items()}

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.kind,
            "model": self.model,
            "base_urls": [redact_url_credentials(u) for u in self.base_urls],
            "api": "chat/completions" if self.chat else "completions",
            "api_key_env": self.api_key_env,
            "api_key_set": bool(self._headers),
            "concurrency": self.concurrency,
            "timeout_s": self.timeout,
            "max_retries": self.max_retries,
            "backoff_s": {"base": self.backoff_base, "max": self.backoff_max},
            "requests": self.stats(),
            "retries": self.retries,
            **({"served": self.served()} if self._probed else {}),
        }

    def close(self) -> None:
        self._client.close()


def parse_logprobs(raw: Any) -> list[dict[str, Any]] | None:
    """A choice's ``logprobs`` in the chat format (``{"content": [{"token", "logprob",
    "top_logprobs": [{"token", "logprob"}]}]}``) or the legacy completions format (``{"tokens",
    "token_logprobs", "top_logprobs": [{token: logprob}]}``) as the chat format's ``content``
    list; ``None`` when the server sent none."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("content"), list):
        out = []
        for t in raw["content"]:
            top = [{"token": str(e["token"]), "logprob": float(e["logprob"])} for e in t.get("top_logprobs") or []]
            out.append({"token": str(t["token"]), "logprob": float(t["logprob"]), "top_logprobs": top})
        return out
    tokens = raw.get("tokens")
    if not isinstance(tokens, list):
        return None
    lps = raw.get("token_logprobs") or [None] * len(tokens)
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    return [
        {
            "token": str(tok),
            "logprob": float(lp) if lp is not None else float("nan"),
            "top_logprobs": [{"token": str(k), "logprob": float(v)} for k, v in (top or {}).items()],
        }
        for tok, lp, top in zip(tokens, lps, tops)
    ]


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
    except ValueError:
        pass
    return (resp.text or resp.reason_phrase or "")[:300]


def _text_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and str(value) else None
