"""The frame every study shares, and the evaluation as a job.

A study runs settings -> items -> calls -> parsed answers -> statistics -> result folder ->
report -> figure. :mod:`.frame` is its end, once: :func:`write_study` writes a result, its report
(:func:`write_summaries`), its figure and its manifest into a claimed folder and commits it. The
judge (:mod:`sourcebias.judges.job`), the citation study (:mod:`sourcebias.citations.job`) and the
audit (:mod:`sourcebias.audit.job`) are its instances. The evaluation (``sourcebias evaluate``) is
:mod:`.job` (the command as a call), :mod:`.outputs` (its folder) and :mod:`.figure`. It writes its
folder through :meth:`EvaluationResult.save <sourcebias.evaluation.results.EvaluationResult.save>`
(the write path a library user calls without the command line, and the layout ``load_result``
reads: runs, per-query values, a manifest with the inputs' checksums) and renders its report
through the frame's :func:`write_summaries`, so the frame's end is not repeated there.
"""

from __future__ import annotations

from sourcebias.study.frame import Study, write_study, write_summaries
from sourcebias.study.outputs import evaluation_manifest, write_evaluation

__all__ = ["Study", "evaluation_manifest", "write_evaluation", "write_study", "write_summaries"]
