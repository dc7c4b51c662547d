"""The analysis registry: every built-in analysis is registered from its own module, the old
runners module still imports with a deprecation warning, the extension authors'
AnalysisTestCase holds for built-in analyses, and an analysis added from outside the package
through an entry point of the group ``sourcebias.analyses`` (a dist-info folder on the path, as
pip installs a third-party package) becomes a ``sourcebias analyze`` subcommand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcebias.testing import AnalysisTestCase, write_toy_dataset

#: a third-party analysis module: one file, one registration line
PLUGIN = """
import pandas as pd

from sourcebias.analysis.base import Analysis, AnalysisTable, Param, integer, register_analysis, sig, text
from sourcebias.analysis.common import make_result


class TypeTokenRatio(Analysis):
    name = "ttr"
    help = "Type-token ratio of each document (distinct words / words), its mean per source."
    model = False
    params = {"lower": Param(bool, True, "Lower-case the words first.")}

    def run(self, dataset, params, options):
        corpus = dataset.corpus
        words = [(t.lower() if params["lower"] else t).split() for t in corpus.texts]
        table = pd.DataFrame({"doc_id": corpus.doc_ids, "source": corpus.source_list(), "ttr": [len(set(w)) / len(w) if w else None for w in words]})
        summary = {"sources": {s: {"documents": int((table["source"] == s).sum()), "mean": float(table.loc[table["source"] == s, "ttr"].mean())} for s in dataset.sources}}
        return make_result("ttr", dataset, dict(params), {}, {"ttr": table}, summary)

    def tables(self, result):
        rows = [{"source": s, **e} for s, e in result.summary["sources"].items()]
        return [AnalysisTable("ttr", "Type-token ratio", [text("source", "source"), integer("documents", "documents"), sig("mean", "mean TTR")], rows)]


register_analysis(TypeTokenRatio())
"""


def install_plugin(site: Path) -> Path:
    """``my_analyses`` and its dist-info (entry point ``sourcebias.analyses``) in ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "my_analyses.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "my_analyses-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-analyses\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[sourcebias.analyses]\nttr = my_analyses\n", encoding="utf-8")
    return site


def sourcebias(args: list[str], site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "sourcebias", *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_built_in_analyses_are_registered_in_the_order_of_the_help():
    from sourcebias.analysis.base import analysis_kinds, get_analysis

    names = list(analysis_kinds())
    assert names[:8] == ["quality", "spectrum", "perplexity", "artifacts", "direction", "length", "decompose", "compare-directions"]
    assert get_analysis("length").name == "length"
    with pytest.raises(KeyError, match="known: quality"):
        get_analysis("nope")


def test_a_second_analysis_of_the_same_name_or_a_bad_name_is_refused():
    from sourcebias.analysis.base import Analysis, register_analysis

    class Other(Analysis):
        name = "length"

        def run(self, dataset, params, options):
            raise AssertionError

        def tables(self, result):
            return []

    with pytest.raises(ValueError, match="registered twice"):
        register_analysis(Other())
    with pytest.raises(ValueError, match="lower-case name"):
        register_analysis(type("Bad", (Other,), {"name": "Big Name"})())


def test_the_old_runners_module_still_works_with_a_deprecation_warning():
    from sourcebias.analysis import quality, runners

    with pytest.warns(DeprecationWarning, match="sourcebias.analysis.quality"):
        assert runners.quality is quality.quality
    with pytest.raises(AttributeError):
        runners.no_such_runner  # noqa: B018 - the lookup is the test


def test_an_analysis_from_an_entry_point_is_a_subcommand(tmp_path):
    site = install_plugin(tmp_path / "site")
    data = write_toy_dataset(tmp_path / "toy")
    proc = sourcebias(["analyze", "ttr", str(data), "-o", str(tmp_path / "out")], site)
    assert proc.returncode == 0, proc.stderr
    # by hand, lower-cased whitespace words: human d1 "the cat sat on the mat in the sun." 7 distinct of 9,
    # d2 and d3 all distinct; LLM d1 "a cat was sitting on the mat under the sun." 9 of 10, d2 and d3 all distinct
    human, llm = (7 / 9 + 1 + 1) / 3, (9 / 10 + 1 + 1) / 3
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["summary"]["sources"]["human"]["mean"] == pytest.approx(human)
    assert summary["summary"]["sources"]["llm"]["mean"] == pytest.approx(llm)
    assert f"{human:.4g}" in proc.stdout and f"{llm:.4g}" in proc.stdout and "Type-token ratio" in proc.stdout  # its table, printed
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["kind"] == "analyze:ttr" and manifest["parameters"] == {"lower": True}
    helped = sourcebias(["analyze", "--help"], site)
    assert "ttr" in helped.stdout and "Type-token ratio" in helped.stdout
    options = sourcebias(["analyze", "ttr", "--help"], site)
    assert "--no-lower" in options.stdout and "--overwrite" in options.stdout and "--device" not in options.stdout  # no model: no model options


class TestLengthContract(AnalysisTestCase):
    def analysis_name(self):
        return "length"

    def params(self):
        return {"split": "test"}


class TestArtifactsContract(AnalysisTestCase):
    def analysis_name(self):
        return "artifacts"

    def params(self):
        return {"lm": "none"}


def test_an_analysis_whose_table_names_a_missing_column_fails_the_case():
    import unittest

    from sourcebias.analysis import base
    from sourcebias.analysis.base import Analysis, AnalysisTable, register_analysis, sig
    from sourcebias.analysis.common import make_result

    class Typo(Analysis):
        name = "typo"
        help = "A table whose column is in no row."
        model = False

        def run(self, dataset, params, options):
            return make_result("typo", dataset, {}, {}, {}, {"n": 1})

        def tables(self, result):
            return [AnalysisTable("typo", "Typo", [sig("mean", "mean")], [{"maen": 1.0}])]

    register_analysis(Typo())

    class Case(AnalysisTestCase):
        def analysis_name(self):
            return "typo"

    try:
        with open(os.devnull, "w") as quiet:
            outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    finally:
        base._REGISTRY.analyses.pop("typo")
    assert {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures} == {"test_its_tables_show_what_the_result_holds"}
