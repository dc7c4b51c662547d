"""What the LLM re-rankers (``llm-yesno:``, ``rankgpt:``) share: their options, the client they
open (:mod:`sourcebias.llmcalls`: a local model or OpenAI-compatible servers, every answer
cached), how a passage is cut, and the regression that separates the effect of a document's
position in the prompt from the effect of its source.

Passages are cut by *words*, not tokens: a server gives no tokenizer, and the same cut must
reach a local model and a server (RankGPT cuts passages to their first 300 words the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebias.retrieval.specs import Param

DEFAULT_WORDS = 300


def model_extra(spec: str, stage: str) -> tuple[str, tuple[str, ...]]:
    """The extra a stage's model spec needs (a malformed spec is refused here, naming the stage)."""
    from sourcebias.llmcalls.spec import parse_model_spec, required_extra

    return required_extra(parse_model_spec(spec, what=stage))


#: options of every LLM re-ranker; the command-wide ``--rerank-depth``, ``--device``,
#: ``--cache-dir`` / ``--no-cache`` apply when a stage does not set them
LLM_PARAMS = {
    "model": Param(str, "smollm2, gemma3, a GGUF/folder/HF name, or openai:MODEL@http://HOST:PORT/v1", required=True, extra_of=model_extra),
    "depth": Param(int, "documents re-ranked per query", default=100, option="rerank_depth"),
    "words": Param(int, "words of each passage shown to the model", default=DEFAULT_WORDS),
    "concurrency": Param(int, "requests in flight against servers (default 4 per server)"),
    "device": Param(str, "cpu, cuda (local models)", option="device"),
    "cache_dir": Param(str, "answer store root (default: the sourcebias cache)", option="cache_dir"),
    "cache": Param(bool, "keep every answer on disk (reruns send only what is missing)", default=True, option="cache"),
}


def cut_words(text: str, words: int) -> str:
    """The first ``words`` words of ``text`` (white space normalised)."""
    return " ".join(text.split()[:words])


def open_llm(params: dict[str, Any], what: str = "model=") -> Any:
    """The :mod:`sourcebias.llmcalls` client a stage's options name (``what``: the stage's spec,
    named in errors)."""
    from sourcebias.llmcalls import open_client

    cache_dir = params.get("cache_dir")
    return open_client(
        params["model"],
        cache_dir=cache_dir if cache_dir not in (None, False) else None,
        cache=bool(params.get("cache", True)) and cache_dir is not False,
        concurrency=params.get("concurrency"),
        device=params.get("device"),
        what=what,
    )


def position_source_fit(query: Sequence[str], input_pos: Sequence[float], output_pos: Sequence[float], source: Sequence[str], reference: str) -> dict[str, Any]:
    """Output position on input position and source, OLS with query-clustered standard errors.

    Positions are scaled to [0, 1] within their window (0 = first shown / ranked first). The
    ``position`` slope is 1 when the model copies the order it was shown and 0 when position does
    not matter; a source's coefficient is how much lower (negative: nearer the top) its documents
    end in the window than ``reference`` documents shown at the same position. With one input
    order (``orders=1``) the shown order is the previous stage's, so position and source can be
    confounded; shuffled orders (``orders>=3``) make position independent of source.
    """
    import pandas as pd
    import statsmodels.formula.api as smf

    df = pd.DataFrame({"q": list(query), "x": np.asarray(input_pos, float), "y": np.asarray(output_pos, float), "src": list(source)})
    others = sorted(set(df["src"]) - {reference})
    out: dict[str, Any] = {
        "method": "OLS of output position on input position and source, standard errors clustered by query",
        "reference_source": reference,
        "rows": len(df),
        "queries": int(df["q"].nunique()),
    }
    if df["q"].nunique() < 2 or len(df) < 3 + len(others):
        out["refused"] = "fewer than 2 queries or too few rows: no clustered standard errors"
        return out
    terms = ["x"] + [f"s{i}" for i in range(len(others))]
    for i, s in enumerate(others):
        df[f"s{i}"] = (df["src"] == s).astype(float)
    fit = smf.ols("y ~ " + " + ".join(terms), data=df).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(df["q"])[0]})
    ci = fit.conf_int(0.05)
    names = {"x": "position", **{f"s{i}": f"source:{s}" for i, s in enumerate(others)}}
    out["coefficients"] = {
        names[t]: {"estimate": float(fit.params[t]), "ci95": [float(ci.loc[t, 0]), float(ci.loc[t, 1])], "p": float(fit.pvalues[t])} for t in terms
    }
    return out
