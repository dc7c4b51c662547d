"""Names that moved keep their old import path for one release: the old path gives the very object
the new one does, with a DeprecationWarning that names the new home; a name that never existed is
still an AttributeError."""

from __future__ import annotations

import importlib

import pytest

#: (old module, name, new module), written out by hand from the moves of issue 32
MOVED = [
    ("sourcebias.reporting", "Report", "sourcebias.report.model"),
    ("sourcebias.reporting", "to_rich", "sourcebias.report.render"),
    ("sourcebias.reporting", "result_report", "sourcebias.report.tables"),
    ("sourcebias.reporting", "EVALUATE_STATISTICS", "sourcebias.report.tables"),
    ("sourcebias.reporting.report", "Report", "sourcebias.report.model"),
    ("sourcebias.reporting.report", "Table", "sourcebias.report.model"),
    ("sourcebias.reporting.report", "cells_report", "sourcebias.report.tables"),
    ("sourcebias.reporting.report", "summary_table", "sourcebias.report.tables"),
    ("sourcebias.reporting.render", "to_markdown", "sourcebias.report.render"),
    ("sourcebias.reporting.render", "table_cells", "sourcebias.report.render"),
    ("sourcebias.reporting.axes", "value_limits", "sourcebias.report.axes"),
    ("sourcebias.reporting.tables", "latex_escape", "sourcebias.report.render"),
    ("sourcebias.reporting.tables", "rich_table", "sourcebias.report.tables"),
    ("sourcebias.evaluation.statistics", "twin_preference", "sourcebias.evaluation.stats.twin_preference"),
    ("sourcebias.evaluation.statistics", "adjust_pvalues", "sourcebias.evaluation.stats.multiple"),
    ("sourcebias.evaluation.statistics", "delta_ndsr", "sourcebias.evaluation.stats.delta_ndsr"),
    ("sourcebias.evaluation.results", "read_metrics_csv", "sourcebias.evaluation.result_io"),
    ("sourcebias.retrieval.lexical", "LUCENE_ENGLISH_STOP_WORDS", "sourcebias.retrieval.analyzer"),
    ("sourcebias.retrieval.lexical", "MAX_TOKEN_LENGTH", "sourcebias.retrieval.analyzer"),
    ("sourcebias.retrieval.formats", "read_json_run", "sourcebias.retrieval.run"),
    ("sourcebias.retrieval.run", "COCKTAIL_DOCNO", "sourcebias.retrieval.docnos"),
    ("sourcebias.retrieval.run", "DOCNO_TABLE", "sourcebias.retrieval.docnos"),
    ("sourcebias.experiments.settings", "key_line", "sourcebias.core.tomlfile"),
    ("sourcebias.experiments.settings", "unknown_keys", "sourcebias.core.tomlfile"),
    # issue 39: the backends and `sourcebias serve`'s server moved into the one LLM layer
    ("sourcebias.generation.backends", "OpenAIBackend", "sourcebias.llmcalls.backends"),
    ("sourcebias.generation.backends", "LocalBackend", "sourcebias.llmcalls.backends"),
    ("sourcebias.generation.backends", "GenerationRequest", "sourcebias.llmcalls.backends"),
    ("sourcebias.generation.backends.base", "GenerationResult", "sourcebias.llmcalls.backends.base"),
    ("sourcebias.generation.backends.openai", "normalize_base_url", "sourcebias.llmcalls.backends.openai"),
    ("sourcebias.generation.backends.local", "LocalBackend", "sourcebias.llmcalls.backends.local"),
    ("sourcebias.generation.server", "make_server", "sourcebias.llmcalls.server"),
    # issue 39: one name per kind of thing (a study's job is job.py) and one frame for the studies
    ("sourcebias.judges.run", "run_judge", "sourcebias.judges.job"),
    ("sourcebias.audit.artifact", "run_audit", "sourcebias.audit.job"),
    ("sourcebias.detect.run", "run_detect", "sourcebias.detect.job"),
    ("sourcebias.simulate.run", "run_simulation", "sourcebias.simulate.job"),
    ("sourcebias.power.artifact", "run_power", "sourcebias.power.job"),
    ("sourcebias.reporting", "write_evaluation", "sourcebias.study.outputs"),
    ("sourcebias.reporting.outputs", "summary_renderer", "sourcebias.study.outputs"),
    ("sourcebias.reporting.evaluation_job", "run_evaluation_job", "sourcebias.study.job"),
    ("sourcebias.reporting.evaluation_figure", "plot_source_bias", "sourcebias.study.figure"),
    ("sourcebias.reporting.grid_report", "write_grid_report", "sourcebias.experiments.grid_report"),
    ("sourcebias.reporting.palette", "LLM_COLOR", "sourcebias.core.palette"),
    ("sourcebias.analysis.runners", "lucene_idf", "sourcebias.analysis.artifacts"),
    ("sourcebias.analysis.runners", "twin_pairs", "sourcebias.analysis.common"),
]


#: names that moved but that the old module still imports for its own use: no warning, same object
KEPT = [
    ("sourcebias.retrieval.lexical", "EnglishAnalyzer", "sourcebias.retrieval.analyzer"),
    ("sourcebias.retrieval.run", "DocnoMap", "sourcebias.retrieval.docnos"),
    ("sourcebias.retrieval.run", "resolve_docnos", "sourcebias.retrieval.docnos"),
    ("sourcebias.evaluation.results", "Key", "sourcebias.evaluation.keys"),
    ("sourcebias.evaluation.results", "slug", "sourcebias.evaluation.keys"),
]


@pytest.mark.parametrize(("old", "name", "new"), KEPT)
def test_a_name_the_old_module_still_uses_is_the_same_object(old, name, new):
    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_an_old_path_gives_the_same_object_with_a_warning(old, name, new):
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_from_import_of_an_old_path_warns():
    with pytest.warns(DeprecationWarning, match="sourcebias.report.model.Report"):
        from sourcebias.reporting.report import Report
    from sourcebias.report import Report as New

    assert Report is New


@pytest.mark.parametrize("old", ["sourcebias.reporting", "sourcebias.reporting.render", "sourcebias.reporting.report", "sourcebias.evaluation.statistics"])
def test_a_name_that_never_existed_is_still_an_attribute_error(old):
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        importlib.import_module(old).not_a_name  # noqa: B018


def test_a_module_that_moved_is_a_name_only():
    """A module of core/moved.py's table has no file (no shim-only modules); importing it, and
    importing from it, gives the names where they are now, with the warning."""
    from pathlib import Path

    import sourcebias
    from sourcebias.core.moved import MODULES

    root = Path(sourcebias.__file__).parent.parent
    for old in MODULES:
        path = root / old.replace(".", "/")
        assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists(), old
    import sourcebias.reporting.outputs as outputs

    from sourcebias.study.outputs import write_evaluation

    with pytest.warns(DeprecationWarning, match="sourcebias.reporting.outputs.write_evaluation moved to sourcebias.study.outputs"):
        assert outputs.write_evaluation is write_evaluation
    with pytest.warns(DeprecationWarning, match="sourcebias.judges.job.run_judge"):
        from sourcebias.judges.run import run_judge
    from sourcebias.judges import run_judge as new

    assert run_judge is new
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sourcebias.reporting.not_a_module")


def test_a_replaced_name_warns_with_what_to_call():
    from sourcebias.core.moved import Replaced, moved

    getattr_ = moved("pkg.old", {"NAMES": Replaced("pkg.names()", lambda: ("a", "b")), "renamed": "sourcebias.core.version:__version__"})
    with pytest.warns(DeprecationWarning, match=r"pkg.old.NAMES is deprecated: use pkg.names\(\) \(the old name goes in 0.4.0\)"):
        assert getattr_("NAMES") == ("a", "b")
    with pytest.warns(DeprecationWarning, match="pkg.old.renamed moved to sourcebias.core.version.__version__"):
        assert getattr_("renamed") == "0.2.0"
    with pytest.raises(AttributeError, match="no attribute 'other'"):
        getattr_("other")


def test_the_facade_no_longer_offers_cell_statistics():
    """cell_statistics had no caller; compute_statistics computes any statistic of a result."""
    import sourcebias.evaluation.statistics as facade

    with pytest.raises(AttributeError):
        facade.cell_statistics  # noqa: B018


def test_the_version_lives_in_core():
    import sourcebias
    from sourcebias.core.version import __version__

    assert sourcebias.__version__ == __version__ == "0.2.0"
