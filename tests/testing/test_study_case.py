"""sourcebias.testing.StudyTestCase: the judge (a study through the frame) passes it; a study
that writes no report, or claims its folder only after the work, fails it."""

from __future__ import annotations

import json
import os
import unittest
from pathlib import Path

from conftest import data_dir

from sourcebias.core.artifacts import OutputFolder
from sourcebias.data import load_dataset
from sourcebias.judges import JudgePlan, run_judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.llmcalls import ModelAccess
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.testing import StudyTestCase


class TestJudgeStudyContract(StudyTestCase):
    kind = "judge"

    def run_study(self, output: Path) -> Path:
        path = data_dir("nq-utd")
        with SimulatedServer(BiasedJudge.from_corpus(load_dataset(path).corpus)) as url:
            _, folder = run_judge(
                str(path), f"openai:sim@{url}", output, plan=JudgePlan(max_queries=5, resamples=200), access=ModelAccess(cache_dir=output.parent / "answers")
            )
        return folder


def _outcome(case: type[unittest.TestCase]) -> tuple[set[str], set[str]]:
    """The names of the case's tests that failed, and of those that erred."""
    with open(os.devnull, "w") as quiet:
        outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    return {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures}, {t.id().rsplit(".", 1)[-1] for t, _ in outcome.errors}


class _Counts:
    """A result that saves itself: the files a study writes besides its report."""

    def save(self, folder: Path) -> None:
        (folder / "counts.json").write_text(json.dumps({"pairs": 3}) + "\n")


def test_a_study_without_a_report_fails_the_case():
    from sourcebias.core.manifest import build_manifest

    class NoReport(StudyTestCase):
        kind = "no-report"

        def run_study(self, output: Path) -> Path:
            folder = OutputFolder.claim(output, kind=self.kind)
            try:
                _Counts().save(folder.staging)
                return folder.commit(build_manifest(command=self.kind, inputs={}, parameters={}))
            finally:
                folder.abort()

    failed, erred = _outcome(NoReport)
    assert failed == {"test_its_report_is_written_as_markdown_and_latex"} and not erred


def test_a_study_that_works_before_claiming_its_folder_fails_the_case():
    from sourcebias.report.model import Report
    from sourcebias.study import Study, write_study

    work: list[int] = []

    class ClaimsLate(StudyTestCase):
        kind = "claims-late"

        def run_study(self, output: Path) -> Path:
            work.append(1)  # the work, then the claim: a second run into the folder works before it is refused
            if (output / "manifest.json").exists():
                (output / "counts.json").write_text("overwritten before the claim\n")
            folder = OutputFolder.claim(output, kind=self.kind)
            try:
                return write_study(folder, _Counts(), Study(Report("Counts", [])), seconds=0.0)
            finally:
                folder.abort()

    failed, erred = _outcome(ClaimsLate)
    # the second run is refused, but only after it changed a file: the folder no longer matches its manifest either
    assert failed == {"test_a_second_run_into_its_folder_is_refused_and_changes_nothing", "test_its_folder_is_of_its_kind_and_lists_every_file_with_its_digest"}
    assert not erred and len(work) == 2
