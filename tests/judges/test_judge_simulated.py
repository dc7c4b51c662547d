"""The judge end to end through the HTTP path of a real OpenAI-compatible server
(:class:`~sourcebias.llmcalls.simulated.SimulatedServer`), with judges whose every answer is known:
the estimates are recomputed here from the judge's own rule, never from the code's tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sourcebias.core.artifacts import load_artifact, read_manifest
from sourcebias.data import load_dataset
from sourcebias.judges import JudgePlan, JudgeSettings, judge, load_judge, run_judge
from sourcebias.judges.known_truth import BiasedJudge
from sourcebias.judges.prompts import parse_grade
from sourcebias.llmcalls import ModelAccess, open_client
from sourcebias.llmcalls.simulated import SimulatedServer


@pytest.fixture(scope="module")
def nq(nq_utd):
    return load_dataset(nq_utd)


def test_twin_bias_recovers_the_judge_rule(nq):
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.5)
    with SimulatedServer(bj) as url:
        client = open_client(f"openai:sim@{url}", cache=False)
        r = judge(nq, client, JudgeSettings(seed=3), plan=JudgePlan(max_queries=12))
    llm = nq.other_sources[0]
    # the estimate, by hand: the judge's own grades of every judged pair of the sampled queries
    queries = sorted(set(r.grades["query_id"]))
    diffs, exp_diffs = [], []
    for q in queries:
        for doc_id in nq.qrels[q]:
            h, t = (nq.corpus[nq.corpus.position(doc_id, s)].retrieval_text() for s in (nq.human_source, llm))
            gh, gl = bj.grade(nq.queries[q], h, False, 3), bj.grade(nq.queries[q], t, False, 3)
            diffs.append(gl - gh)
            exp_diffs.append(bj.expected(gl) - bj.expected(gh))
    row = r.twin_bias(llm)
    assert len(queries) == 12 and row["items"] == len(diffs) == 120 and row["missing"] == 0
    assert row["estimate"] == pytest.approx(np.mean(diffs))
    assert r.twin_bias(llm, "expected grade")["estimate"] == pytest.approx(np.mean(exp_diffs))
    assert row["low"] <= 0.5 <= row["high"] and row["p"] < 0.05


def test_pairwise_and_disclosure_recover_known_effects(nq):
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.0, label_effect=0.6, preference=0.3, position=0.15)
    with SimulatedServer(bj) as url:
        r = judge(nq, open_client(f"openai:sim@{url}", cache=False), JudgeSettings(modes=("disclosure", "pairwise")), plan=JudgePlan(max_queries=20))
    rows = {(x["quantity"], x["llm_source"]): x for x in r.rows("pairwise") + r.rows("disclosure")}
    llm = nq.other_sources[0]
    src, pos = rows[("pairwise: LLM copy preferred", llm)], rows[("pairwise: first passage preferred", llm)]
    assert src["items"] == 200 and src["low"] <= 0.3 <= src["high"] and pos["low"] <= 0.15 <= pos["high"]
    human = rows[("disclosed AI − human", f"copies of {nq.human_source}")]
    assert human["low"] <= 0.6 <= human["high"]
    assert r.rows("twin_bias") == []  # no grade mode, no twin bias


def test_unparseable_answers_are_counted_and_left_out(nq):
    llm_texts = {d.retrieval_text() for d in nq.corpus if d.source != nq.human_source}

    def responder(messages, params):
        prompt = messages[-1]["content"]
        is_llm = any(f"Passage: {t}\n" in prompt for t in llm_texts)
        return ("##final score: 2" if is_llm else "Relevant, I think."), None  # every original unparseable, no log-probabilities

    with SimulatedServer(responder) as url:
        r = judge(nq, open_client(f"openai:sim@{url}", cache=False), JudgeSettings(), plan=JudgePlan(max_queries=3))
    (p,) = r.rows("parse")
    assert (p["answers"], p["unparseable"]) == (60, 30)
    row = r.twin_bias()
    assert math.isnan(row["estimate"]) and row["missing"] == 30 and row["items"] == 0
    assert all(q != "expected grade" for q in (x["quantity"] for x in r.rows("twin_bias")))
    assert any("30 of 60 answers unparseable" in n for n in r.notes)
    assert any("no log-probabilities" in n for n in r.notes)


def test_refusals_give_no_expected_grade_digit_prompt(nq):
    # issue 38 point 1: every answer "I cannot grade this passage." (unparseable) with its first token's top log-probabilities on
    # "I" and about 5% on the grades; before, the expected-grade row was fitted on them: originals (3·e^-3.5 + e^-4) / (e^-3.5 + e^-4)
    # = 2.245, twins (swapped) 1.755, so "expected grade −0.490, left out 0" beside "grade: every answer unparseable"
    llm_texts = {d.retrieval_text() for d in nq.corpus if d.source != nq.human_source}

    def responder(messages, params):
        is_llm = any(f"Passage: {t}\n" in messages[-1]["content"] for t in llm_texts)
        return "I cannot grade this passage.", ({"I": -0.05, "1": -3.5, "3": -4.0} if is_llm else {"I": -0.05, "3": -3.5, "1": -4.0})

    with SimulatedServer(responder) as url:
        r = judge(nq, open_client(f"openai:sim@{url}", cache=False), JudgeSettings(prompt="digit", max_tokens=1), plan=JudgePlan(max_queries=3))
    (p,) = r.rows("parse")
    assert (p["answers"], p["unparseable"], p["no_expected_grade"]) == (60, 60, {"unparsed": 60})
    assert r.grades["expected"].isna().all() and r.grades["grade_mass"].isna().all()
    assert not [x for x in r.rows("twin_bias") if x["quantity"] == "expected grade" and x["items"] > 0]
    assert r.twin_bias()["items"] == 0 and r.twin_bias()["missing"] == 30
    assert any("60 of 60 answers unparseable" in n for n in r.notes)


def assessor_responder(ds):
    """Grades an original as the assessors did and its twin one grade higher (at most 3)."""
    grade_of = {}
    for q, docs in ds.qrels.items():
        for doc_id, g in docs.items():
            for s in ds.sources:
                pos = ds.corpus.position(doc_id, s)
                grade_of[(ds.queries[q], ds.corpus[pos].retrieval_text())] = g if s == ds.human_source else min(3, g + 1)

    def responder(messages, params):
        prompt = messages[-1]["content"]
        q = prompt.split("Query: ", 1)[1].split("\nPassage: ", 1)
        passage = q[1].split("\n\nSplit this problem", 1)[0].rstrip("\n")
        return f"##final score: {grade_of[(q[0], passage)]}", None

    return responder


def test_run_judge_writes_a_folder_that_loads_back_and_evaluates(nq_utd, nq, tmp_path):
    out = tmp_path / "judge"
    with SimulatedServer(assessor_responder(nq)) as url:
        result, path = run_judge(
            str(nq_utd),
            f"openai:sim@{url}",
            out,
            retrievers=["bm25", "tfidf"],
            plan=JudgePlan(max_queries=10, resamples=500),
            access=ModelAccess(cache_dir=tmp_path / "cache"),
        )
    assert read_manifest(path)["kind"] == "judge"
    assert load_artifact(path) == result == load_judge(path)
    human, llm = nq.human_source, nq.other_sources[0]
    # the judge graded every original as the assessors did: κ = 1, and the same Relative Δ under both qrels
    assert {a["source"]: a["kappa_binary"] for a in result.rows("agreement")}[human] == pytest.approx(1.0)
    rows = {(r["run"], r["qrels"]): r for r in result.protocol["rows"]}
    for run in ("bm25", "tfidf"):
        assert rows[(run, f"judge-{human}")]["rel_delta"] == pytest.approx(rows[(run, "assessors")]["rel_delta"])
        assert rows[(run, "assessors")]["queries"] == 10
    # twin grade = original + 1 (at most 3): the twin bias is the share of judged pairs below 3, hand-counted
    grades = [g for q in result.grades["query_id"].unique() for g in nq.qrels[q].values()]
    assert result.twin_bias(llm)["estimate"] == pytest.approx(np.mean([1 if g < 3 else 0 for g in grades]))
    ordering = {o["qrels"]: o for o in result.protocol["orderings"]}[f"judge-{human}"]
    assert ordering["tau"] == pytest.approx(1.0) and ordering["systems"] == 2 and math.isnan(ordering["p"]) and ordering["queries"] == 10
    # the judge's qrels as a dataset the evaluate command reads
    judged = load_dataset(path / "dataset", split=f"judge-{llm}")
    assert judged.qrels.n_judgements == 100 and all(judged.qrels[q][d] == min(3, nq.qrels[q][d] + 1) for q in judged.qrels for d in judged.qrels[q])
    assert (path / "judge.png").stat().st_size > 10_000 and "Twin bias" in (path / "summary.md").read_text()


def test_rerun_reads_every_answer_back(nq_utd, nq, tmp_path):
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)
    with SimulatedServer(bj) as url:
        first, _ = run_judge(
            str(nq_utd), f"openai:sim@{url}", tmp_path / "a", plan=JudgePlan(max_queries=2, resamples=200), access=ModelAccess(cache_dir=tmp_path / "cache")
        )
        calls = bj.calls
        again, _ = run_judge(
            str(nq_utd), f"openai:sim@{url}", tmp_path / "b", plan=JudgePlan(max_queries=2, resamples=200), access=ModelAccess(cache_dir=tmp_path / "cache")
        )
        more, _ = run_judge(
            str(nq_utd), f"openai:sim@{url}", tmp_path / "c", plan=JudgePlan(max_queries=3, resamples=200), access=ModelAccess(cache_dir=tmp_path / "cache")
        )
    assert calls == 40 and first.judge["calls"] == 40
    assert bj.calls == 40 + 20  # the rerun sent nothing; the larger sample only its new query's 20 calls
    assert json.dumps(again.analyses, sort_keys=True) == json.dumps(first.analyses, sort_keys=True) and again.judge["cached"] == 40
    assert parse_grade(more.grades["answer"].iloc[0])[0] is not None


def test_kill_9_loses_at_most_the_calls_in_flight(nq_utd, nq, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)

    def slow(messages, params):
        time.sleep(0.02)
        return bj(messages, params)

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with SimulatedServer(slow) as url:
        args = [
            sys.executable,
            "-m",
            "sourcebias",
            "judge",
            str(nq_utd),
            "--judge",
            f"openai:sim@{url}",
            "--max-queries",
            "6",
            "--concurrency",
            "2",
            "--resamples",
            "200",
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
        proc = subprocess.Popen([*args, "-o", str(tmp_path / "a")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while bj.calls < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = bj.calls
        assert 0 < before < 120 and not (tmp_path / "a").exists()  # killed mid-run: no half-written folder
        done = subprocess.run([*args, "-o", str(tmp_path / "a")], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    result = load_judge(tmp_path / "a")
    # 120 calls in all; the rerun sent only those not stored, so at most the 2 in flight were asked twice
    assert result.judge["calls"] == 120 and result.judge["cached"] >= before - 2
    assert 120 <= bj.calls <= 120 + 2


def test_top_k_of_a_run_is_graded_too(nq_utd, nq, tmp_path):
    from sourcebias.retrieval.registry import build_retriever

    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source)
    with SimulatedServer(bj) as url:
        result, _ = run_judge(
            str(nq_utd),
            f"openai:sim@{url}",
            tmp_path / "o",
            retrievers=["bm25"],
            plan=JudgePlan(top_k=3, max_queries=2, resamples=200),
            access=ModelAccess(cache_dir=tmp_path / "cache"),
        )
    queries = sorted(set(result.grades["query_id"]))
    run = build_retriever("bm25").retrieve(nq.corpus, {q: nq.queries[q] for q in queries}, 100)
    expected = set()
    for q in queries:
        top = [nq.corpus.doc_ids[p] for p in run.positions[q][:3].tolist()]
        expected |= {(q, d) for d in top if d not in nq.qrels[q]}
    extra = result.grades[result.grades["origin"] == "run:bm25"]
    assert set(zip(extra["query_id"], extra["doc_id"])) == expected
    assert len(extra) == 2 * len(expected)  # both copies of each
    assert extra["assessor_grade"].isna().all()


def _judge_sim(nq_utd, responder, tmp_path, plan, *, settings=None, retrievers=("bm25",)):
    """``run_judge`` with ``plan`` (and by default BM25's run) against a simulated server."""
    with SimulatedServer(responder) as url:
        return run_judge(
            str(nq_utd),
            f"openai:sim@{url}",
            tmp_path / "o",
            settings=settings,
            retrievers=list(retrievers),
            plan=plan,
            access=ModelAccess(cache_dir=tmp_path / "cache"),
        )


def _judge_bm25(nq_utd, responder, tmp_path, *, queries: int, resamples: int):
    """``run_judge`` with BM25's run on a seeded sample of ``queries``, against a simulated server."""
    return _judge_sim(nq_utd, responder, tmp_path, JudgePlan(max_queries=queries, resamples=resamples))


def test_qrels_with_nothing_relevant_are_reported_not_evaluated(nq_utd, nq, tmp_path):
    result, _ = _judge_bm25(nq_utd, lambda messages, params: ("##final score: 0", None), tmp_path, queries=2, resamples=200)
    assert {r["qrels"] for r in result.protocol["rows"]} == {"assessors"}
    assert sum("no query has a relevant judgement; not evaluated" in n for n in result.notes) == len(nq.sources)
    # two queries: the estimate, and no CI or p (the audit's rule), said in the notes
    assert result.twin_bias()["estimate"] == 0 and math.isnan(result.twin_bias()["p"]) and result.twin_bias()["refused"].startswith("2 queries give 3")
    assert any(n.startswith("grade (") and "no CI and no p: 2 queries" in n for n in result.notes)
    # issue 38, point 5: the caption never names a CI the rows do not have
    from sourcebias.judges.report import judge_report
    from sourcebias.report.render import to_markdown

    text = to_markdown(judge_report(result))
    assert "bootstrap CI over queries" not in text.split("## Answers")[0] and "row(s) without CI or p, the reason in the notes" in text


def test_a_judge_that_never_grades_gives_no_estimate(nq):
    """Every answer "I cannot grade this passage.": nothing parsed, so no estimate, no interval, no p."""
    with SimulatedServer(lambda messages, params: ("I cannot grade this passage.", None)) as url:
        r = judge(nq, open_client(f"openai:sim@{url}", cache=False), JudgeSettings(seed=1, top_logprobs=0), plan=JudgePlan(max_queries=6))
    (row,) = r.rows("twin_bias")
    assert math.isnan(row["estimate"]) and math.isnan(row["low"]) and math.isnan(row["p"]) and row["missing"] == 60
    assert row["refused"] == "nothing to estimate from: all 60 items were left out (no value the model gave could be read)"


def test_the_protocol_on_four_queries_prints_relative_delta_without_a_ci_and_says_why(nq_utd, nq, tmp_path):
    """4 queries give C(7, 4) = 35 distinct resamples, fewer than the 40 a 95% interval's tails need:
    the package's rule refuses the interval wherever it is printed, the judge's protocol table too."""
    result, path = _judge_bm25(nq_utd, assessor_responder(nq), tmp_path, queries=4, resamples=500)
    rows = result.protocol["rows"]
    assert rows and all(r["queries"] == 4 for r in rows)
    assert all(math.isfinite(r["rel_delta"]) and math.isnan(r["low"]) and math.isnan(r["high"]) for r in rows)
    why = "4 queries give 35 distinct resamples of the queries, too few for a 95% interval clustered by query (its tails need 40)"
    assert all(r["ci_method"] == f"none ({why})" for r in rows)
    summary = (path / "summary.md").read_text()
    assert f"No CI for bm25 under assessors, bm25 under judge-{nq.human_source}, bm25 under judge-{nq.other_sources[0]}: {why}." in summary


def test_run_judge_draws_its_sample_once(nq_utd, tmp_path, monkeypatch):
    """The job draws the seeded sample before it opens the model and hands it to ``judge``;
    ``judge`` does not draw it again (it did: the same draw twice per job)."""
    import sourcebias.judges.job as job

    drawn = []
    real = job.judged_queries

    def counting(dataset, **kw):
        drawn.append(real(dataset, **kw))
        return drawn[-1]

    monkeypatch.setattr(job, "judged_queries", counting)
    nq = load_dataset(nq_utd)
    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.0)
    result, _ = _judge_sim(nq_utd, bj, tmp_path, JudgePlan(max_queries=3), settings=JudgeSettings(seed=5), retrievers=())
    assert len(drawn) == 1 and len(drawn[0]) == 3
    assert sorted(set(result.grades["query_id"])) == sorted(drawn[0])


def test_max_docs_grades_a_seeded_sample_of_each_querys_judged_documents(nq_utd, nq, tmp_path):
    """``--max-docs 3``: each query's 3 documents are the first 3 of ``default_rng((seed, crc32(query)))``'s
    permutation of its judged ids in sorted order (drawn here with NumPy, not the code); both copies
    of each are graded; the written assessors' qrels hold the same documents; the note says how many."""
    import zlib

    bj = BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.5)
    result, path = _judge_sim(nq_utd, bj, tmp_path, JudgePlan(max_queries=6, max_docs=3, resamples=200), settings=JudgeSettings(seed=5))
    queries = sorted(set(result.grades["query_id"]))
    expected = set()
    for q in queries:
        ids = sorted(nq.qrels[q])
        picked = np.random.default_rng((5, zlib.crc32(q.encode()))).permutation(len(ids))[:3]
        expected |= {(q, ids[i]) for i in picked}
    assert len(queries) == 6 and len(expected) == 18
    assert set(zip(result.grades["query_id"], result.grades["doc_id"])) == expected
    assert len(result.grades) == 36 and sorted(set(result.grades["source"])) == sorted(nq.sources)
    assert result.twin_bias()["items"] == 18
    assessors = [line.split("\t")[:2] for line in (path / "qrels" / "assessors.tsv").read_text().splitlines()[1:]]
    assert {(q, d) for q, d in assessors} == expected
    saved = json.loads((path / "judge.json").read_text())
    assert (saved["dataset"]["judged_documents"], saved["dataset"]["judged_documents_available"]) == (18, 60)
    assert saved["settings"]["max_docs"] == 3
    assert result.notes[0].startswith("graded a seeded sample of at most 3 judged documents per query (--max-docs): 18 of the queries' 60")


def test_the_document_sample_is_nested_and_independent_of_file_order(nq):
    """A larger ``max_docs`` holds a smaller one (a grown study reuses its answers), and the qrels'
    order in the file does not change the draw."""
    from types import SimpleNamespace

    from sourcebias.judges.items import judged_documents, judged_queries

    queries = judged_queries(nq, max_queries=10, seed=2)
    small, large = (judged_documents(nq, queries, max_docs=k, seed=2) for k in (3, 7))
    assert all(set(small[q]) <= set(large[q]) and len(small[q]) == 3 and len(large[q]) == 7 for q in queries)
    reversed_qrels = SimpleNamespace(qrels={q: dict(reversed(list(nq.qrels[q].items()))) for q in queries})
    assert judged_documents(reversed_qrels, queries, max_docs=3, seed=2) == small
    assert judged_documents(nq, queries, seed=2) == {q: sorted(nq.qrels[q]) for q in queries}
