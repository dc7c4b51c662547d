"""Which sources a generated answer cites (``sourcebias cite``).

Each query's top k passages of a mixed ranking go to a generator with ALCE's numbered-citation
prompt, in several context orders (:mod:`.design`); the citations are read from each answer with
every failure counted (:mod:`.parse`); the study reports P(cited | source, rank), P(cited |
source, position) and the source effect conditional on rank and position: a query-clustered
logistic regression with rank and position fixed effects, and the paired difference between a
document and its LLM twin shown in the same context (:mod:`.estimate`). A simulated generator
that cites LLM passages with a known extra probability (:mod:`.simulated`) checks the
estimators through the same HTTP path as a real server.
"""

from sourcebias.citations.design import Context, build_contexts, context_order
from sourcebias.citations.estimate import clustered_rate, logit_effects, twin_differences
from sourcebias.citations.job import run_cite
from sourcebias.citations.parse import ParsedAnswer, parse_citations
from sourcebias.citations.prompt import citation_messages
from sourcebias.citations.ranking import RankingSource, load_ranking
from sourcebias.citations.report import citation_report
from sourcebias.citations.result import CitationResult, load_citations
from sourcebias.citations.study import CiteSettings, analyse, cite_run
from sourcebias.core.artifacts import register_loader

register_loader("cite", "sourcebias.citations.result:CitationResult.load")

__all__ = [
    "CitationResult",
    "CiteSettings",
    "Context",
    "ParsedAnswer",
    "RankingSource",
    "analyse",
    "build_contexts",
    "citation_messages",
    "citation_report",
    "cite_run",
    "clustered_rate",
    "context_order",
    "load_citations",
    "load_ranking",
    "logit_effects",
    "parse_citations",
    "run_cite",
    "twin_differences",
]
