"""What an OpenAI-compatible server says about the model it serves: the part of an answer store's
identity that only the server knows (issue: a model swapped behind the same name must not be served
the old model's answers).

A server is asked when a client opens, and again after it failed (it may have been restarted with
another model):

* ``GET /v1/models``: the entry whose ``id`` is the model asked for; of it, the fields that name the
  model rather than the server's start: ``id``, vLLM's ``root`` (the model's path or hub name) and
  ``parent``, llama.cpp's ``meta`` (parameters, size in bytes, vocabulary, training context). Left
  out: ``created`` (when the server started), ``object``, ``owned_by``, vLLM's ``permission`` (ids
  and times of its own).
* ``GET /props`` (llama.cpp's own server, ``sourcebias serve``): ``model_path``, and a digest of the
  ``chat_template`` (it shapes every prompt). Left out: ``build_info`` (the server's build, recorded
  with each answer as its ``system_fingerprint``) and the generation defaults (every request sets
  what it uses).

What cannot be asked: llama-cpp-python's server lists only its alias (``--model_alias``, by default
the path given to ``--model``) and has no ``/props``; OpenAI lists only names. Behind such a server a
model swapped under the same name is seen only through its answers' ``model`` (checked by the answer
store) — so name a model after its file (and quantisation) there.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

#: fields of a ``/v1/models`` entry that name the model (not the server's start)
MODEL_FIELDS = ("id", "root", "parent", "meta")
#: fields of llama.cpp's ``/props`` that name the model
PROPS_FIELDS = ("model_path",)


@dataclass
class Probe:
    """What one server answered. ``status``: ``ok`` (``identity`` holds what it reported),
    ``refused`` (nothing listening: connection refused), ``unreachable`` (other network errors,
    time-outs), ``denied`` (HTTP 401/403), ``unlisted`` (the model is not among those it lists),
    ``unknown`` (it answered, but no model list, or an empty one: its ``identity`` is then
    ``{"models": None}``, all that can be known)."""

    url: str
    status: str
    note: str = "ok"
    identity: dict[str, Any] | None = None
    listed: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Whether requests may go to this server (an unlisted or unknown model list still may)."""
        return self.status in ("ok", "unlisted", "unknown")


def root_url(base_url: str) -> str:
    """``http://h:p/v1`` -> ``http://h:p`` (where llama.cpp serves ``/props``)."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def model_entry(data: Any, model: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The ``/v1/models`` entry of ``model`` (its identifying fields) and every listed id."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None, []
    ids = [str(e.get("id")) for e in entries if isinstance(e, dict)]
    for e in entries:
        if isinstance(e, dict) and str(e.get("id")) == model:
            return {k: e[k] for k in MODEL_FIELDS if e.get(k) is not None}, ids
    return None, ids


def props_identity(data: Any) -> dict[str, Any]:
    """The identifying fields of a ``/props`` answer (empty when it has none)."""
    if not isinstance(data, dict):
        return {}
    out = {k: data[k] for k in PROPS_FIELDS if isinstance(data.get(k), str) and data[k]}
    template = data.get("chat_template")
    if isinstance(template, str) and template:
        out["chat_template_sha256"] = hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
    return out


def probe(client: Any, base_url: str, model: str, headers: dict[str, str], timeout: float) -> Probe:
    """Ask the server at ``base_url`` (an ``httpx.Client`` is used) what it serves as ``model``."""
    import httpx

    try:
        r = client.get(base_url + "/models", headers=headers, timeout=timeout)
    except httpx.ConnectError as exc:
        return Probe(base_url, "refused" if "refused" in str(exc).lower() else "unreachable", f"unreachable ({type(exc).__name__})")
    except httpx.TransportError as exc:
        return Probe(base_url, "unreachable", f"unreachable ({type(exc).__name__})")
    if r.status_code in (401, 403):
        return Probe(base_url, "denied", f"HTTP {r.status_code} on GET /models (check the API key)")
    unknown = {"models": None}
    if r.status_code != 200:
        return Probe(base_url, "unknown", f"GET /models answered HTTP {r.status_code}", identity=unknown)
    try:
        entry, ids = model_entry(r.json(), model)
    except ValueError:
        return Probe(base_url, "unknown", "ok", identity=unknown)  # no model list to read (a usable server, as before)
    if entry is None and ids:
        return Probe(base_url, "unlisted", f"model '{model}' not listed (served: {', '.join(ids[:5])})", listed=ids)
    if entry is None:
        return Probe(base_url, "unknown", "ok", identity=unknown)  # an empty list: nothing to check
    identity: dict[str, Any] = {"models": entry}
    try:
        p = client.get(root_url(base_url) + "/props", headers=headers, timeout=timeout)
        props = props_identity(p.json()) if p.status_code == 200 else {}
    except httpx.TransportError as exc:  # no answer is not "no /props": the report would differ from the stored one
        return Probe(base_url, "unreachable", f"unreachable on GET /props ({type(exc).__name__})", listed=ids)
    except ValueError:
        props = {}
    if props:
        identity["props"] = props
    return Probe(base_url, "ok", identity=identity, listed=ids)
