"""The detector registry: the built-in kinds, the help and errors written from it, the deprecated
names, the extension authors' DetectorTestCase, and a kind added from outside the package through
an entry point of the group ``sourcebias.detectors`` (a dist-info folder on the path, as pip
installs a third-party package)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from detect_helpers import tiny_causal_lm

from sourcebias.core.errors import ConfigError
from sourcebias.testing import DetectorTestCase, write_toy_dataset

#: a third-party detector module: one file, one registration line
PLUGIN = """
from dataclasses import dataclass

import numpy as np

from sourcebias.core.errors import ConfigError
from sourcebias.detect import DetectorKind, register_detector


@dataclass
class LongWords:
    spec: str
    letters: int

    def score_texts(self, texts):
        words = [t.split() for t in texts]
        return np.array([sum(len(w) >= self.letters for w in ws) / len(ws) if ws else np.nan for ws in words])

    def describe(self):
        return {"spec": self.spec, "kind": "long-words", "score": f"share of words of {self.letters}+ characters", "options": {}, "models": {}}


class LongWordsKind(DetectorKind):
    name = "long-words"
    usage = "long-words:LETTERS"
    description = "share of the words of at least LETTERS characters"
    reference = "a test plugin"

    def build(self, request):
        if not request.head.isdigit():
            raise ConfigError(f"{request.spec}: LETTERS is a whole number")
        return LongWords(request.spec, int(request.head))


register_detector(LongWordsKind())
"""


def install_plugin(site: Path) -> Path:
    """``my_detectors`` and its dist-info (entry point ``sourcebias.detectors``) in ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "my_detectors.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "my_detectors-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-detectors\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[sourcebias.detectors]\nlong-words = my_detectors\n", encoding="utf-8")
    return site


def sourcebias(args: list[str], site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "sourcebias", *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_built_in_kinds_are_registered_in_order_and_the_help_is_theirs():
    import typer

    from sourcebias.cli.main import app
    from sourcebias.detect import detector_kinds, get_detector_kind

    kinds = detector_kinds()
    assert list(kinds)[:3] == ["fast-detectgpt", "binoculars", "raidar"]
    assert get_detector_kind("Fast-DetectGPT") is kinds["fast-detectgpt"]
    commands = typer.main.get_command(app).commands
    detect_help = {p.name: p.help for p in commands["detect"].params}["detector"]  # written from the registry when the options are read
    assert detect_help == ", ".join(k.usage for k in kinds.values()) + "."
    audit_help = {p.name: p.help for p in commands["audit"].params}["detector"]
    assert "(fast-detectgpt:lm:NAME, binoculars:lm:A+lm:B, raidar:MODEL; see `sourcebias detect`)" in audit_help


def test_an_unknown_kind_is_refused_naming_the_registered_ones():
    from sourcebias.detect import build_detector, detector_kinds

    with pytest.raises(ConfigError) as err:
        build_detector("gptzero:x")
    assert all(f"{k}:..." in str(err.value) for k in detector_kinds())


def test_a_second_kind_of_the_same_name_is_refused():
    from sourcebias.detect import DetectorKind, register_detector

    class Other(DetectorKind):
        name = "raidar"

        def build(self, request):
            raise AssertionError

    with pytest.raises(ValueError, match="registered twice"):
        register_detector(Other())
    with pytest.raises(ValueError, match="name"):
        register_detector(type("Bad", (Other,), {"name": "a b"})())


def test_the_old_names_still_work_with_a_deprecation_warning():
    import sourcebias.detect as detect
    from sourcebias.detect import criteria

    with pytest.warns(DeprecationWarning, match="detector_kinds"):
        assert detect.KINDS == ("fast-detectgpt", "binoculars", "raidar")
    with pytest.warns(DeprecationWarning):
        assert criteria.CRITERIA == ("fast-detectgpt", "binoculars")
    with pytest.warns(DeprecationWarning):
        scores = criteria.SCORES
    rows = np.array([[2.0, -3.0, -4.0, 4.0]])  # tokens, Σ ll, Σ μ, Σ σ²
    assert scores["fast-detectgpt"](rows)[0] == pytest.approx((-3.0 + 4.0) / 2.0)
    assert scores["binoculars"](rows)[0] == pytest.approx(-(-3.0 / -4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from sourcebias.detect import build_detector, is_detector_spec  # noqa: F401 - the current names warn nothing


def test_a_detector_from_an_entry_point_scores_from_the_command_line(tmp_path):
    site = install_plugin(tmp_path / "site")
    data = write_toy_dataset(tmp_path / "toy")
    proc = sourcebias(["detect", str(data), "--detector", "long-words:5", "-o", str(tmp_path / "out")], site)
    assert proc.returncode == 0, proc.stderr
    rows = (tmp_path / "out" / "scores.tsv").read_text(encoding="utf-8").splitlines()
    got = {(r.split("\t")[0], r.split("\t")[1]): float(r.split("\t")[2]) for r in rows[1:]}
    # by hand, words of 5+ characters (punctuation counts): d1 human "The cat sat on the mat in the sun." -> 0 of 9
    assert got[("d1", "human")] == 0.0
    assert got[("d1", "llm")] == pytest.approx(2 / 10)  # "sitting", "under" of "A cat was sitting on the mat under the sun."
    assert got[("d2", "human")] == pytest.approx(2 / 5)  # "loudly", "night." of "Dogs bark loudly at night."
    assert got[("d2", "llm")] == pytest.approx(2 / 6)  # "night,", "loudly." of "At night, dogs bark very loudly."
    assert got[("d3", "human")] == got[("d3", "llm")] == pytest.approx(2 / 7)  # "together", "peacefully." of 7 words
    detect_json = json.loads((tmp_path / "out" / "detect.json").read_text())
    assert detect_json["detector"]["kind"] == "long-words"
    helped = sourcebias(["detect", "--help"], site)
    assert "long-words:LETTERS" in helped.stdout
    refused = sourcebias(["detect", str(data), "--detector", "long-words:x", "-o", str(tmp_path / "bad")], site)
    assert refused.returncode != 0 and "LETTERS is a whole number" in refused.stderr and not (tmp_path / "bad").exists()


@functools.cache
def tiny_lm() -> Path:
    return tiny_causal_lm(Path(tempfile.mkdtemp(prefix="tiny-lm-")) / "a", seed=1)


class TestFastDetectGPTContract(DetectorTestCase):
    def detector_spec(self):
        return f"fast-detectgpt:lm:{tiny_lm()},max_tokens=8"


def test_a_detector_whose_scores_depend_on_the_order_fails_the_case(tmp_path):
    import unittest

    from sourcebias.detect import DetectorKind, base, register_detector

    class Ordered:
        spec = "ordered:x"

        def score_texts(self, texts):
            return np.arange(len(texts), dtype=np.float64)

        def describe(self):
            return {"spec": self.spec, "score": "the text's position"}

    class OrderedKind(DetectorKind):
        name = "ordered"
        usage = "ordered:X"
        description = "the position of the text in the batch"

        def build(self, request):
            return Ordered()

    register_detector(OrderedKind())

    class Case(DetectorTestCase):
        def detector_spec(self):
            return "ordered:x"

    try:
        with open(os.devnull, "w") as quiet:
            outcome = unittest.TextTestRunner(stream=quiet, verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    finally:
        base._KINDS.pop("ordered")
    assert {t.id().rsplit(".", 1)[-1] for t, _ in outcome.failures} == {"test_a_score_depends_on_its_text_only"}
