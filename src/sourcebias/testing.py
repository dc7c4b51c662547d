"""Test helpers for people who extend sourcebias in their own package.

A toy mixed dataset small enough to check by hand, and test cases that hold a new retriever,
statistic, query-clustered estimator, measure, detector, analysis, prompt or study to the contracts sourcebias relies on (as ``pyterrier.testing`` and
``mteb.mocks`` do for their extension authors). Subclass a case, say what to test, and let your
test runner (pytest or unittest) collect it::

    from sourcebias.testing import RetrieverTestCase

    class TestWordOverlap(RetrieverTestCase):
        def make_retriever(self):
            return WordOverlap()

The base classes themselves are not collected (``__test__ = False``); each subclass is.
"""

from __future__ import annotations

import json
import math
import tempfile
import unittest
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from sourcebias.analysis.base import Analysis
    from sourcebias.analysis.result import AnalysisResult
    from sourcebias.clustered import Estimator
    from sourcebias.data import Dataset
    from sourcebias.detect import Detector
    from sourcebias.evaluation.stats import Record, Statistic
    from sourcebias.retrieval import Retriever

#: The toy corpus: three human documents and their LLM twins (``d3``'s twin is an exact copy, so
#: a retriever that scores by text gives the pair equal scores and the tie rule orders them).
TOY_HUMAN = [
    {"_id": "d1", "title": "", "text": "The cat sat on the mat in the sun."},
    {"_id": "d2", "title": "Dogs", "text": "Dogs bark loudly at night."},
    {"_id": "d3", "title": "", "text": "Cats and dogs can live together peacefully."},
]
TOY_LLM = [
    {"_id": "d1", "title": "", "text": "A cat was sitting on the mat under the sun."},
    {"_id": "d2", "title": "Dogs", "text": "At night, dogs bark very loudly."},
    {"_id": "d3", "title": "", "text": "Cats and dogs can live together peacefully."},
]
TOY_QUERIES = [{"_id": "q1", "text": "cat on a mat"}, {"_id": "q2", "text": "barking dogs"}, {"_id": "q3", "text": "cats and dogs together"}]
TOY_QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d3", 0), ("q3", "d3", 1)]
TOY_LLM_SOURCE = "llm"


def write_toy_dataset(folder: str | Path) -> Path:
    """Write the toy dataset in Cocktail's layout.

    The files: ``corpus/human.jsonl``, ``corpus/llm.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``.

    Args:
        folder: where to write it (created if absent).

    Returns:
        The folder, ready for :func:`sourcebias.load_dataset` or ``sourcebias evaluate``.
    """
    root = Path(folder)
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    (root / "qrels").mkdir(exist_ok=True)
    for name, docs in (("human", TOY_HUMAN), (TOY_LLM_SOURCE, TOY_LLM)):
        (root / "corpus" / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in TOY_QUERIES), encoding="utf-8")
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in TOY_QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def toy_dataset() -> Dataset:
    """The toy dataset, loaded (split ``test``; written to a temporary folder first).

    Returns:
        A :class:`sourcebias.data.Dataset` with sources ``human`` and ``llm``.
    """
    from sourcebias.data import load_dataset

    folder = Path(tempfile.mkdtemp(prefix="sourcebias-toy-"))
    return load_dataset(write_toy_dataset(folder / "toy"), split="test")


class _Case(unittest.TestCase):
    """Collect subclasses, not the base class."""

    __test__ = False
    #: the toy dataset (:func:`toy_dataset`), loaded once per test class
    dataset: ClassVar[Dataset]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__test__ = cls.__module__ != __name__  # the cases defined here are bases, not tests

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.dataset = toy_dataset()

    def queries(self) -> dict[str, str]:
        """The toy queries that have a relevant document, ``query_id -> text``."""
        return {q: self.dataset.queries[q] for q in self.dataset.evaluation_queries()}


class RetrieverTestCase(_Case):
    """Contract of a retriever (a first stage or a pipeline). Implement :meth:`make_retriever`."""

    def make_retriever(self) -> Retriever:
        """The retriever to test; implement it in your subclass.

        Returns:
            A new :class:`sourcebias.retrieval.Retriever` (a first stage or a pipeline).
        """
        raise NotImplementedError("implement make_retriever() in your subclass")

    def test_a_run_ranks_documents_of_the_corpus_best_first(self) -> None:
        """A run answers every query with distinct positions of the corpus, scores best first."""
        run = self.make_retriever().retrieve(self.dataset.corpus, self.queries(), 10)
        self.assertEqual(set(run.query_ids), set(self.queries()))
        for q in run.query_ids:
            positions, scores = run.positions[q], run.scores[q]
            self.assertEqual(len(positions), len(set(positions.tolist())), f"{q}: a document ranked twice")
            self.assertTrue(all(0 <= p < len(self.dataset.corpus) for p in positions.tolist()))
            self.assertTrue(all(a >= b for a, b in zip(scores[:-1].tolist(), scores[1:].tolist())), f"{q}: scores not best first")

    def test_depth_is_respected(self) -> None:
        """No query's ranking is longer than the depth asked for."""
        run = self.make_retriever().retrieve(self.dataset.corpus, self.queries(), 2)
        self.assertTrue(all(len(run.positions[q]) <= 2 for q in run.query_ids))

    def test_the_same_call_gives_the_same_run(self) -> None:
        """Two retrievers made alike give equal runs (the retriever is deterministic)."""
        a = self.make_retriever().retrieve(self.dataset.corpus, self.queries(), 10)
        b = self.make_retriever().retrieve(self.dataset.corpus, self.queries(), 10)
        self.assertEqual(a, b)

    def test_equal_scores_follow_the_tie_rule(self) -> None:
        """Documents of equal score are in the order of sourcebias' tie rule (:class:`~sourcebias.retrieval.ties.TieRule`)."""
        from sourcebias.retrieval.ties import TieRule

        run = self.make_retriever().retrieve(self.dataset.corpus, self.queries(), 10, seed=3)
        rule = TieRule(self.dataset.corpus, 3)
        for q in run.query_ids:
            positions, scores = run.positions[q], run.scores[q]
            expected = rule.top(q, scores, positions, len(positions))
            self.assertEqual(positions[expected].tolist(), positions.tolist(), f"{q}: tied documents are not in the tie rule's order")

    def test_it_is_measured_by_the_protocol(self) -> None:
        """The protocol evaluates the retriever: NDCG@3 of every target is a fraction in [0, 1]."""
        from sourcebias.evaluation import evaluate, measure_grid

        retriever = self.make_retriever()
        result = evaluate(self.dataset, [retriever], measures=measure_grid(["NDCG"], [3]), depth=10)
        for source in self.dataset.sources:
            value = result.mean(retriever.name, "mixed", source, "NDCG@3")
            self.assertTrue(0.0 <= value <= 1.0, f"NDCG@3 for target {source} is {value}")


class StatisticTestCase(_Case):
    """Contract of a statistic.

    Implement :meth:`make_statistic`; :meth:`measures` may be overridden (default ``["NDCG@3"]``).
    """

    def make_statistic(self) -> Statistic:
        """The statistic to test; implement it in your subclass.

        Returns:
            A :class:`sourcebias.evaluation.stats.Statistic` (registered, for the registry test).
        """
        raise NotImplementedError("implement make_statistic() in your subclass")

    def measures(self) -> list[str]:
        """The measures the statistic is computed for (override to change).

        Returns:
            Measures such as ``["NDCG@3"]``.
        """
        return ["NDCG@3"]

    def _records(self) -> tuple[Statistic, list[Record]]:
        from sourcebias.evaluation import evaluate, measure_grid
        from sourcebias.evaluation.stats import StatContext
        from sourcebias.retrieval import build_retriever

        stat = self.make_statistic()
        names = sorted({m.split("@")[0] for m in self.measures()})
        cutoffs = sorted({int(m.split("@")[1]) for m in self.measures()})
        result = evaluate(self.dataset, [build_retriever("bm25"), build_retriever("tfidf")], measures=measure_grid(names, cutoffs), depth=10)
        ctx = StatContext(qrels=self.dataset.qrels, measures=self.measures(), bootstrap_resamples=200, significance_resamples=200)
        return stat, stat.compute(result, ctx)

    def test_records_name_their_retriever_source_and_measure(self) -> None:
        """Every record is of the statistic's record class and names its retriever, LLM source and measure."""
        stat, records = self._records()
        self.assertTrue(records, "no records for two retrievers on the toy dataset")
        for r in records:
            self.assertIsInstance(r, stat.record)
            self.assertIn(r.retriever, ("bm25", "tfidf"))
            self.assertEqual(r.llm_source, TOY_LLM_SOURCE)
            if stat.per_measure:
                self.assertIn(r.measure, self.measures())

    def test_displayed_columns_are_fields_and_rows_round_trip(self) -> None:
        """Displayed columns are record fields, and ``from_row(row())`` gives the record back."""
        stat, records = self._records()
        fields = set(stat.record.field_names())
        for column in stat.record.columns:
            self.assertIn(column.key, fields)
        for r in records:
            back = stat.record.from_row(r.row())
            for name, value in r.row().items():
                other = back.row()[name]
                same = value == other or (isinstance(value, float) and isinstance(other, float) and math.isnan(value) and math.isnan(other))
                self.assertTrue(same, f"{name}: {value!r} came back as {other!r}")

    def test_the_caption_says_what_was_computed(self) -> None:
        """The caption is a non-empty text (the method and level actually used)."""
        stat, records = self._records()
        caption = stat.caption(records)
        self.assertIsInstance(caption, str)
        self.assertTrue(caption.strip(), "empty caption: say the method and level used")

    def test_it_is_registered_by_name(self) -> None:
        """The statistic is registered under its name, found case-insensitively."""
        from sourcebias.evaluation.stats import get_statistic

        stat = self.make_statistic()
        self.assertIs(get_statistic(stat.name), get_statistic(stat.name.upper()))
        self.assertEqual(get_statistic(stat.name).name, stat.name)


def _outcome(result: Any) -> tuple[bool, str, bool]:
    """What an estimator's result says: an interval or not, why not, a finite estimate or not.

    A result is an :class:`~sourcebias.clustered.Estimate`, or a fit's dict with ``coefficients``
    or ``refused``.
    """
    if isinstance(result, dict):
        coef = result.get("coefficients") or {}
        has = bool(coef) and all(c.get("ci") is not None for c in coef.values())
        finite = bool(coef) and all(math.isfinite(c["estimate"]) for c in coef.values())
        return has, str(result.get("refused") or result.get("interval_refused") or ""), finite
    return bool(result.has_interval), str(result.refused), math.isfinite(result.estimate)


class EstimatorTestCase(unittest.TestCase):
    """Contract of a query-clustered estimator (:mod:`sourcebias.clustered`).

    Registered by name; with enough queries an interval around the estimate; with 1–4 queries (at
    95%) the shared refusal rule, no interval and no p; with nothing parsed a refusal; the same
    inputs, the same result.

    Implement :meth:`make_estimator`; its :meth:`~sourcebias.clustered.Estimator.example` gives the
    inputs, and :meth:`unparsed` (override it for inputs of another shape) marks every one of them
    as left out.
    """

    __test__ = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__test__ = cls.__module__ != __name__

    def make_estimator(self) -> Estimator:
        """The estimator to test; implement it in your subclass.

        Returns:
            A registered :class:`sourcebias.clustered.Estimator`.
        """
        raise NotImplementedError("implement make_estimator() in your subclass")

    def unparsed(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``inputs`` with every item left out, as an unparseable or repaired answer is.

        Args:
            inputs: Keyword arguments of the estimator (its ``example``).

        Returns:
            The same with ``values`` / ``outcomes`` all NaN, or ``kept`` all false.
        """
        import numpy as np

        out = dict(inputs)
        for key in ("values", "outcomes"):
            if key in out:
                out[key] = np.full(len(out[key]), np.nan)
                return out
        if "query" in out:
            out["kept"] = [False] * len(out["query"])
            return out
        raise NotImplementedError("override unparsed() for an estimator whose inputs are not values, outcomes or query rows")

    def test_it_is_registered_and_says_when_it_refuses(self) -> None:
        """Found by its name; it describes itself and lists its refusals."""
        from sourcebias.clustered import get_estimator

        est = self.make_estimator()
        self.assertIs(get_estimator(est.name), get_estimator(est.name.upper()))
        self.assertTrue(est.description.strip() and est.refusals, "say what it estimates and when it refuses")

    def test_enough_queries_give_an_interval(self) -> None:
        """With 30 queries: a finite estimate with an interval, no refusal."""
        est = self.make_estimator()
        has, why, finite = _outcome(est.estimate(**est.example(30, 1)))
        self.assertTrue(finite and has, f"no interval with 30 queries: {why}")
        self.assertEqual(why, "")

    def test_one_to_four_queries_are_refused_by_the_shared_rule(self) -> None:
        """With 1-4 queries at 95%: no interval, and the reason of :func:`sourcebias.clustered.interval_refusal`."""
        from sourcebias.clustered import interval_refusal

        est = self.make_estimator()
        for queries in (1, 2, 3, 4):
            has, why, _ = _outcome(est.estimate(**est.example(queries, 2)))
            self.assertFalse(has, f"an interval from {queries} queries")
            self.assertEqual(why, interval_refusal(queries, 0.95))

    def test_nothing_parsed_is_refused(self) -> None:
        """Every item left out: no estimate and no interval, with the reason."""
        est = self.make_estimator()
        has, why, finite = _outcome(est.estimate(**self.unparsed(est.example(30, 3))))
        self.assertFalse(has or finite)
        self.assertTrue(why.startswith("nothing to"), why)

    def test_the_same_inputs_give_the_same_result(self) -> None:
        """Deterministic: seeded where it draws."""
        est = self.make_estimator()
        a, b = est.estimate(**est.example(12, 4)), est.estimate(**est.example(12, 4))
        self.assertEqual(repr(a), repr(b))


class MeasureTestCase(_Case):
    """Contract of a measure kind. Implement :meth:`measure_name` (its registered name)."""

    def measure_name(self) -> str:
        """The registered name of the measure kind to test; implement it in your subclass.

        Returns:
            The name, e.g. ``"NDCG"``.
        """
        raise NotImplementedError("implement measure_name() in your subclass")

    def test_it_parses_with_a_cutoff_and_its_aliases(self) -> None:
        """The name and every alias parse with a cut-off to the canonical ``NAME@k``."""
        from sourcebias.evaluation.measures import measure_kinds, parse_measure

        kind = measure_kinds()[self.measure_name()]
        for alias in (kind.name, *kind.aliases):
            self.assertEqual(str(parse_measure(f"{alias}@3")), f"{kind.name}@3")

    def test_values_are_finite_fractions_for_every_target(self) -> None:
        """Every value of the measure on the toy dataset is a fraction in [0, 1] (or NaN where undefined)."""
        from sourcebias.evaluation import evaluate, measure_grid
        from sourcebias.retrieval import build_retriever

        name = self.measure_name()
        result = evaluate(self.dataset, [build_retriever("bm25")], measures=measure_grid([name], [1, 3]), depth=10)
        rows = [r for r in result.metric_rows() if r["metric"].startswith(name + "@")]
        self.assertTrue(rows, f"no values of {name}")
        for r in rows:
            if r["target"].startswith("relative_delta"):
                continue
            self.assertTrue(0.0 <= r["value"] <= 1.0 or math.isnan(r["value"]), r)


class DetectorTestCase(_Case):
    """Contract of a detector kind.

    Implement :meth:`detector_spec` (a spec of your kind, e.g. ``long-words:7``); the detector is
    built from it by the registry, as ``--detector`` does.
    """

    #: the models' cache of this test class (a temporary folder)
    cache_dir: ClassVar[Path]

    @classmethod
    def setUpClass(cls) -> None:
        """Load the toy dataset and make the models' cache."""
        super().setUpClass()
        cls.cache_dir = Path(tempfile.mkdtemp(prefix="sourcebias-detector-"))

    def detector_spec(self) -> str:
        """A spec of the kind to test; implement it in your subclass.

        Returns:
            ``KIND:HEAD[,key=value...]``.
        """
        raise NotImplementedError("implement detector_spec() in your subclass")

    def make_detector(self) -> Detector:
        """The detector of :meth:`detector_spec`, built by the registry.

        Its models are cached in a temporary folder of this test class.

        Returns:
            A :class:`sourcebias.detect.Detector`.
        """
        from sourcebias.detect import build_detector

        return build_detector(self.detector_spec(), cache_dir=self.cache_dir)

    def texts(self) -> list[str]:
        """The texts of the toy corpus (both sources), in corpus order."""
        return list(self.dataset.corpus.retrieval_texts())

    def test_its_kind_is_registered_and_says_what_it_scores(self) -> None:
        """The spec's kind is registered (any case), names its usage and what its score is."""
        from sourcebias.detect import DetectorKind, get_detector_kind, is_detector_spec

        spec = self.detector_spec()
        kind = get_detector_kind(spec.partition(":")[0].upper())
        self.assertIsInstance(kind, DetectorKind, f"no registered detector kind for {spec!r}")
        assert kind is not None
        self.assertTrue(is_detector_spec(spec))
        self.assertTrue(kind.usage.startswith(kind.name + ":"), f"usage {kind.usage!r} does not start with '{kind.name}:'")
        self.assertTrue(kind.description.strip(), "say what the score is (description)")

    def test_one_float_score_per_text(self) -> None:
        """One score per text, a float, finite or NaN (a text that cannot be scored), some finite."""
        import numpy as np

        texts = self.texts()
        scores = np.asarray(self.make_detector().score_texts(texts))
        self.assertEqual(scores.shape, (len(texts),))
        self.assertEqual(scores.dtype.kind, "f", "scores are floats")
        self.assertFalse(np.isinf(scores).any(), "an infinite score: give NaN for a text that cannot be scored")
        self.assertTrue(np.isfinite(scores).any(), "no text of the toy corpus got a score")

    def test_a_score_depends_on_its_text_only(self) -> None:
        """The same texts in another order, by another detector built alike, get the same scores."""
        import numpy as np

        texts = self.texts()
        a = np.asarray(self.make_detector().score_texts(texts), dtype=np.float64)
        b = np.asarray(self.make_detector().score_texts(texts[::-1]), dtype=np.float64)[::-1]
        np.testing.assert_allclose(a, b, rtol=1e-9, equal_nan=True)

    def test_it_describes_itself_in_json(self) -> None:
        """``describe()`` names the spec and the score, and is JSON (it goes into detect.json)."""
        spec = self.detector_spec()
        info = self.make_detector().describe()
        self.assertEqual(info.get("spec"), spec)
        self.assertTrue(str(info.get("score", "")).strip(), "describe() must say what the score is ('score')")
        json.dumps(info)

    def test_an_unknown_option_is_refused(self) -> None:
        """A spec with an option the kind does not take is refused before any work."""
        from sourcebias.core.errors import ConfigError
        from sourcebias.detect import build_detector

        with self.assertRaisesRegex(ConfigError, "unknown option"):
            build_detector(self.detector_spec() + ",no_such_option=1")

    def test_detect_writes_scores_that_load_back(self) -> None:
        """``detect`` scores every document of the toy corpus; the folder loads back equal."""
        from sourcebias.detect import DetectionResult, detect

        result = detect(self.dataset, self.make_detector())
        corpus = self.dataset.corpus
        self.assertEqual(len(result.scores), len(corpus))
        self.assertEqual(set(zip(result.scores["doc_id"], result.scores["source"])), {(d, corpus.source_of(p)) for p, d in enumerate(corpus.doc_ids)})
        folder = Path(tempfile.mkdtemp(prefix="sourcebias-detect-"))
        result.save(folder)
        self.assertEqual(DetectionResult.load(folder), result)


class AnalysisTestCase(_Case):
    """Contract of an analysis of ``sourcebias analyze``.

    Implement :meth:`analysis_name` (its registered name); :meth:`params` may set options (the
    others keep their defaults) so that it runs on the toy dataset in seconds.
    """

    #: the models' cache of this test class (a temporary folder)
    cache_dir: ClassVar[Path]

    @classmethod
    def setUpClass(cls) -> None:
        """Load the toy dataset and make the models' cache."""
        super().setUpClass()
        cls.cache_dir = Path(tempfile.mkdtemp(prefix="sourcebias-analysis-"))

    def analysis_name(self) -> str:
        """The registered name of the analysis to test; implement it in your subclass.

        Returns:
            The name, e.g. ``"length"``.
        """
        raise NotImplementedError("implement analysis_name() in your subclass")

    def params(self) -> dict[str, Any]:
        """Options to run it with on the toy dataset (override to change; none by default).

        Returns:
            ``{option: value}``.
        """
        return {}

    def analysis(self) -> Analysis:
        """The registered analysis."""
        from sourcebias.analysis.base import get_analysis

        return get_analysis(self.analysis_name())

    def run_analysis(self) -> AnalysisResult:
        """Its result on the toy dataset, with its defaults and :meth:`params`."""
        analysis = self.analysis()
        options = {"cache_dir": self.cache_dir} if analysis.model else {}
        return analysis.run(self.dataset, analysis.defaults() | self.params(), options)

    def test_it_is_registered_with_help_for_every_option(self) -> None:
        """It is registered under its name, says what it computes, and every option has help."""
        from sourcebias.analysis.base import Analysis, Param, analysis_kinds

        analysis = self.analysis()
        self.assertIsInstance(analysis, Analysis)
        self.assertIs(analysis_kinds()[self.analysis_name()], analysis)
        self.assertTrue(analysis.help.strip(), "say what the analysis computes (help)")
        for name, param in analysis.params.items():
            self.assertIsInstance(param, Param, name)
            self.assertTrue(param.help.strip(), f"option {name} has no help")
        self.assertFalse(
            {"device", "batch_size", "cache_dir", "overwrite", "dataset_dir", "output"} & set(analysis.params), "the shared options are the command's"
        )

    def test_its_result_saves_and_loads_back(self) -> None:
        """The result names the analysis, and its folder (tables, summary.json) loads back equal."""
        from sourcebias.analysis.result import AnalysisResult

        result = self.run_analysis()
        self.assertEqual(result.analysis, self.analysis_name())
        folder = Path(tempfile.mkdtemp(prefix="sourcebias-analysis-result-"))
        result.save(folder)
        self.assertEqual(AnalysisResult.load(folder), result)

    def test_its_tables_show_what_the_result_holds(self) -> None:
        """At least one table; every column is filled in some row; every cell renders."""
        analysis = self.analysis()
        result = self.run_analysis()
        tables = analysis.tables(result)
        self.assertTrue(tables, "no table: a reader sees nothing of the result")
        for table in tables:
            for column in table.columns:
                self.assertTrue(any(column.key in row for row in table.rows) or not table.rows, f"{table.key}: column {column.key} is in no row")
                for row in table.rows:
                    self.assertIsInstance(column.text(row), str)
        for note in analysis.notes(result):
            self.assertIsInstance(note, str)

    def test_its_figures_are_png_files(self) -> None:
        """Each figure it draws is a PNG file in the folder it was given."""
        result = self.run_analysis()
        folder = Path(tempfile.mkdtemp(prefix="sourcebias-analysis-figures-"))
        for name, path in self.analysis().draw(result, folder).items():
            self.assertTrue(Path(path).is_file(), f"figure {name}: {path} is not a file")
            self.assertEqual(Path(path).read_bytes()[:8], b"\x89PNG\r\n\x1a\n", f"figure {name} is not a PNG")


class PromptTestCase(_Case):
    """Contract of a prompt plug-in (:mod:`sourcebias.llmcalls.prompts`).

    Implement :meth:`prompt_spec` (its registered name, or its file) and, to check its parser on an
    answer in its format, :meth:`answer`.
    """

    def prompt_spec(self) -> str:
        """The prompt to test; implement it in your subclass.

        Returns:
            A registered name (``"terse-judge"``) or a prompt file's path.
        """
        raise NotImplementedError("implement prompt_spec() in your subclass")

    def answer(self) -> tuple[str, Any] | None:
        """An answer a model would give to the prompt, and what its parser must read from it.

        Returns:
            ``(text, value)``: for a grade ``("Grade: 2", (2, offset))``, a pick ``("B", "B")``, a
            permutation of 3 passages ``("[2] > [1] > [3]", ([1, 0, 2], counts))``, citations of 3
            passages (its :class:`~sourcebias.llmcalls.parsers.ParsedAnswer`); ``None``: not checked.
        """
        return None

    def prompt(self) -> Any:
        """The prompt, loaded (a file is read and checked)."""
        from sourcebias.llmcalls.prompts import load_prompt

        return load_prompt(self.prompt_spec())

    def _sample(self) -> tuple[dict[str, str], list[dict[str, str]]]:
        """Distinct values for every field a stage could give, and two passages."""
        from sourcebias.llmcalls.prompts import USES

        fields = {f: f"<{f} value>" for use in USES.values() for f in use.fields}
        fields["disclosure"] = ""
        items = {f for use in USES.values() for f in use.item_fields}
        return fields, [{f: f"<{f} {i}>" for f in sorted(items)} for i in (1, 2)]

    def test_a_stage_takes_it(self) -> None:
        """At least one stage can send it: its answer format, probabilities and fields are a stage's."""
        from sourcebias.llmcalls.prompts import taken_by

        self.assertTrue(taken_by(self.prompt()), f"no stage takes prompt {self.prompt().name} (see sourcebias prompts)")

    def test_it_renders_every_field_and_reads_them_back(self) -> None:
        """Rendered, no field is left unfilled; read back, its messages give the values written."""
        from sourcebias.llmcalls.prompts import fields_of

        prompt = self.prompt()
        fields, passages = self._sample()
        messages = prompt.render(fields, passages, len(prompt.demonstrations))
        self.assertTrue(messages and all(role in ("system", "user", "assistant") for role, _ in messages))
        for _role, content in messages:
            self.assertFalse(set(fields_of(content)) & (set(fields) | {"passages", "count", "number"}), content)
        read = prompt.read(messages)
        self.assertIsNotNone(read, "the prompt does not read its own last message back")
        for key, value in read.items():
            if key in fields and key != "disclosure":  # the disclosure reads back as its label (none here)
                self.assertEqual(value, prompt.shown(key, fields[key]))

    def test_it_is_registered_by_name_or_is_a_file(self) -> None:
        """A name is in the registry (``--prompt NAME`` finds it); anything else is a prompt file."""
        from sourcebias.llmcalls.prompts import prompt_kinds

        spec, prompt = self.prompt_spec(), self.prompt()
        self.assertTrue(prompt_kinds().get(spec) is prompt or (prompt.path is not None and prompt.path.samefile(spec)))

    def test_its_parser_reads_an_answer_in_its_format(self) -> None:
        """The prompt's parser reads :meth:`answer`'s text as :meth:`answer` says."""
        example = self.answer()
        if example is None:
            self.skipTest("no example answer (implement answer())")
        prompt = self.prompt()
        args = {"permutation": (3,), "citations": (3,)}.get(prompt.answer, ())
        self.assertEqual(prompt.parse(example[0], *args), example[1])


class StudyTestCase(unittest.TestCase):
    """Contract of a study written through the frame (:mod:`sourcebias.study`).

    Set :attr:`kind` (the kind its folder is claimed with) and implement :meth:`run_study`; the
    study is run once per test class, into a fresh folder.
    """

    __test__ = False
    #: the kind the study's folder is claimed with (``OutputFolder.claim(..., kind=...)``)
    kind: ClassVar[str] = ""
    #: the folder the study wrote (set once per class)
    path: ClassVar[Path]
    _tmp: ClassVar[tempfile.TemporaryDirectory[str]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__test__ = cls.__module__ != __name__

    def run_study(self, output: Path) -> Path:
        """Run the study into the folder ``output``; implement it in your subclass.

        Returns:
            The folder written (what the study's job returns).
        """
        raise NotImplementedError("implement run_study() in your subclass")

    @classmethod
    def setUpClass(cls) -> None:
        """Run the study once, into a fresh temporary folder."""
        super().setUpClass()
        cls._tmp = tempfile.TemporaryDirectory(prefix="sourcebias-study-case-")
        cls.path = Path(cls.run_study(cls(), Path(cls._tmp.name) / "out"))

    @classmethod
    def tearDownClass(cls) -> None:
        """Remove the temporary folder."""
        cls._tmp.cleanup()
        super().tearDownClass()

    def _manifest(self) -> dict[str, Any]:
        from sourcebias.core.artifacts import read_manifest

        return read_manifest(self.path)

    def test_its_folder_is_of_its_kind_and_lists_every_file_with_its_digest(self) -> None:
        """The manifest names the kind, and every file of the folder with its size and SHA-256."""
        from sourcebias.core.artifacts import artifact_kind, list_files

        self.assertTrue(self.kind, "set kind on your subclass")
        manifest = self._manifest()
        self.assertEqual(artifact_kind(manifest), self.kind)
        recorded = {name: {"bytes": f["bytes"], "sha256": f["sha256"]} for name, f in manifest["outputs"]["files"].items()}
        self.assertEqual(recorded, list_files(self.path))
        self.assertFalse([p.name for p in self.path.parent.iterdir() if p.name.startswith(f".{self.path.name}.staging")], "a staging folder was left behind")

    def test_its_report_is_written_as_markdown_and_latex(self) -> None:
        """``summary.md`` (a Markdown document with a title) and ``summary.tex`` are there, not empty."""
        md, tex = self.path / "summary.md", self.path / "summary.tex"
        self.assertTrue(md.is_file() and tex.is_file(), "write the report with sourcebias.study.write_study (or write_summaries)")
        self.assertTrue(md.read_text(encoding="utf-8").startswith("# "))
        self.assertTrue(tex.read_text(encoding="utf-8").strip())

    def test_its_figures_are_png_files(self) -> None:
        """Every ``.png`` of the folder is a PNG image."""
        for png in self.path.rglob("*.png"):
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", png.name)

    def test_a_second_run_into_its_folder_is_refused_and_changes_nothing(self) -> None:
        """A second run into the folder without overwrite is refused, and its files stay as they were.

        The folder is claimed before any work (``OutputError`` at the claim).
        """
        from sourcebias.core.artifacts import list_files
        from sourcebias.core.errors import OutputError

        before = list_files(self.path)
        with self.assertRaises(OutputError):
            self.run_study(self.path)
        self.assertEqual(list_files(self.path), before)

    def test_it_loads_back_where_its_kind_has_a_loader(self) -> None:
        """:func:`~sourcebias.core.artifacts.load_artifact` reads the folder back.

        Skipped when no loader is registered for the kind (``register_loader``).
        """
        from sourcebias.core.artifacts import has_loader, load_artifact

        if not has_loader(self.kind):
            self.skipTest(f"no loader registered for kind '{self.kind}'")
        self.assertIsNotNone(load_artifact(self.path))
