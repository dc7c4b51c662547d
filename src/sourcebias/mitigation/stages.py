"""Mitigations as retrieval stages: ``--retriever "minilm>>cdc:FIT.json"``.

``cdc:FIT.json`` is the causal correction of Causal Diagnosis and Correction (Perplexity Trap, Dai et al., 2025, arXiv 2503.08684, Eq. 3): each
candidate's score becomes ``R̂(q, d) − β̂₂ · P(d)``, with ``β̂₂`` from a fit written by
``sourcebias cdc fit`` and ``P(d)`` the document's log-perplexity under the language model
named in the fit, on the document field named in the fit (``text`` or ``title+text``; a fit
written before the field was recorded was fitted on ``title+text``, and is applied so) (computed
once per text and kept in the store, like embeddings). Unlike the
reference code, which corrected only the saved top 5, the whole candidate list of the stage
before it (its top ``depth``, 100 by default) is corrected and re-ordered, ties by the tie rule.

This module registers the ``cdc`` stage through the entry point ``sourcebias.plugins`` (the
retrieval layer does not know mitigations).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.base import Stage
from sourcebias.retrieval.run import Run
from sourcebias.retrieval.specs import Param, register_stage
from sourcebias.retrieval.stages import append_stage_info
from sourcebias.retrieval.ties import TieRule


def read_cdc_fit(path: str | Path) -> dict[str, Any]:
    """The fit written by ``sourcebias cdc fit`` (``cdc.json``, or its folder)."""
    from sourcebias.core.atomic import read_json_file

    path, fit = read_json_file(
        path, default_name="cdc.json", missing="CDC fit not found (write one with: sourcebias cdc fit DATASET --retriever SPEC --lm SPEC -o OUT)"
    )
    for key in ("beta", "lm"):
        if key not in fit:
            raise DataError(path, f"not a CDC fit: no '{key}'")
    fit["_path"] = str(path)
    return fit


class CDCCorrection(Stage):
    """``score − beta · log-perplexity(document)``, re-ranked (see the module docstring).

    Parameters
    ----------
    beta:
        The causal effect of perplexity on the retriever's score (β̂₂ of the 2SLS fit).
    lm:
        The language model of the perplexities (``lm:NAME``, ``mlm:NAME`` or ``mlm:from-retriever:SPEC``, as in the fit).
    field:
        The document field scored (``text`` or ``title+text``, as in the fit).
    depth:
        Candidates corrected per query (the rest of the list is dropped, as re-rankers do).
    """

    def __init__(
        self,
        beta: float,
        lm: str,
        *,
        field: str = "text",
        depth: int = 100,
        name: str | None = None,
        fit_path: str | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        cache_dir: Any = None,
    ):
        from sourcebias.analysis.perplexity import check_field

        if depth < 1:
            raise ConfigError(f"cdc: depth must be at least 1, got {depth}")
        self.beta = float(beta)
        self.lm = lm
        self.field = check_field(field)
        self.depth = int(depth)
        self.fit_path = fit_path
        self.name = name or f"cdc:{fit_path or self.beta}"
        self.batch_size, self.device, self.cache_dir = batch_size, device, cache_dir
        self._scorer = None

    def input_depth(self, depth: int, corpus: Corpus) -> int:
        return self.depth

    def _lm(self):
        if self._scorer is None:
            from sourcebias.analysis.perplexity import build_lm_scorer

            self._scorer = build_lm_scorer(self.lm, batch_size=self.batch_size, device=self.device, cache_dir=self.cache_dir, field=self.field)
        return self._scorer

    def perplexities(self, corpus: Corpus, positions: np.ndarray) -> np.ndarray:
        """Log-perplexity of the field of the documents at ``positions`` (cached per text)."""
        from sourcebias.analysis.perplexity import document_values

        _, values, _ = document_values(corpus, self._lm(), cache_dir=self.cache_dir, positions=np.asarray(positions).tolist())
        return values

    def apply(self, run: Run, queries: Mapping[str, str], *, seed: int = 0) -> Run:
        t0 = time.perf_counter()
        corpus = run.corpus
        tops = {q: np.asarray(p[: self.depth], dtype=np.int64) for q, p in run.positions.items()}
        needed = np.unique(np.concatenate(list(tops.values()))) if tops else np.empty(0, dtype=np.int64)
        ppl = dict(zip(needed.tolist(), self.perplexities(corpus, needed).tolist())) if len(needed) else {}
        missing = [i for i, v in ppl.items() if not np.isfinite(v)]
        if missing:
            d = corpus[missing[0]]
            raise DataError(None, f"cdc: no perplexity for document ({d.doc_id}, {d.source}): its {self.field} is empty after tokenization")
        rule = TieRule(corpus, seed)
        positions: dict[str, np.ndarray] = {}
        scores: dict[str, np.ndarray] = {}
        for q, top in tops.items():
            s = np.asarray(run.scores[q][: len(top)], dtype=np.float64) - self.beta * np.array([ppl[i] for i in top.tolist()])
            order = rule.order(q, s, top)
            positions[q], scores[q] = top[order], s[order]
        info = append_stage_info(
            run,
            {
                "name": self.name,
                "beta": self.beta,
                "lm": self.lm,
                "field": self.field,
                "depth": self.depth,
                "documents": len(needed),
                "seconds": round(time.perf_counter() - t0, 3),
            },
        )
        return Run(corpus, self.name, positions, scores, info)

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": "CDCCorrection",
            "beta": self.beta,
            "lm": self.lm,
            "field": self.field,
            "depth": self.depth,
            "fit": self.fit_path,
            "score": f"score - beta * log-perplexity(document {self.field})",
        }


@register_stage(
    "cdc",
    params={
        "fit": Param(str, "cdc.json written by `sourcebias cdc fit` (or its folder)", required=True),
        "depth": Param(int, "candidates corrected per query", default=100, option="rerank_depth"),
        "batch_size": Param(int, "documents per LM batch", option="batch_size"),
        "device": Param(str, "cpu, cuda, cuda:1", option="device"),
        "cache_dir": Param(Path, "perplexity store", option="cache_dir"),
    },
    positional="fit",
    help="Causal Diagnosis and Correction: score − β̂₂·log-perplexity(doc), re-ranked; cdc:OUT/cdc.json (from `sourcebias cdc fit`)",
    offline="as the language model of the fit",
    extra="neural",  # the fit's language model scores each candidate's perplexity
    extra_modules=("torch", "transformers"),
)
def _cdc(params: dict[str, Any], text: str) -> CDCCorrection:
    fit = read_cdc_fit(params["fit"])
    cache_dir = params.get("cache_dir")
    # a fit written before the field was recorded scored title + text
    return CDCCorrection(
        fit["beta"],
        fit["lm"],
        field=fit.get("field", "title+text"),
        depth=params["depth"],
        name=text,
        fit_path=fit["_path"],
        batch_size=params.get("batch_size"),
        device=params.get("device"),
        cache_dir=None if cache_dir in (None, False) else cache_dir,
    )


# exposure parity, ``fair:k=10`` (registered on import: the entry point names this module only)
from sourcebias.mitigation import fair as _fair_stage  # noqa: E402,F401
