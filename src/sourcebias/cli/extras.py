"""Which optional extras each command needs, checked before the command does anything.

A command whose work needs an extra (``train`` PyTorch, ``power`` its figure's matplotlib, ``bench
--ray`` Ray) is refused on a core install with one line naming the extra to install, before any
file is read or written (:func:`sourcebias.core.extras.require`). What depends on a retriever's
kind (``-r minilm``) is checked by the retriever registry when the specification is checked;
``evaluate`` needs no extra (its figure, without matplotlib, is left out with a note that the
terminal shows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: one need: (extra, the extra's modules the command imports; empty: all of the extra's)
Need = tuple[str, tuple[str, ...]]
NEURAL: Need = ("neural", ())
FIGURES: Need = ("analysis", ("matplotlib",))


def _model(option: str, *more: Need) -> Callable[[dict[str, Any]], list[Need]]:
    """The needs of a command whose ``option`` is a model spec (the server client's httpx or a
    local model's PyTorch), and ``more``; a malformed spec is left for the command to refuse."""

    def needs(params: dict[str, Any]) -> list[Need]:
        from sourcebias.core.errors import ConfigError
        from sourcebias.llmcalls.spec import required_extra

        try:
            return [required_extra(str(params.get(option) or "")), *more]
        except ConfigError:
            return list(more)

    return needs


def _generate(params: dict[str, Any]) -> list[Need]:
    backend = str(getattr(params.get("backend"), "value", params.get("backend")) or "")
    if backend == "openai" or params.get("base_url"):  # the 0.2.0 form (deprecated)
        return [("generate", ())]
    return _model("model")(params)


def _ray(params: dict[str, Any]) -> list[Need]:
    return [("ray", ())] if params.get("ray") else []


#: command name (sub-commands as ``"analyze quality"``) -> its needs, or a function of its parameters
COMMAND_EXTRAS: dict[str, list[Need] | Callable[[dict[str, Any]], list[Need]]] = {
    "train": [NEURAL],
    "serve": [("neural", ("torch", "transformers"))],
    "generate": _generate,
    "judge": _model("judge", FIGURES),
    "cite": lambda params: _model("generator")(params) + ([FIGURES] if params.get("output") else []),
    "detect": [("neural", ("torch", "transformers"))],
    "audit": [FIGURES],
    "power": [FIGURES],
    "simulate": lambda params: [("analysis", ("matplotlib", "sacrebleu")), *_ray(params)],
    "bench": _ray,
    "cdc fit": [NEURAL, ("analysis", ("linearmodels",))],
    "project fit": [NEURAL],
    **{f"analyze {name}": [NEURAL, FIGURES] for name in ("quality", "spectrum", "perplexity", "artifacts", "direction", "decompose", "compare-directions")},
    "analyze length": lambda params: [FIGURES, *([("neural", ("transformers",))] if params.get("tokenizer") else [])],
}


def require_command_extras(command: str, params: dict[str, Any]) -> None:
    """Refuse ``command`` when an extra it needs is not installed (one line naming the extra).

    Args:
        command: The command's name (``"power"``, ``"cdc fit"``).
        params: Its parsed parameters (some needs depend on them: ``--ray``, ``--backend``).

    Raises:
        ExtraMissingError: An extra is missing.
    """
    from sourcebias.core.extras import require

    needs = COMMAND_EXTRAS.get(command, [])
    for extra, modules in needs(params) if callable(needs) else needs:
        require(extra, f"sourcebias {command}", modules)
