"""`sourcebias evaluate`: the papers' BM25 figures on nq-utd, the output folder, clear errors."""

import csv
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import LLAMA

from sourcebias.cli.main import expand_greedy_options, main

# Cocktail (Dai et al., 2024), BM25 on NQ-UTD, mixed corpus (Elasticsearch).
PAPER = {"NDCG@1": 76.9, "NDCG@3": 70.5, "NDCG@5": 68.7, "delta@1": 37.2, "delta@3": 9.0, "delta@5": 4.4}


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_greedy_k_option():
    assert expand_greedy_options(["evaluate", "d", "--k", "1", "3", "5", "-o", "x"]) == ["evaluate", "d", "--k", "1", "--k", "3", "--k", "5", "-o", "x"]
    assert expand_greedy_options(["--metric", "NDCG", "MAP@3", "data"]) == ["--metric", "NDCG", "--metric", "MAP@3", "data"]


@pytest.fixture(scope="module")
def nq_out(nq_utd, tmp_path_factory):
    out = tmp_path_factory.mktemp("nq") / "out"
    with pytest.raises(SystemExit) as info:
        main(
            [
                "evaluate",
                str(nq_utd),
                "--retriever",
                "bm25",
                "--retriever",
                "tfidf",
                "--split",
                "test",
                "--k",
                "1",
                "3",
                "5",
                "--output",
                str(out),
                "--resamples",
                "1000",
            ]
        )
    assert info.value.code in (0, None)
    return out


def read_trec(path, docnos_path):
    """An independent reader of a TREC run and its docnos table: {qid: [(doc_id, source, rank, score)]}."""
    with open(docnos_path, newline="") as fh:
        table = {r["docno"]: (r["doc_id"], r["source"]) for r in csv.DictReader(fh, delimiter="\t")}
    out = {}
    for line in Path(path).read_text().splitlines():
        q, _, docno, rank, score, _tag = line.split()
        d, s = table[docno]
        out.setdefault(q, []).append((d, s, int(rank), float(score)))
    return out


def read_qrels(path):
    out = {}
    for line in Path(path).read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        out.setdefault(q, {})[d] = int(g)
    return out


def ndcg(ranked, labels, target, sources, k):
    """NDCG@k written out by hand (trec_eval's definition): gain = grade, discount log2(rank + 1);
    copies of sources other than the target count as grade 0; the ideal list holds every copy
    that counts as relevant."""
    gains = [labels.get(d, 0) if target in ("all", s) else 0 for d, s, *_ in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    copies = len(sources) if target == "all" else 1
    ideal = sorted([g for g in labels.values() if g > 0] * copies, reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def read_metrics(out):
    with (out / "metrics.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    return {(r["retriever"], r["corpus"], r["target"], r["metric"]): float(r["value"]) for r in rows}, rows


def test_bm25_reproduces_cocktail_figures(nq_out):
    """Lucene's BM25 with one-byte norms gives the paper's Elasticsearch figures on all targets to
    the first decimal. Relative Δ differs where scores tie: Elasticsearch orders ties by internal
    document id (indexing order), sourcebias by the fair tie rule."""
    m, _ = read_metrics(nq_out)
    for k in (1, 3, 5):
        assert round(m[("bm25", "mixed", "all", f"NDCG@{k}")] * 100, 1) == PAPER[f"NDCG@{k}"]
    assert round(m[("bm25", LLAMA, LLAMA, "NDCG@1")] * 100, 1) == 73.1  # paper: LLM only 73.1
    assert m[("bm25", "human", "human", "NDCG@1")] * 100 == pytest.approx(71.9, abs=1.0)  # paper 71.9
    assert m[("bm25", "mixed", "relative_delta", "NDCG@1")] == pytest.approx(PAPER["delta@1"], abs=1.0)
    assert m[("bm25", "mixed", "relative_delta", "NDCG@3")] == pytest.approx(PAPER["delta@3"], abs=4.0)
    assert m[("bm25", "mixed", "relative_delta", "NDCG@5")] == pytest.approx(PAPER["delta@5"], abs=1.0)


def test_metrics_csv_is_tidy_and_consistent(nq_out):
    m, rows = read_metrics(nq_out)
    assert list(rows[0]) == ["retriever", "corpus", "target", "metric", "value"]
    assert {r["corpus"] for r in rows} == {"mixed", "human", LLAMA}
    assert {r["target"] for r in rows} == {"human", LLAMA, "all", "relative_delta"}
    for r in rows:
        if r["target"] != "relative_delta":
            assert 0.0 <= float(r["value"]) <= 1.0
    h, g = m[("bm25", "mixed", "human", "NDCG@3")], m[("bm25", "mixed", LLAMA, "NDCG@3")]
    assert m[("bm25", "mixed", "relative_delta", "NDCG@3")] == pytest.approx((h - g) / ((h + g) / 2) * 100)
    # Shares of the two sources in the top k add up to 1.
    for k in (1, 3, 5):
        assert m[("bm25", "mixed", "human", f"Share@{k}")] + m[("bm25", "mixed", LLAMA, f"Share@{k}")] == pytest.approx(1.0)


def test_runs_per_query_and_manifest(nq_out, nq_utd):
    runs = nq_out / "runs"
    names = sorted(p.name for p in runs.iterdir())
    assert "bm25.mixed.trec" in names and f"bm25.{LLAMA}.trec" in names and "docnos.tsv" in names
    run = read_trec(runs / "bm25.mixed.trec", runs / "docnos.tsv")
    assert len(run) == 80
    first = run["Sports_q1"]
    assert {s for _, s, _, _ in first} == {"human", LLAMA}
    assert [r for _, _, r, _ in first] == list(range(1, len(first) + 1))
    with (nq_out / "per_query.csv").open() as fh:
        pq = list(csv.DictReader(fh))
    assert {r["query_id"] for r in pq} == set(run)
    manifest = json.loads((nq_out / "manifest.json").read_text())
    assert manifest["kind"] == "evaluate"
    assert manifest["inputs"]["dataset"]["split"] == "test"
    assert set(manifest["inputs"]["dataset"]["sources"]) == {"human", LLAMA}
    assert manifest["parameters"]["depth"] == 1000 and manifest["parameters"]["seed"] == 0
    assert "bm25s" in manifest["versions"] and "pytrec-eval-terrier" in manifest["versions"]
    qrels_sha = hashlib.sha256((nq_utd / "qrels" / "test.tsv").read_bytes()).hexdigest()
    assert manifest["inputs"]["files"]["qrels"]["sha256"] == qrels_sha
    assert manifest["models"]["bm25"]["k1"] == 1.2
    # The manifest lists every file in the folder, with its real size and checksum.
    on_disk = {p.relative_to(nq_out).as_posix() for p in nq_out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["outputs"]["files"]) == on_disk and "summary.tex" in on_disk
    for rel, entry in manifest["outputs"]["files"].items():
        data = (nq_out / rel).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_paired_tests_match_an_independent_computation(nq_out):
    """The paired tests of statistics.csv (the one implementation: the paired_tests statistic)
    against SciPy and a sign-flip test by hand, from the written per-query values."""
    from scipy import stats

    with (nq_out / "per_query.csv").open() as fh:
        pq = list(csv.DictReader(fh))
    with (nq_out / "statistics.csv").open() as fh:
        sig = {(r["retriever"], r["measure"]): r for r in csv.DictReader(fh)}
    assert not (nq_out / "significance.csv").exists()  # the second, uncorrected path is gone
    rng = np.random.default_rng(123)
    for retriever, metric in [("bm25", "NDCG@1"), ("bm25", "NDCG@5"), ("tfidf", "NDCG@3")]:
        vals = {
            t: {r["query_id"]: float(r["value"]) for r in pq if (r["retriever"], r["corpus"], r["target"], r["metric"]) == (retriever, "mixed", t, metric)}
            for t in ("human", LLAMA)
        }
        qs = sorted(vals["human"])
        h = np.array([vals["human"][q] for q in qs])
        g = np.array([vals[LLAMA][q] for q in qs])
        row = sig[(retriever, metric)]
        assert float(row["mean_difference"]) == pytest.approx(np.mean(h - g))
        assert float(row["p_ttest"]) == pytest.approx(stats.ttest_rel(h, g).pvalue)
        # Sign-flip randomization by hand (20,000 draws): the file's p (1,000 resamples) agrees
        # within Monte Carlo error: 4 standard errors of a two-sided p (twice a tail share q of
        # 1,000 draws), about 0.11 at p = 0.5.
        d = h - g
        flips = rng.choice([-1.0, 1.0], size=(20000, len(d)))
        p_hand = np.mean(np.abs((flips * d).mean(axis=1)) >= abs(d.mean()) - 1e-12)
        q = p_hand / 2
        assert float(row["p_randomization"]) == pytest.approx(p_hand, abs=4 * 2 * np.sqrt(q * (1 - q) / 1000) + 0.005)


def test_metrics_equal_an_independent_ndcg_of_the_saved_run(nq_out, nq_utd):
    """NDCG per target recomputed by hand from the written run and the qrels file."""
    m, _ = read_metrics(nq_out)
    labels = read_qrels(nq_utd / "qrels" / "test.tsv")
    for retriever in ("bm25", "tfidf"):
        run = read_trec(nq_out / "runs" / f"{retriever}.mixed.trec", nq_out / "runs" / "docnos.tsv")
        for target in ("human", LLAMA, "all"):
            for k in (1, 3, 5):
                hand = np.mean([ndcg(run.get(q, []), labels[q], target, ["human", LLAMA], k) for q in labels if any(g > 0 for g in labels[q].values())])
                assert m[(retriever, "mixed", target, f"NDCG@{k}")] == pytest.approx(hand, abs=1e-9), (retriever, target, k)


@pytest.mark.parametrize(
    "setup, args, fragments",
    [
        (lambda d: (d / "qrels" / "test.tsv").unlink(), [], ["Error:", "split 'test' not found"]),
        (lambda d: (d / "corpus" / "llm.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": \n'), [], ["llm.jsonl:2:", "malformed JSON"]),
        (lambda d: None, ["--retriever", "bm99"], ["unknown retriever 'bm99'"]),
        (lambda d: None, ["--source", "gpt-4"], ["unknown source(s) gpt-4"]),
        (lambda d: None, ["--metric", "NDGC"], ["unknown measure 'NDGC'"]),
    ],
)
def test_bad_inputs_give_a_message_not_a_traceback(cocktail_dir, capsys, setup, args, fragments):
    setup(cocktail_dir)
    code, out, err = run_cli(["evaluate", str(cocktail_dir)] + args, capsys)
    assert code == 2
    assert "Traceback" not in err + out
    for f in fragments:
        assert f in err.replace("\n", "")


def test_missing_dataset_folder(tmp_path, capsys):
    code, _, err = run_cli(["evaluate", str(tmp_path / "nope")], capsys)
    assert code == 2 and "dataset folder not found" in err


def test_a_dir_comma_split_argument_is_told_to_use_split(cocktail_dir, capsys):
    """``judge`` reads ``DIR,split``; ``evaluate`` takes ``--split``: the error says so instead of "not found" alone."""
    code, _, err = run_cli(["evaluate", f"{cocktail_dir},dev", "-r", "bm25"], capsys)
    assert code == 2 and "reads as DIR,split; this command takes the split as an option (--split dev)" in err.replace("\n", "")


def test_help_and_retrievers_listing(capsys):
    code, out, _ = run_cli(["evaluate", "--help"], capsys)
    assert code == 0 and "--retriever" in out and "Relative" in out
    code, out, _ = run_cli(["retrievers"], capsys)
    assert code in (0, None) and "bm25" in out and "tfidf" in out


def test_tiny_dataset_end_to_end(cocktail_dir, tmp_path, capsys):
    code, out, _ = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "--metric", "NDCG", "-o", str(tmp_path / "o")], capsys)
    assert code in (0, None)
    assert "Rel Δ" in out
    m, _ = read_metrics(tmp_path / "o")
    # q1 "cat on a mat": BM25 ranks the human d1 ("The cat sat on the mat") first; q2 "barking
    # dogs" stems to "bark dog", both d2 copies match; all targets: NDCG@1 = 1 for both queries.
    assert m[("bm25", "mixed", "all", "NDCG@1")] == 1.0


@pytest.mark.parametrize("layout", ["kdd", "beir"])
def test_evaluate_other_layouts(tmp_path, capsys, layout):
    from conftest import HUMAN_DOCS, LLM_DOCS, QRELS, QUERIES, write_jsonl, write_qrels

    root = tmp_path / layout
    if layout == "kdd":
        write_jsonl(root / "corpus-human.jsonl", HUMAN_DOCS)
        write_jsonl(root / "0.2" / "corpus-llama-2-7b-chat.jsonl", LLM_DOCS)
    else:
        write_jsonl(root / "corpus.jsonl", HUMAN_DOCS)
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_qrels(root / "qrels" / "test.tsv", QRELS)
    code, _out, err = run_cli(["evaluate", str(root), "-r", "bm25", "-r", "tfidf", "--k", "1", "3", "-o", str(tmp_path / "o")], capsys)
    assert code in (0, None), err
    m, rows = read_metrics(tmp_path / "o")
    if layout == "kdd":
        assert ("bm25", "mixed", "relative_delta", "NDCG@1") in m
        assert ("tfidf", "llama-2-7b-chat-tmp0.2", "llama-2-7b-chat-tmp0.2", "NDCG@3") in m
    else:
        assert {r["corpus"] for r in rows} == {"human"} and {r["target"] for r in rows} == {"human"}
        assert m[("bm25", "human", "human", "NDCG@1")] == 1.0


def test_summary_shows_relative_delta_ci_twin_preference_and_delta_ndsr(nq_out, nq_utd):
    """summary.md and statistics.csv of one evaluate run, against values computed here from the
    written per-query values, run and qrels (SciPy for the bootstrap)."""
    from scipy import stats

    with (nq_out / "statistics.csv").open() as fh:
        rows = {(r["retriever"], r["measure"]): r for r in csv.DictReader(fh)}
    summary = (nq_out / "summary.md").read_text()
    with (nq_out / "per_query.csv").open() as fh:
        pq = list(csv.DictReader(fh))
    vals = {
        t: {r["query_id"]: float(r["value"]) for r in pq if (r["retriever"], r["corpus"], r["target"], r["metric"]) == ("bm25", "mixed", t, "NDCG@3")}
        for t in ("human", LLAMA)
    }
    qs = list(vals["human"])
    h, g = np.array([vals["human"][q] for q in qs]), np.array([vals[LLAMA][q] for q in qs])
    rel = (h.mean() - g.mean()) / ((h.mean() + g.mean()) / 2) * 100
    boot = stats.bootstrap(
        (h, g),
        lambda x, y, axis=-1: (x.mean(axis) - y.mean(axis)) / ((x.mean(axis) + y.mean(axis)) / 2) * 100,
        paired=True,
        vectorized=True,
        n_resamples=2000,
        method="BCa",
        random_state=np.random.default_rng(0),
    )
    row = rows[("bm25", "NDCG@3")]
    assert float(row["rel_delta"]) == pytest.approx(rel) and row["ci_method"] == "BCa" and float(row["ci_level"]) == 0.95
    lo, hi = boot.confidence_interval
    assert (float(row["rel_delta_ci_low"]), float(row["rel_delta_ci_high"])) == pytest.approx((lo, hi))
    assert f"{rel:.1f} [{lo:.1f}, {hi:.1f}]" in summary and "95% bootstrap CI" in summary and "method: BCa" in summary
    # twin preference from the written run: LLM copy above its original, ties and neither left out
    run = read_trec(nq_out / "runs" / "bm25.mixed.trec", nq_out / "runs" / "docnos.tsv")
    labels = read_qrels(nq_utd / "qrels" / "test.tsv")
    llm_first = human_first = 0
    for q, lab in labels.items():
        pos = {(d, s): (r, sc) for d, s, r, sc in run.get(q, [])}
        for d, grade in lab.items():
            a, b = pos.get((d, "human")), pos.get((d, LLAMA))
            if grade <= 0 or (a is None and b is None) or (a and b and a[1] == b[1]):
                continue
            if a is None or (b is not None and b[0] < a[0]):
                llm_first += 1
            else:
                human_first += 1
    rate = llm_first / (llm_first + human_first)
    assert float(row["twin_pref_rate"]) == pytest.approx(rate) and int(row["twin_pref_pairs"]) == llm_first + human_first
    assert float(row["twin_pref_p"]) == pytest.approx(stats.binomtest(llm_first, llm_first + human_first).pvalue)
    # ΔNDSR@10 from the written run
    w = 1 / np.log2(np.arange(2, 12))
    per_q = []
    for q in qs:
        top = [s for _, s, _, _ in run[q][:10]]
        ww = w[: len(top)]
        per_q.append((sum(x for x, s in zip(ww, top) if s == "human") - sum(x for x, s in zip(ww, top) if s == LLAMA)) / ww.sum())
    assert float(row["delta_ndsr"]) == pytest.approx(np.mean(per_q))
    assert float(row["delta_ndsr_p"]) == pytest.approx(stats.ttest_1samp(per_q, 0).pvalue)
    assert f"| bm25 | {rate * 100:.1f} | {llm_first + human_first} |" in summary and f"{np.mean(per_q):.3f}" in summary
    assert "\\toprule" in (nq_out / "summary.tex").read_text() and "bootstrap CI" in (nq_out / "summary.tex").read_text()


@pytest.mark.parametrize("policy", ["drop", "keep"])
def test_the_summary_prints_the_orphan_policy_and_counts(cocktail_dir, tmp_path, capsys, policy):
    """The LLM twin of the judged d1 is missing: with drop its judgement goes (q1 has no other
    relevant document, so q1 is no longer evaluated); with keep it is scored, and said so."""
    llm = cocktail_dir / "corpus" / "llm.jsonl"
    llm.write_text("".join(line + "\n" for line in llm.read_text().splitlines() if '"d1"' not in line))
    out = tmp_path / f"out-{policy}"
    code, stdout, _ = run_cli(
        ["evaluate", str(cocktail_dir), "--k", "1", "--orphans", policy, "--bootstrap-resamples", "200", "--resamples", "200", "-o", str(out)], capsys
    )
    assert code in (0, None)
    summary = (out / "summary.md").read_text()
    if policy == "drop":
        assert "Orphans (policy drop): the judgements of 1 judged originals" in summary and "1 queries no longer evaluated" in summary
    else:
        assert "Orphans (policy keep): 1 judged originals without a copy in every source are scored" in summary
    assert "Orphans (policy" in stdout.replace("\n", " ")
    stats_rows = list(csv.DictReader((out / "statistics.csv").open()))
    unpaired = int(stats_rows[0]["twin_pref_unpaired"])
    assert unpaired == (0 if policy == "drop" else 1)  # kept, d1's pair has no LLM copy: unpaired, not a human win


def test_the_old_significance_option_is_refused_before_work(cocktail_dir, tmp_path, capsys):
    """--significance computed nothing (the paired tests are the paired_tests statistic, on by
    default): it is gone, so an old script that passes it is refused before any work, not ignored."""
    out = tmp_path / "o"
    code, stdout, stderr = run_cli(["evaluate", str(cocktail_dir), "--k", "1", "--significance", "-o", str(out)], capsys)
    assert code == 2
    assert "No such option: --significance" in " ".join((stdout + stderr).split())
    assert not out.exists()


def _p_text(v: float) -> str:
    """A p-value as the tables write it, from the CSV value (3 significant digits)."""
    return "< 1e-300" if v == 0 else (f"{v:.3g}" if v >= 1e-3 else f"{v:.2e}")


def test_no_number_is_cut_in_an_80_column_terminal(nq_out, nq_utd):
    """The quick start's tables (papers' table and both statistics tables) printed at 80 columns:
    every number metrics.csv and statistics.csv hold appears whole on screen (compared with the
    values formatted here from the CSVs), and nothing is cut with an ellipsis."""
    from rich.console import Console

    from sourcebias.data import load_dataset
    from sourcebias.evaluation import load_result
    from sourcebias.report import result_report, to_rich

    report = result_report(load_result(nq_out), load_dataset(nq_utd).qrels, significance_resamples=1000)
    console = Console(width=80, record=True, color_system=None)
    console.print(to_rich(report))
    screen = console.export_text()
    assert "…" not in screen
    tokens = {t.rstrip("*") for t in screen.replace("│", " ").replace("┃", " ").split()}
    expected = set()
    with (nq_out / "metrics.csv").open() as fh:
        for r in csv.DictReader(fh):
            if r["metric"].startswith(("NDCG", "MAP", "Recall", "P@")) and r["target"] in ("all", "human", LLAMA):
                expected.add(f"{float(r['value']) * 100:.1f}")
            elif r["target"] == "relative_delta" and r["corpus"] == "mixed":
                expected.add(f"{float(r['value']):.1f}")
    with (nq_out / "statistics.csv").open() as fh:
        stats_rows = list(csv.DictReader(fh))
    assert len(stats_rows) == 6
    for r in stats_rows:
        f = {
            k: float(v)
            for k, v in r.items()
            if k not in ("retriever", "llm_source", "measure") and v not in ("",) and v.replace(".", "", 1).replace("-", "", 1).replace("e", "", 1).isdigit()
        }
        expected |= {f"{f['rel_delta']:.1f}", f"[{f['rel_delta_ci_low']:.1f},", f"{f['rel_delta_ci_high']:.1f}]", f"{f['mean_difference']:.3f}"}
        expected |= {_p_text(f[k]) for k in ("p_ttest", "p_sign", "p_randomization", "p_adjusted")}
        expected |= {
            f"{f['twin_pref_rate'] * 100:.1f}",
            f"{int(f['twin_pref_pairs']):,}",
            f"{int(f['twin_pref_queries']):,}",
            f"{f['twin_pref_ci_low'] * 100:.1f}",
            f"{f['twin_pref_ci_high'] * 100:.1f}",
        }
        expected |= {
            _p_text(f["twin_pref_p_cluster"]),
            _p_text(f["twin_pref_p"]),
            f"{f['delta_ndsr']:.3f}",
            _p_text(f["delta_ndsr_p"]),
            _p_text(f["delta_ndsr_p_sign"]),
        }
    missing = sorted(expected - tokens)
    assert not missing, f"not shown whole at 80 columns: {missing}\n{screen}"


def test_a_split_table_keeps_its_caption_and_title_readable_at_the_terminal_width():
    """A table split into parts whose last part is narrow: the caption is wrapped at the console's
    width (not folded into the narrow part's few columns), and a title wider than its part is
    printed whole above it."""
    from rich.console import Console

    from sourcebias.evaluation.stats.base import Column
    from sourcebias.report.model import Report, Table
    from sourcebias.report.render import to_rich

    columns = [Column("name", "retriever", "text")] + [Column(f"c{i}", f"column number {i}", "num", 3) for i in range(4)]
    caption = "A caption of several sentences that explains the method used. " * 4
    table = Table(
        "wide",
        "A long title of a table that is split into parts",
        columns,
        [{"name": "bm25", **{f"c{i}": 123456.0 + i for i in range(4)}}],
        caption=caption.strip(),
    )
    console = Console(width=60, record=True, color_system=None)
    console.print(to_rich(Report("report", [table])))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    caption_lines = [line for line in lines if "caption" in line or "method" in line]
    assert max(len(line) for line in caption_lines) > 45  # wrapped at about 60 columns
    assert any(line.startswith("A long title of a table that is split into parts") for line in lines)


def test_leading_integer_keys_are_repeated_in_every_part_of_a_split_table():
    """A table keyed by (retriever, round) split for a narrow terminal repeats both key columns in
    every part, so no part has rows that cannot be told apart."""
    from rich.console import Console

    from sourcebias.evaluation.stats.base import Column
    from sourcebias.report.model import Report, Table
    from sourcebias.report.render import to_rich

    columns = [Column("name", "retriever", "text"), Column("round", "round", "int")] + [Column(f"c{i}", f"value {i}", "num", 3) for i in range(6)]
    rows = [{"name": "bm25", "round": r, **{f"c{i}": 123456.0 + r for i in range(6)}} for r in range(3)]
    console = Console(width=60, record=True, color_system=None)
    console.print(to_rich(Report("report", [Table("loop", "Loop", columns, rows)])))
    parts = list(console.export_text().split("┏")[1:])
    assert len(parts) > 1
    for block in parts:
        header = block.split("┡")[0]
        assert "retriever" in header and "round" in header


def test_evaluate_draws_the_source_bias_figure_and_says_when_it_cannot(cocktail_dir, tmp_path, monkeypatch):
    """An output folder holds figures/source_bias.png (listed in the manifest) with one panel per
    retriever and the headline measure's cut-offs; without matplotlib the folder says it was not
    drawn instead of leaving a silent gap."""
    import sys

    import matplotlib.image

    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate, measure_grid
    from sourcebias.retrieval import build_retriever
    from sourcebias.study import write_evaluation
    from sourcebias.study.figure import headline_measures

    ds = load_dataset(cocktail_dir)
    result = evaluate(ds, [build_retriever("bm25"), build_retriever("tfidf")], measures=measure_grid(["MAP", "NDCG", "Share"], [1, 3]))
    assert [str(m) for m in headline_measures(result)] == ["NDCG@1", "NDCG@3"]  # NDCG when computed, its cut-offs
    out = write_evaluation(result, tmp_path / "with")
    image = matplotlib.image.imread(out / "figures" / "source_bias.png")
    assert image.shape[1] > image.shape[0] > 300  # two panels side by side
    assert "figures/source_bias.png" in json.loads((out / "manifest.json").read_text())["outputs"]["files"]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the analysis extra were not installed
    out = write_evaluation(result, tmp_path / "without")
    assert "not drawn: matplotlib is not installed" in (out / "figures" / "not-drawn.txt").read_text()


def test_no_figure_leaves_the_figure_out_says_so_and_the_note_draws_it_later(cocktail_dir, tmp_path, capsys):
    """``evaluate --no-figure`` draws nothing (matplotlib is the run's largest fixed cost), the folder
    and the printed notes say so, and the note's recipe draws from the loaded folder the very figure
    that a run with the figure writes (the same pixels)."""
    import matplotlib.image

    from sourcebias.evaluation import load_result
    from sourcebias.study.figure import plot_source_bias

    args = ["evaluate", str(cocktail_dir), "-r", "bm25", "--k", "1", "--k", "3", "--metric", "NDCG"]
    code, _, _ = run_cli([*args, "-o", str(tmp_path / "drawn")], capsys)
    assert code in (0, None)
    code, out, err = run_cli([*args, "--no-figure", "-o", str(tmp_path / "skipped")], capsys)
    assert code in (0, None)
    assert not (tmp_path / "skipped" / "figures" / "source_bias.png").exists()
    note = (tmp_path / "skipped" / "figures" / "not-drawn.txt").read_text()
    assert "was not drawn: left out on request (--no-figure)" in note
    assert "left out on request (--no-figure)" in " ".join((out + err).split())  # told, not only written
    files = json.loads((tmp_path / "skipped" / "manifest.json").read_text())["outputs"]["files"]
    assert "figures/not-drawn.txt" in files and "figures/source_bias.png" not in files
    later = plot_source_bias(load_result(tmp_path / "skipped"), tmp_path / "later.png")
    assert later is not None
    drawn = matplotlib.image.imread(tmp_path / "drawn" / "figures" / "source_bias.png")
    assert np.array_equal(matplotlib.image.imread(later), drawn)
