"""Source bias as MTEB tasks: ``mteb.evaluate(model, tasks=sourcebias.mteb.tasks(DIR))``.

Run offline with all-MiniLM-L6-v2 on nq-utd (its first 24 test queries and their judged documents), the task's scores in MTEB's result file must equal
what ``sourcebias evaluate -r minilm`` writes (metrics.csv, statistics.csv) to 1e-6, and MTEB's own
``ndcg_at_10`` (MTEB's code over the mixed corpus, every copy relevant) must equal sourcebias'
NDCG@10 of target ``all``. A model that is not an encoder (MTEB's BM25 baseline) ranks through
MTEB's search; its scores are read the way ``sourcebias evaluate --run`` reads a TREC run.
"""

from __future__ import annotations

import csv
import json
import math

import pytest

mteb = pytest.importorskip("mteb")
pytest.importorskip("sentence_transformers")

import sourcebias.mteb as sbm  # noqa: E402
from sourcebias.cli.main import main  # noqa: E402
from sourcebias.models import hub  # noqa: E402

pytestmark = pytest.mark.slow  # MiniLM encodes about 300 nq-utd documents on each side

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
STAT_FIELDS = (
    "rel_delta",
    "rel_delta_ci_low",
    "rel_delta_ci_high",
    "p_ttest",
    "p_randomization",
    "p_adjusted",
    "p_sign",
    "twin_pref_rate",
    "twin_pref_ci_low",
    "twin_pref_ci_high",
    "twin_pref_p_cluster",
    "delta_ndsr",
    "delta_ndsr_p",
)


def close(a, b, tol=1e-6):
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


@pytest.fixture(scope="module")
def offline_env():
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    yield mp
    mp.undo()
    hub.hub_reachable.cache_clear()


QUERIES = 24  # the first test queries of nq-utd, with the documents judged for them (both sources)


@pytest.fixture(scope="module")
def nq_part(nq_utd, tmp_path_factory):
    """A folder named nq-utd (the task's name) holding the first ``QUERIES`` test queries of
    nq-utd and the documents judged for them, both sources: each side encodes about 300
    documents instead of 1,600."""
    from conftest import write_jsonl, write_qrels

    root = tmp_path_factory.mktemp("mteb-data") / "nq-utd"
    rows = [line.split("\t") for line in (nq_utd / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    qids = list(dict.fromkeys(r[0] for r in rows))[:QUERIES]
    rows = [r for r in rows if r[0] in qids]
    judged = {r[1] for r in rows}
    for corpus in sorted((nq_utd / "corpus").glob("*.jsonl")):
        docs = [json.loads(line) for line in corpus.read_text().splitlines()]
        write_jsonl(root / "corpus" / corpus.name, [d for d in docs if d["_id"] in judged])
    queries = [json.loads(line) for line in (nq_utd / "queries.jsonl").read_text().splitlines()]
    write_jsonl(root / "queries.jsonl", [q for q in queries if q["_id"] in qids])
    write_qrels(root / "qrels" / "test.tsv", rows)
    return root


@pytest.fixture(scope="module")
def both_runs(nq_part, tmp_path_factory, offline_env):
    """``sourcebias evaluate -r minilm`` and the MTEB run of the same model on the same data; the
    MTEB side has an embedding cache of its own (so its model encodes for itself, not reading the
    vectors sourcebias' MiniLM left in the session's store)."""
    root = tmp_path_factory.mktemp("mteb-equality")
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(nq_part), "-r", "minilm", "-o", str(root / "cli"), "--resamples", "2000", "--bootstrap-resamples", "1000"])
    assert info.value.code in (0, None)
    offline_env.setenv("SOURCEBIAS_CACHE", str(root / "mteb-cache"))
    model = sbm.get_model(MINILM)
    tasks = sbm.tasks(nq_part, significance_resamples=2000, bootstrap_resamples=1000)
    res = mteb.evaluate(model, tasks=tasks, cache=mteb.ResultCache(root / "mteb"), show_progress_bar=False)
    files = list((root / "mteb").rglob("SourceBias-nq-utd.json"))
    assert len(files) == 1, files
    return root / "cli", json.loads(files[0].read_text()), res, tasks[0]


def test_mteb_result_file_equals_sourcebias_evaluate(both_runs):
    cli, result_file, _, _ = both_runs
    scores = result_file["scores"]["test"][0]
    sb = scores["sourcebias"]
    with open(cli / "metrics.csv", newline="") as fh:
        expected = list(csv.DictReader(fh))
    got = {(r["corpus"], r["target"], r["metric"]): r["value"] for r in sb["metrics"]}
    assert len(got) == len(expected) > 100  # mixed targets, sole corpora, shares, Relative Δ
    for row in expected:
        key = (row["corpus"], row["target"], row["metric"])
        assert close(got[key], row["value"]), (key, got[key], row["value"])
    with open(cli / "statistics.csv", newline="") as fh:
        stats = {r["measure"]: r for r in csv.DictReader(fh)}
    got_stats = {r["measure"]: r for r in sb["statistics"]}
    assert set(got_stats) == set(stats) == {"NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10"}
    for m, row in stats.items():
        for f in STAT_FIELDS:
            assert close(got_stats[m][f], row[f]), (m, f, got_stats[m][f], row[f])


def test_flat_scores_are_the_same_values(both_runs):
    cli, result_file, _, _ = both_runs
    scores = result_file["scores"]["test"][0]
    with open(cli / "metrics.csv", newline="") as fh:
        metrics = {(r["corpus"], r["target"], r["metric"]): float(r["value"]) for r in csv.DictReader(fh)}
    with open(cli / "statistics.csv", newline="") as fh:
        stats = {r["measure"]: r for r in csv.DictReader(fh)}
    llm = "llama-2-7b-chat-tmp0.2"
    for k in (1, 3, 5, 10):
        assert close(scores[f"sourcebias_ndcg_at_{k}_human"], metrics[("mixed", "human", f"NDCG@{k}")])
        assert close(scores[f"sourcebias_ndcg_at_{k}_{llm}"], metrics[("mixed", llm, f"NDCG@{k}")])
        assert close(scores[f"sourcebias_relative_delta_ndcg_at_{k}"], metrics[("mixed", "relative_delta", f"NDCG@{k}")])
        assert close(scores[f"sourcebias_relative_delta_ndcg_at_{k}_ci_low"], stats[f"NDCG@{k}"]["rel_delta_ci_low"])
        assert close(scores[f"sourcebias_relative_delta_ndcg_at_{k}_ci_high"], stats[f"NDCG@{k}"]["rel_delta_ci_high"])
    assert close(scores["sourcebias_delta_ndsr_at_10"], stats["NDCG@10"]["delta_ndsr"])
    # MTEB's own scores, by MTEB's code, on the same ranking: every copy relevant = sourcebias' target "all"
    assert result_file["task_name"] == "SourceBias-nq-utd" and scores["main_score"] == scores["ndcg_at_10"]
    # (MTEB rounds its own retrieval scores to 5 decimals, so they agree to 5e-6)
    for k in (1, 3, 5, 10):
        assert close(scores[f"ndcg_at_{k}"], metrics[("mixed", "all", f"NDCG@{k}")], 5e-6)
        assert close(scores[f"recall_at_{k}"], metrics[("mixed", "all", f"Recall@{k}")], 5e-6)


def test_the_retriever_behind_the_task_is_the_mteb_model(both_runs):
    _, result_file, res, task = both_runs
    sb = result_file["scores"]["test"][0]["sourcebias"]
    assert sb["retriever"]["encoder"]["class"] == "MTEBEncoder" and sb["retriever"]["encoder"]["task"] == "SourceBias-nq-utd"
    assert sb["parameters"]["orphans"] == "drop" and sb["parameters"]["queries"] == QUERIES
    assert res.task_results[0].task_name == "SourceBias-nq-utd"
    assert MINILM in task.sb_results


def test_a_search_model_ranks_through_mtebs_search(cocktail_dir, tmp_path, offline_env):
    """MTEB's BM25 baseline (a SearchProtocol model): its scores, written as a TREC run and read back
    by ``sourcebias evaluate --run`` (equal scores by the tie rule), give the task's values."""
    offline_env.setenv("SOURCEBIAS_CACHE", str(tmp_path / "cache"))
    model = mteb.get_model("mteb/baseline-bm25s")
    tasks = sbm.tasks(cocktail_dir, significance_resamples=200, bootstrap_resamples=200, statistics=["relative_delta_ci"])
    mteb.evaluate(model, tasks=tasks, cache=mteb.ResultCache(tmp_path / "res"), prediction_folder=tmp_path / "pred", show_progress_bar=False)
    result_file = json.loads(next((tmp_path / "res").rglob("SourceBias-*.json")).read_text())
    sb = result_file["scores"]["test"][0]["sourcebias"]
    assert any("sole-corpus settings" in n for n in sb["notes"])
    pred = json.loads(next((tmp_path / "pred").rglob("*.json")).read_text())
    ranking = pred["predictions"]["default"]["test"] if "predictions" in pred else pred["default"]["test"]
    trec = tmp_path / "bm25.trec"
    trec.write_text("".join(f"{q} Q0 {d} 0 {s!r} mteb\n" for q, docs in ranking.items() for d, s in docs.items()))
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(cocktail_dir), "--run", f"mteb/baseline-bm25s={trec}", "-o", str(tmp_path / "cli"), "--statistics", "none"])
    assert info.value.code in (0, None)
    with open(tmp_path / "cli" / "metrics.csv", newline="") as fh:
        expected = list(csv.DictReader(fh))
    got = {(r["corpus"], r["target"], r["metric"]): r["value"] for r in sb["metrics"]}
    assert expected and all(close(got[(r["corpus"], r["target"], r["metric"])], r["value"]) for r in expected)


def test_tasks_need_a_dataset_and_are_named_after_it():
    from sourcebias.core.errors import ConfigError

    with pytest.raises(ConfigError, match="at least one dataset"):
        sbm.tasks()
    assert sbm.task_name("data/nq-utd") == "SourceBias-nq-utd"
    assert sbm.task_name("irds:beir/nfcorpus/test") == "SourceBias-beir-nfcorpus-test"
    t = sbm.tasks("data/nq-utd", split="dev")[0]
    assert t.metadata.eval_splits == ["dev"] and t.metadata.type == "Retrieval"
