"""sourcebias audit: Rogan–Gladen correction, joint bootstrap coverage with a simulated detector of
known Se/Sp, score files, the command and its output folder.

The real-data check (detector trained on nfcorpus, nq-utd audited with its labels hidden) needs
MiniLM embeddings of thousands of documents, so it is a benchmark: benchmarks/audit_validation.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sourcebias.audit import AuditSettings, CalibratedDetector, Calibration, audit, audit_run, correct, joint_bootstrap, load_audit, read_scores, rogan_gladen
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.run import Run

SE, SP = 0.85, 0.75
BETA = (3.0, 5.0)  # each query's true LLM share in its top k ~ Beta(3, 5): population mean 3/8
IN_DOMAIN = "audited"  # simulated(): the audited flags follow the calibration's Se and Sp, so its twins are of the audited domain
POP_SHARE = BETA[0] / sum(BETA)


# -- a world whose truth is known by construction ---------------------------------------------------
def simulated(seed: int, *, queries: int = 80, k: int = 10, pairs: int = 400, se: float = SE, sp: float = SP):
    """A run of ``queries`` queries over its own documents (true labels drawn per query from the
    Beta population), and a detector that flips true labels with P(flag | LLM) = se and
    P(flag | human) = 1 − sp, calibrated on ``pairs`` simulated twin pairs."""
    rng = np.random.default_rng(seed)
    p_q = rng.beta(*BETA, size=queries)
    is_llm = rng.random((queries, k)) < p_q[:, None]
    doc_ids = [f"d{q}-{r}" for q in range(queries) for r in range(k)]
    sources = ["llm" if x else "human" for x in is_llm.ravel()]
    corpus = Corpus.keys_only(doc_ids, sources, source_order=["human", "llm"])
    positions = {f"q{q}": np.arange(q * k, (q + 1) * k) for q in range(queries)}
    run = Run(corpus, "sim", positions, {q: -np.arange(k, dtype=float) for q in positions})
    flips = rng.random(queries * k)
    flagged = np.where(is_llm.ravel(), flips < se, flips < 1 - sp).astype(float)
    cal = rng.random((pairs, 2))
    table = pd.DataFrame(
        {
            "doc_id": np.repeat([f"p{i}" for i in range(pairs)], 2),
            "source": ["human", "llm"] * pairs,
            "is_llm": [False, True] * pairs,
            "score": np.column_stack([cal[:, 0] < 1 - sp, cal[:, 1] < se]).ravel().astype(float),
        }
    )
    table["flagged"] = table["score"] >= 0.5
    detector = CalibratedDetector(score=lambda _c, pos: flagged[np.asarray(pos)], threshold=0.5, calibration_table=table, info={"kind": "simulated"})
    return run, detector, is_llm, flagged


def labels_of(detector, run):
    flags = np.full(len(run.corpus), np.nan)
    pos = np.arange(len(run.corpus))
    flags[pos] = (detector.score(run.corpus, pos) >= detector.threshold).astype(float)
    return flags


# -- the formula ------------------------------------------------------------------------------------
def test_rogan_gladen_by_hand():
    # p̂ = Se·p + (1 − Sp)(1 − p) with Se = 0.9, Sp = 0.8, p = 0.3: 0.27 + 0.14 = 0.41
    p, clipped, undefined = rogan_gladen(0.41, 0.9, 0.8)
    assert p == pytest.approx(0.3) and not clipped and not undefined
    assert correct(0.41, 0.9, 0.8) == {"value": pytest.approx(0.3), "raw": pytest.approx(0.3), "flag": "", "note": ""}
    low = correct(0.1, 0.9, 0.8)  # (0.1 + 0.8 − 1) / 0.7 = −1/7: clipped to 0, said so
    assert low["value"] == 0.0 and low["raw"] == pytest.approx(-1 / 7) and low["flag"] == "clipped" and "outside [0, 1]" in low["note"]
    high = correct(0.99, 0.9, 0.8)
    assert high["value"] == 1.0 and high["flag"] == "clipped"


@pytest.mark.parametrize("se, sp", [(0.5, 0.5), (0.3, 0.6), (0.0, 0.0)])
def test_a_chance_detector_refuses_the_correction(se, sp):
    out = correct(0.4, se, sp)
    assert out["value"] is None and out["flag"] == "undefined" and "no better than chance" in out["note"]
    p, _, undefined = rogan_gladen([0.4], [se], [sp])
    assert np.isnan(p[0]) and undefined[0]


def test_calibration_se_sp_are_the_counts():
    _run, det, _, _ = simulated(1)
    t = det.calibration_table
    se_direct = (t["flagged"] & t["is_llm"]).sum() / t["is_llm"].sum()
    sp_direct = (~t["flagged"] & ~t["is_llm"]).sum() / (~t["is_llm"]).sum()
    se, sp = det.calibration().se_sp()
    assert (float(se), float(sp)) == pytest.approx((se_direct, sp_direct))
    s = det.summary()
    assert (s["sensitivity"], s["specificity"], s["pairs"]) == (pytest.approx(se_direct), pytest.approx(sp_direct), 400)
    assert s["sensitivity_ci95"][0] < se_direct < s["sensitivity_ci95"][1]


# -- the audit's numbers against an independent computation -----------------------------------------
def test_rows_equal_a_direct_computation():
    run, det, is_llm, flagged = simulated(2)
    rows = {r["measure"]: r for r in audit_run("sim", run, labels_of(det, run), det, AuditSettings(ks=(10, 3), resamples=200), "human")}
    se, sp = (float(x) for x in det.calibration().se_sp())
    f = flagged.reshape(is_llm.shape)
    w = 1 / np.log2(1 + np.arange(1, 11))
    for k in (10, 3):
        share_hat = f[:, :k].mean(axis=1).mean()
        assert rows[f"Share@{k}"]["naive"] == pytest.approx(share_hat)
        assert rows[f"Share@{k}"]["corrected"] == pytest.approx(np.clip((share_hat + sp - 1) / (se + sp - 1), 0, 1))
        assert rows[f"Share@{k}"]["true"] == pytest.approx(is_llm[:, :k].mean())
        ndsr_hat = (f[:, :k] @ w[:k] / w[:k].sum()).mean()
        ndsr_true = (is_llm[:, :k] @ w[:k] / w[:k].sum()).mean()
        assert rows[f"ΔNDSR@{k}"]["naive"] == pytest.approx(1 - 2 * ndsr_hat)
        assert rows[f"ΔNDSR@{k}"]["corrected"] == pytest.approx(1 - 2 * np.clip((ndsr_hat + sp - 1) / (se + sp - 1), 0, 1))
        assert rows[f"ΔNDSR@{k}"]["true"] == pytest.approx(1 - 2 * ndsr_true)
        for r in (rows[f"Share@{k}"], rows[f"ΔNDSR@{k}"]):
            assert r["naive_low"] <= r["naive"] <= r["naive_high"] and r["corrected_low"] <= r["corrected_high"]
            assert r["naive_error"] == pytest.approx(r["naive"] - r["true"])


def test_the_truth_is_from_the_evaluations_measures():
    from sourcebias.evaluation.measures import NDSR, Share

    run, det, _, _ = simulated(3)
    rows = {r["measure"]: r for r in audit_run("sim", run, labels_of(det, run), det, AuditSettings(resamples=200), "human")}
    assert rows["Share@10"]["true"] == pytest.approx(np.mean(Share().per_query(run, run.query_ids, 10)[:, 1]))
    ndsr = NDSR().per_query(run, run.query_ids, 10)
    assert rows["ΔNDSR@10"]["true"] == pytest.approx(np.mean(ndsr[:, 0] - ndsr[:, 1]))


def test_corrected_interval_covers_the_truth_at_the_nominal_rate():
    """200 simulated audits (detector Se = 0.85, Sp = 0.75): the corrected 95% CI covers the
    population share (3/8) and ΔNDSR (1 − 2·3/8) in about 95% of them (binomial sd over 200
    audits: 1.5 points); the naive one, biased by the detector's errors, almost never does."""
    covered = {"Share@10": 0, "ΔNDSR@10": 0}
    naive_covered = 0
    truth = {"Share@10": POP_SHARE, "ΔNDSR@10": 1 - 2 * POP_SHARE}
    reps = 200
    for seed in range(reps):
        run, det, _, _ = simulated(1000 + seed)
        rows = audit_run("sim", run, labels_of(det, run), det, AuditSettings(resamples=500, seed=seed), "human")
        for r in rows:
            covered[r["measure"]] += r["corrected_low"] <= truth[r["measure"]] <= r["corrected_high"]
        share = next(r for r in rows if r["measure"] == "Share@10")
        naive_covered += share["naive_low"] <= POP_SHARE <= share["naive_high"]
    for m, c in covered.items():
        assert 0.91 <= c / reps <= 0.985, (m, c / reps)
    assert naive_covered / reps < 0.2


def test_calibration_uncertainty_widens_the_interval():
    """With few calibration pairs the corrected CI is wider than with many (same run): the
    calibration's own uncertainty is carried."""
    run, _, _, _ = simulated(4)
    widths = []
    for pairs in (40, 4000):
        _, det, _, _ = simulated(4, pairs=pairs)
        row = audit_run("sim", run, labels_of(det, run), det, AuditSettings(resamples=1000), "human")[0]
        widths.append(row["corrected_high"] - row["corrected_low"])
    assert widths[0] > 1.3 * widths[1]


def test_joint_bootstrap_is_seeded_and_counts_undefined_resamples():
    vals = {"Share": np.random.default_rng(0).random(30)}
    chance = Calibration(human_flagged=np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0]), llm_copies=np.ones(6), llm_flagged=np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0]))
    a = joint_bootstrap(vals, chance, resamples=300, seed=5)
    assert a == joint_bootstrap(vals, chance, resamples=300, seed=5)
    assert 0 < a["Share"]["undefined_resamples"] < 300  # Se + Sp − 1 = 0 in the sample: many resamples ≤ 0
    with pytest.raises(ConfigError):
        Calibration(human_flagged=np.array([]), llm_copies=np.array([]), llm_flagged=np.array([]))


def test_an_undefined_correction_is_refused_in_the_rows():
    run, det, _, _ = simulated(5, se=0.4, sp=0.4, pairs=2000)
    rows = audit_run("sim", run, labels_of(det, run), det, AuditSettings(resamples=200), "human")
    for r in rows:
        assert r["corrected"] is None and r["flag"] == "undefined" and "no better than chance" in r["note"]


# -- score files --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text, message",
    [
        ("s.tsv", "doc_id\tscore\nd1\t0.5\n", "s.tsv:1: the header must name the columns doc_id, source, score; missing source"),
        ("s.tsv", "doc_id\tsource\tscore\nd1\thuman\t0.5\nd1\thuman\t0.7\n", "s.tsv:3: document (d1, human) is listed twice (first on line 2)"),
        ("s.tsv", "source\tdoc_id\tscore\nhuman\td1\tabc\n", "s.tsv:2: score 'abc' is not a number"),
        ("s.tsv", "doc_id\tsource\tscore\nd1\thuman\tnan\n", "s.tsv:2: score 'nan' is not finite"),
        ("s.tsv", "doc_id\tsource\tscore\nd1\thuman\n", "s.tsv:2: expected at least 3 tab-separated columns, got 2"),
        ("s.jsonl", '{"doc_id": "d1", "source": "human", "score": 0.1}\n{"doc_id": "d2", "score": 0.2}\n', "s.jsonl:2: missing field 'source'"),
        ("s.jsonl", '{"doc_id": "d1", "source": "human", "score": true}\n', "s.jsonl:1: score True is not a number"),
        ("s.jsonl", '{"doc_id": "d 1", "source": "human", "score": 0.3}\n', "s.jsonl:1: doc_id 'd 1' contains whitespace"),
        ("s.csv", "doc_id,source,score\n", "a score file is .tsv"),
    ],
)
def test_score_file_errors_name_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_scores(path)
    assert message in str(info.value)


def test_score_files_read_both_formats_with_ids_as_given(tmp_path):
    (tmp_path / "a.tsv").write_text("score\tsource\tdoc_id\textra\n0.25\tllm\thuman-1\tx\n0.5\thuman\thuman-1\ty\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(
        '{"doc_id": "human-1", "source": "llm", "score": 0.25}\n{"doc_id": "human-1", "source": "human", "score": 0.5}\n', encoding="utf-8"
    )
    expected = {("human-1", "llm"): 0.25, ("human-1", "human"): 0.5}  # the id is never taken apart
    assert read_scores(tmp_path / "a.tsv") == expected == read_scores(tmp_path / "b.jsonl")


# -- the command and its folder ---------------------------------------------------------------------
def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def tiny_dataset(root: Path, n: int, prefix: str) -> Path:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    human = [{"_id": f"{prefix}{i}", "title": "", "text": " ".join(words[(i + j) % 10] for j in range(5 + i % 4))} for i in range(n)]
    llm = [{"_id": f"{prefix}{i}", "title": "", "text": " ".join(words[(i + 2 * j) % 10] for j in range(6 + i % 3))} for i in range(n)]
    write_jsonl(root / "corpus" / "human.jsonl", human)
    write_jsonl(root / "corpus" / "llm.jsonl", llm)
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": f"{words[i]} {words[(i + 3) % 10]}"} for i in range(8)])
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\t{prefix}{i}\t1\n" for i in range(8)), encoding="utf-8")
    return root


def score_file(path: Path, dataset: Path, seed: int) -> Path:
    """Scores with a known relation to the labels: LLM copies score higher on average."""
    rng = np.random.default_rng(seed)
    lines = ["doc_id\tsource\tscore"]
    for source in ("human", "llm"):
        for line in (dataset / "corpus" / f"{source}.jsonl").read_text().splitlines():
            shift = 1.0 if source == "llm" else 0.0
            lines.append(f"{json.loads(line)['_id']}\t{source}\t{rng.normal(shift, 0.8):.6f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cli(args, capsys):
    from sourcebias.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.fixture
def audit_inputs(tmp_path):
    target = tiny_dataset(tmp_path / "target", 40, "t")
    calib = tiny_dataset(tmp_path / "calib", 60, "c")
    from sourcebias.data import load_dataset
    from sourcebias.evaluation import evaluate, parse_measure
    from sourcebias.retrieval import build_retriever

    result = evaluate(load_dataset(target), [build_retriever("bm25")], measures=[parse_measure("NDCG@3")])
    result.save(tmp_path / "eval")  # an evaluate folder (its result.json and runs)
    return {
        "eval": tmp_path / "eval",
        "target": target,
        "calib": calib,
        "scores": score_file(tmp_path / "t.tsv", target, 1),
        "cal_scores": score_file(tmp_path / "c.tsv", calib, 2),
    }


def score_args(inputs, scores=None) -> list[str]:
    """The command-line options of an audit by a score file calibrated on labelled twins."""
    return ["--scores", str(scores or inputs["scores"]), "--calibrate", str(inputs["calib"]), "--calibration-scores", str(inputs["cal_scores"])]


def test_audit_command_writes_a_loadable_folder(audit_inputs, tmp_path, capsys):
    from sourcebias.core.artifacts import load_artifact

    out = tmp_path / "audit"
    i = audit_inputs
    args = ["audit", str(i["eval"]), *score_args(i), "--k", "3", "5", "--resamples", "300", "--seed", "7", "-o", str(out)]
    code, stdout, err = run_cli(args, capsys)
    assert code in (0, None), err
    assert "corrected" in stdout and "Share@3" in stdout and "ΔNDSR@5" in stdout
    result = load_audit(out)
    assert load_artifact(out) == result
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "audit" and manifest["parameters"]["seed"] == 7 and manifest["parameters"]["resamples"] == 300
    assert manifest["parameters"]["threshold"] == result.detector["threshold"] and manifest["parameters"]["threshold_rule"] == "youden"
    assert {"audit.json", "audit.csv", "calibration.csv", "documents.csv", "audit.png"} <= set(manifest["outputs"]["files"])
    assert (out / "audit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(result.calibration) == 120 and result.method["resamples"] == 300
    assert {r["measure"] for r in result.rows} == {"Share@3", "ΔNDSR@3", "Share@5", "ΔNDSR@5"}
    # the naive Share@3 from documents.csv's flags and the saved run, independently
    from sourcebias.evaluation import load_result

    run = load_result(i["eval"]).runs[next(k for k in load_result(i["eval"]).runs if k.setting == "mixed")]
    flags = {(d, s): f for d, s, f in zip(result.documents["doc_id"], result.documents["source"], result.documents["flagged"])}
    naive = np.mean([np.mean([flags[k] for k in run.keys(q)[:3]]) for q in run.query_ids])
    assert result.row("bm25", "Share@3")["naive"] == pytest.approx(naive)


def test_a_trec_run_is_audited_with_the_docno_rule(audit_inputs, tmp_path, capsys):
    from sourcebias.evaluation import load_result

    i = audit_inputs
    res = load_result(i["eval"])
    run = res.runs[next(k for k in res.runs if k.setting == "mixed")]
    run.write_trec(tmp_path / "bm25.trec")  # <source>/<doc_id> names
    common = [*score_args(i), "--k", "3", "--resamples", "300"]
    code, _, err = run_cli(["audit", str(tmp_path / "bm25.trec"), "--dataset", str(i["target"]), *common, "-o", str(tmp_path / "a1")], capsys)
    assert code in (0, None), err
    code, _, err = run_cli(["audit", str(i["eval"]), *common, "-o", str(tmp_path / "a2")], capsys)
    assert code in (0, None), err
    a, b = load_audit(tmp_path / "a1"), load_audit(tmp_path / "a2")
    assert a.row("bm25", "Share@3")["naive"] == b.row("bm25", "Share@3")["naive"]
    assert a.row("bm25", "Share@3")["corrected_low"] == b.row("bm25", "Share@3")["corrected_low"]


def test_misuse_stops_before_work_with_one_message(audit_inputs, tmp_path, capsys):
    i = audit_inputs
    code, _, err = run_cli(["audit", str(i["eval"]), "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "give one detector" in err
    code, _, err = run_cli(["audit", str(i["eval"]), "--scores", str(i["scores"]), "-o", str(tmp_path / "x")], capsys)
    assert code == 2 and "--calibrate" in err
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "mine.txt").write_text("not ours")
    args = ["audit", str(i["eval"]), *score_args(i), "-o", str(tmp_path / "x")]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "Error" in err
    partial = tmp_path / "partial.tsv"
    partial.write_text("\n".join(i["scores"].read_text().splitlines()[:5]) + "\n")
    code, _, err = run_cli(["audit", str(i["eval"]), *score_args(i, scores=partial), "-o", str(tmp_path / "y")], capsys)
    assert code == 2 and "have no score in the score file" in err


def test_audit_without_source_labels_reports_no_truth():
    run, det, _, _flagged = simulated(6, queries=20)
    unlabelled = Corpus.keys_only(run.corpus.doc_ids, ["web"] * len(run.corpus), source_order=["web"])
    blind = Run(unlabelled, "blind", run.positions, run.scores)
    res = audit({"blind": blind}, det, AuditSettings(resamples=200), human_source="human", calibration_domain=IN_DOMAIN)
    assert not res.has_truth and all(r["true"] is None and r["corrected_covers"] is None for r in res.rows)
    labelled = audit({"sim": run}, det, AuditSettings(resamples=200), human_source="human", calibration_domain=IN_DOMAIN)
    assert [r["naive"] for r in res.rows] == [r["naive"] for r in labelled.rows]  # the audit never reads the sources


def test_a_corrected_figure_whose_interval_cannot_pin_it_down_is_marked_imprecise(audit_inputs, tmp_path, capsys):
    """A corrected CI wider than ± max_half_width (0.10 on the share scale, 0.20 for ΔNDSR, whose
    scale is twice the share's) is marked IMPRECISE with its width, in the rows, the table and
    audit.csv, whatever the transfer check says; a narrow one is not."""
    from sourcebias.audit.analysis import AuditSettings, precision_columns

    assert precision_columns({"corrected_low": 0.40, "corrected_high": 0.58}, 0.10) == {"precise": True, "imprecise_reason": ""}
    wide = precision_columns({"corrected_low": 0.054, "corrected_high": 1.0}, 0.10)
    assert wide["precise"] is False and "±0.473 wide" in wide["imprecise_reason"]  # (1.0 - 0.054) / 2
    assert precision_columns({"corrected_low": None, "corrected_high": None}, 0.10)["precise"] is False
    with pytest.raises(ConfigError):
        AuditSettings(max_half_width=0)
    out = tmp_path / "audit"
    i = audit_inputs
    args = [
        "audit",
        str(i["eval"]),
        *score_args(i),
        "--k",
        "3",
        "--resamples",
        "300",
        "--calibration-domain",
        "audited",
        "-o",
        str(out),
    ]  # in domain by the user's word
    code, stdout, err = run_cli(args, capsys)
    assert code in (0, None), err
    result = load_audit(out)
    assert result.domain["domain"] == "audited" and result.domain["how"].startswith("the user's word")
    for r in result.rows:  # the rule, recomputed here from each row's own interval and scale
        half = (r["corrected_high"] - r["corrected_low"]) / 2
        assert r["precise"] is (half <= (0.10 if r["quantity"] == "Share" else 0.20))
    assert ("IMPRECISE" in stdout) == any(r["precise"] is False and r["reliable"] for r in result.rows)  # UNRELIABLE is shown first
    assert "precise" in (out / "audit.csv").read_text().splitlines()[0]
