"""Known truth through the HTTP path: a simulated server cites LLM passages with a known extra log
odds; the study recovers it, reruns from the answer store, writes a folder that loads back, and
the command line does the same."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.citations import CiteSettings, cite_run, load_citations
from sourcebias.citations.simulated import NOTHING, responder_for, true_effects, true_rates, twins_above_originals
from sourcebias.core.artifacts import load_artifact
from sourcebias.core.errors import ConfigError
from sourcebias.llmcalls import open_client
from sourcebias.llmcalls.simulated import SimulatedServer

POSITION_LOGITS = (0.6, 0.0, -0.4, -0.8, -1.0)
BETA = 1.0


@pytest.fixture(scope="module")
def nq_bm25(nq_utd):
    from sourcebias.data import load_dataset
    from sourcebias.retrieval import build_retriever

    ds = load_dataset(nq_utd)
    ids = ds.evaluation_queries()
    return ds, build_retriever("bm25").retrieve(ds.corpus, {q: ds.queries[q] for q in ids}, depth=10)


@pytest.fixture(scope="module")
def server(nq_bm25):
    ds, _ = nq_bm25
    responder = responder_for(ds.corpus, ds.human_source, POSITION_LOGITS, BETA)
    with SimulatedServer(responder) as url:
        yield responder, url


def test_known_source_effect_is_recovered(nq_bm25, server):
    ds, run = nq_bm25
    responder, url = server
    client = open_client(f"openai:sim@{url}", cache=False)
    result = cite_run(run, ds.queries, client, CiteSettings(k=5, orders=5, seed=11), ds.human_source)
    truth = true_effects(responder, result.passages, ds.human_source)
    llm = next(s for s in ds.sources if s != ds.human_source)
    logit, twins = result.effect("logit", "source", llm), result.effect("twins", "source", llm)
    assert result.counts["answers"] == 5 * len(run) and result.counts["out_of_range"] == 0
    # the simulated generator writes NOTHING exactly when it cites no passage
    assert result.counts["no_citation"] == int((result.answers["text"] == NOTHING).sum())
    assert abs(logit["estimate"] - BETA) < 3 * logit["se"]
    assert logit["ame_low"] < truth["ame"] < logit["ame_high"]
    # balanced: the twins' truth is the source effect averaged over the 5 positions, by hand
    by_hand = np.mean([responder.probability(j, True) - responder.probability(j, False) for j in range(1, 6)])
    assert truth["twins"] == pytest.approx(by_hand) and abs(twins["estimate"] - truth["twins"]) < 3 * twins["se"]
    # the position effect the responder injects is found, with rank effects near 0
    pos5 = result.effect("logit", "position", 5)
    assert abs(pos5["estimate"] - (POSITION_LOGITS[4] - POSITION_LOGITS[0])) < 3 * pos5["se"]
    assert all(abs(r["estimate"]) < 3 * r["se"] for r in result.effects if r["term"] == "rank")
    # rates: every cell by position holds its truth sigma(a_j + beta [LLM]) within its interval, or most do
    cells = true_rates(responder, result.passages[result.passages["used"]], ds.human_source, ["source", "position"])
    covered = [r["low"] <= cells[(r["source"], r["position"])] <= r["high"] for r in result.rates["source_position"]]
    assert sum(covered) >= len(covered) - 1


def test_a_position_only_generator_gives_no_twin_effect(nq_bm25):
    """Issue 38, point 3: a generator with a position effect and no source effect, on a ranking
    that puts each LLM twin right above its original: the twins printed +0.117 [..] p 5e-4 with
    orders=3 (order 0 never shuffled). In this ranking the source is also collinear with rank (LLM
    copies at ranks 1, 3, 5), so with orders=3 no source effect can be estimated: refused before
    any call. With orders=5 (balanced) the twins find no source effect, the truth (0) inside their
    interval, and the logit says what is collinear."""
    ds, run = nq_bm25
    above = twins_above_originals(ds, run)
    responder = responder_for(ds.corpus, ds.human_source, POSITION_LOGITS, 0.0)
    llm = ds.other_sources[0]
    calls = []

    def counting(messages, params):
        calls.append(1)
        return responder(messages, params)

    with SimulatedServer(counting) as url:
        client = open_client(f"openai:sim@{url}", cache=False)
        with pytest.raises(ConfigError, match="can estimate no source effect") as info:
            cite_run(above, ds.queries, client, CiteSettings(k=5, orders=3, seed=2), ds.human_source)
        assert not calls and "rank 2 and rank 4 are linearly dependent" in str(info.value)
        balanced = cite_run(above, ds.queries, client, CiteSettings(k=5, orders=5, seed=2), ds.human_source)
    twins = balanced.effect("twins", "source", llm)
    assert true_effects(responder, balanced.passages, ds.human_source)["twins"] == 0.0
    assert twins["low"] <= 0.0 <= twins["high"] and twins["pairs"] == 2 * 5 * len(above)
    logit = balanced.effect("logit", "source", llm)
    assert logit["status"] == "undefined" and "linearly dependent" in logit["note"]


def test_folder_loads_back_and_rerun_reads_the_answer_store(nq_bm25, server, tmp_path, capsys):
    from sourcebias.cli.main import main

    _, url = server
    out, cache = tmp_path / "cite", tmp_path / "cache"
    args = [
        "cite",
        "nq-utd",
        "-r",
        "bm25",
        "--generator",
        f"openai:sim@{url}",
        "-k",
        "4",
        "--orders",
        "2",
        "--max-queries",
        "12",
        "--cache-dir",
        str(cache),
        "-o",
        str(out),
    ]
    for attempt in range(2):
        with pytest.raises(SystemExit) as info:
            main(args + (["--overwrite"] if attempt else []))
        assert info.value.code == 0, capsys.readouterr().err
        result = load_citations(out)
        assert bool(result.answers["cached"].all()) is (attempt == 1)  # the rerun sends no call
        if attempt == 0:
            first = result
    assert load_artifact(out) == result
    assert first.effects == result.effects and first.passages.equals(result.passages)
    assert len(result.answers) == 24 and set(result.passages["rank"]) == {1, 2, 3, 4}
    printed = capsys.readouterr().out
    assert "P(cited | source, retrieval rank)" in printed and "Source effect" in printed
    assert math.isfinite(result.effect("logit", "source", next(s for s in result.inputs["sources"] if s != "human"))["estimate"])


def test_misuse_is_refused_before_work(tmp_path, capsys):
    from sourcebias.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(["cite", "nq-utd", "--generator", "smollm2", "-o", str(tmp_path / "x")])
    assert info.value.code == 2
    assert "--run RUN" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_smollm2_end_to_end_on_nq_utd_through_the_local_backend(tmp_path, capsys):
    """A few queries with the offline SmolLM2-135M-Instruct: the folder loads back, every answer
    has a status and every source effect is a number or says why it is undefined; the rerun reads
    every answer from the store."""
    import re

    from lm_helpers import store_sharing_models

    from sourcebias.cli.main import main

    cache = store_sharing_models(tmp_path / "cache")
    args = [
        "cite",
        "nq-utd",
        "-r",
        "bm25",
        "--generator",
        "smollm2",
        "--device",
        "cpu",
        "-k",
        "3",
        "--max-queries",
        "2",
        "--max-tokens",
        "24",
        "--cache-dir",
        str(cache),
    ]
    for attempt, out in enumerate((tmp_path / "a", tmp_path / "b")):
        with pytest.raises(SystemExit) as info:
            main([*args, "-o", str(out)])
        assert info.value.code == 0, capsys.readouterr().err
        result = load_citations(out)
        assert bool(result.answers["cached"].all()) is (attempt == 1)
    assert len(result.answers) == 2 and len(result.passages) == 6 and (tmp_path / "b" / "citations.png").is_file()
    c = result.counts
    assert c["cited"] + c["out_of_range"] + c["no_citation"] + c["empty"] == c["answers"] == 2
    for text, status in zip(result.answers["text"], result.answers["status"]):  # a bracketed number <=> not no_citation
        assert (re.search(r"\[\s*\d", text) is None) == (status in ("no_citation", "empty"))
    for r in result.effects:
        assert (r["estimate"] is not None and math.isfinite(r["estimate"])) or (r["status"] == "undefined" and r["note"])
    assert result.generator["identity"]["backend"] == "local"


class CountingResponder:
    """The known-truth responder, slowed down, recording every prompt it answers (thread-safe)."""

    def __init__(self, inner):
        import threading

        self.inner, self.prompts, self.lock = inner, [], threading.Lock()

    @property
    def calls(self):
        return len(self.prompts)

    def __call__(self, messages, params):
        import time

        time.sleep(0.1)
        with self.lock:
            self.prompts.append(messages[-1]["content"])
        return self.inner(messages, params)


def test_a_killed_study_resumes_with_no_duplicate_call(nq_bm25, tmp_path, capsys):
    """kill -9 mid-study loses at most the calls in flight; the rerun sends only the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from sourcebias.cli.main import main

    ds, _ = nq_bm25
    counting = CountingResponder(responder_for(ds.corpus, ds.human_source, POSITION_LOGITS, BETA))
    out, cache, n = tmp_path / "cite", tmp_path / "cache", 30
    with SimulatedServer(counting) as url:
        args = [
            "cite",
            "nq-utd",
            "-r",
            "bm25",
            "--generator",
            f"openai:sim@{url}",
            "-k",
            "3",
            "--max-queries",
            str(n),
            "--concurrency",
            "2",
            "--cache-dir",
            str(cache),
            "-o",
            str(out),
        ]
        proc = subprocess.Popen([sys.executable, "-m", "sourcebias", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
        deadline = time.monotonic() + 300
        while counting.calls < 8 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = counting.calls
        assert 8 <= before < n and not out.exists()  # killed mid-study, nothing committed
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code == 0, capsys.readouterr().err
    result = load_citations(out)
    stored = int(result.answers["cached"].sum())
    assert len(result.answers) == n and not result.answers.duplicated(["query_id", "order"]).any()
    assert stored >= 8 - 2  # what was answered before the kill was kept, but for the 2 calls in flight
    assert len(set(counting.prompts)) == n  # every context was asked
    assert counting.calls - n <= 2  # asked twice: at most the 2 calls in flight when the job died


def _top_from_trec(path, k):
    """query -> [(source, doc_id)] of its k best scores, read by hand (scores differ in this run)."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, docno, _, score, _ = line.split()
        source, doc_id = docno.split("/", 1)  # the test's own file, written with sourcebias' <source>/<doc_id> names
        rows.setdefault(q, []).append((float(score), source, doc_id))
    return {q: [(s, d) for _, s, d in sorted(v, key=lambda x: -x[0])[:k]] for q, v in rows.items()}


def test_ranking_from_a_trec_file_and_from_an_evaluate_folder(nq_bm25, server, tmp_path, capsys):
    from sourcebias.cli.main import main

    _, run = nq_bm25
    _, url = server
    trec = tmp_path / "bm25.trec"
    run.write_trec(trec)
    assert info_code(main, ["evaluate", "nq-utd", "-r", "bm25", "-o", str(tmp_path / "ev")], capsys) == 0
    common = ["--generator", f"openai:sim@{url}", "-k", "3", "--max-queries", "5", "--cache-dir", str(tmp_path / "cache")]
    assert info_code(main, ["cite", "nq-utd", "--run", str(trec), *common, "-o", str(tmp_path / "a")], capsys) == 0
    assert info_code(main, ["cite", "nq-utd", "--run", str(tmp_path / "ev"), *common, "-o", str(tmp_path / "b")], capsys) == 0
    expected = _top_from_trec(trec, 3)
    for out in ("a", "b"):
        p = load_citations(tmp_path / out).passages
        assert p["query_id"].nunique() == 5
        for q, part in p.groupby("query_id"):
            got = [(s, d) for _, s, d in sorted(zip(part["rank"], part["source"], part["doc_id"]))]
            assert got == expected[q], (out, q)
    # the second study asked the same questions: every answer came from the store
    assert bool(load_citations(tmp_path / "b").answers["cached"].all())


def info_code(main, args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    code = info.value.code
    if code:
        print(capsys.readouterr().err)
    return code


def test_an_answer_set_that_cites_nothing_says_why_its_effect_tables_are_empty(nq_bm25):
    """Every answer cites nothing (as SmolLM2's do): every rank and position level is left out of
    the logit, and the rendered effects table says so instead of showing a bare header."""
    from sourcebias.citations.report import citation_report
    from sourcebias.report.render import to_markdown

    ds, run = nq_bm25
    with SimulatedServer(lambda messages, params: (NOTHING, None), model="silent") as url:
        client = open_client(f"openai:silent@{url}", cache=False)
        result = cite_run(run, ds.queries, client, CiteSettings(k=3, orders=1, seed=0), ds.human_source)
    assert result.counts["no_citation"] == result.counts["answers"] > 0
    assert not [r for r in result.effects if r["term"] in ("rank", "position")]
    text = to_markdown(citation_report(result))
    section = text.split("## Rank and position effects", 1)[1]
    assert "none estimated: the logit was not fitted or every rank and position level was left out" in section
