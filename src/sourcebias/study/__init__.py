"""The frame every study shares: settings -> items -> calls -> parsed answers -> statistics ->
result folder -> report -> figure (:mod:`sourcebias.study.frame`).

The judge (:mod:`sourcebias.judges`), the citation study (:mod:`sourcebias.citations`) and the
audit (:mod:`sourcebias.audit`) are its instances: each computes its own result and report, and
writes its folder through :func:`write_study`; the evaluation writes its summaries through
:func:`write_summaries`.
"""

from __future__ import annotations

from sourcebias.study.frame import Study, write_study, write_summaries

__all__ = ["Study", "write_study", "write_summaries"]
