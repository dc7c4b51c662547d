"""LLM relevance judges and their source bias (issue 33, section 2).

An UMBRELA-style judge (:mod:`.prompts`) grades each judged document of a split and its LLM twins
0–3 through any :class:`~sourcebias.llmcalls.LLMClient` (a local model or an OpenAI-compatible
server; answers cached, runs resumable). :mod:`.analysis` estimates the judge's twin bias (the
twin's grade minus the original's, query-clustered CI and test), a pairwise preference run in
both orders (source preference apart from position), the effect of disclosing the author, and the
agreement with the assessors; :mod:`.protocol` evaluates runs with the judge's qrels instead of
the assessors' and reports how Relative Δ and ΔNDSR move. ``sourcebias judge`` writes it all to a
folder that :func:`load_judge` (or :func:`sourcebias.core.artifacts.load_artifact`) reads back.
"""

from __future__ import annotations

from sourcebias.core.artifacts import register_loader
from sourcebias.judges.grading import MODES, JudgeSettings
from sourcebias.judges.job import judge, run_judge
from sourcebias.judges.plan import JudgePlan
from sourcebias.judges.result import JudgeResult, load_judge

register_loader("judge", "sourcebias.judges.result:JudgeResult.load")

__all__ = ["MODES", "JudgePlan", "JudgeResult", "JudgeSettings", "judge", "load_judge", "run_judge"]
