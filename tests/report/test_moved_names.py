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
]


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


@pytest.mark.parametrize("old", ["sourcebias.reporting", "sourcebias.reporting.render", "sourcebias.reporting.report"])
def test_a_name_that_never_existed_is_still_an_attribute_error(old):
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(importlib.import_module(old), "not_a_name")


def test_the_version_lives_in_core():
    import sourcebias
    from sourcebias.core.version import __version__

    assert sourcebias.__version__ == __version__ == "0.2.0"
