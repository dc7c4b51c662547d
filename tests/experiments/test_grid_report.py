"""The grid report: tables with the correction named and significance marked, and a
self-contained HTML page that headless Chromium renders with its tables and images and no
console errors."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sourcebias.experiments.aggregate import COLUMNS
from sourcebias.experiments.grid_report import latex_tables, markdown_tables, write_grid_report

RETRIEVERS = ["bm25", "tfidf", "all-MiniLM-L6-v2", "bm25>>lm:smollm2 (top 20)"]


def synthetic_cells() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for ds, split in (("nq-utd", "test"), ("nfcorpus", "dev")):
        for r, delta in zip(RETRIEVERS, (12.6, 5.9, -9.2, -18.0)):
            if ds == "nfcorpus" and r.startswith("bm25>>"):
                rows.append(
                    {
                        "dataset": ds,
                        "split": split,
                        "retriever": r,
                        "measure": "NDCG@3",
                        "status": "failed",
                        "error": "ModelUnavailableError: <b>model</b> missing & offline",
                    }
                )
                continue
            h = rng.uniform(0.3, 0.5)
            rows.append(
                {
                    "dataset": ds,
                    "split": split,
                    "retriever": r,
                    "llm_source": "llama-2-7b-chat-tmp0.2",
                    "measure": "NDCG@3",
                    "all": rng.uniform(0.3, 0.7),
                    "human": h,
                    "llm": h * (1 - delta / 100),
                    "rel_delta": delta,
                    "rel_delta_ci_low": delta - 8,
                    "rel_delta_ci_high": delta + 8,
                    "ci_level": 0.95,
                    "ci_method": "BCa",
                    "ci_resamples": 2000,
                    "ci_undefined_resamples": 0,
                    "ci_seed": 0,
                    "randomization_resamples": 10000,
                    "ttest_note": "",
                    "twin_pref_ties": 3,
                    "twin_pref_neither": 5,
                    "twin_pref_unpaired": 0,
                    "delta_ndsr_rule": "unpaired documents removed from the rankings",
                    "mean_difference": 0.01,
                    "p_ttest": 0.02,
                    "p_randomization": 0.01 if abs(delta) > 10 else 0.4,
                    "p_adjusted": 0.03 if abs(delta) > 10 else 0.8,
                    "correction": "Holm",
                    "n_queries": 80,
                    "twin_pref_rate": 0.5 - delta / 200,
                    "twin_pref_pairs": 200,
                    "twin_pref_p": 0.1,
                    "delta_ndsr": delta / 1000,
                    "delta_ndsr_k": 10,
                    "delta_ndsr_p": 0.2,
                    "human_only": 0.6,
                    "llm_only": 0.62,
                    "status": "ok",
                    "error": "",
                }
            )
    df = pd.DataFrame(rows)
    for c in COLUMNS:
        if c not in df:
            df[c] = np.nan
    return df[list(COLUMNS)]


def test_tables_name_the_correction_and_mark_significance():
    cells = synthetic_cells()
    md = markdown_tables(cells)
    assert "Holm-corrected" in md and "| bm25 | " in md and "12.6* [4.6, 20.6]" in md and "5.9 [" in md
    assert "95% bootstrap CI (queries resampled in pairs, 2,000 resamples, seed 0; method: BCa)" in md
    assert "failed: ModelUnavailableError" in md
    tex = latex_tables(cells)
    assert r"\toprule" in tex and r"\textcolor{red}{-18.0$^*$ [-26.0, -10.0]}" in tex  # nq-utd's re-ranker, significant
    assert r"bm25\textgreater{}\textgreater{}lm:smollm2 (top 20) & \multicolumn{9}{l}{failed: ModelUnavailableError" in tex  # no numbers
    assert r"\textcolor{red}{-9.2 [-17.2, -1.2]}" in tex and "Holm" in tex and r"\textless{} 0: prefers LLM text" in tex


def test_captions_state_the_method_and_level_used_and_nan_is_not_coloured():
    cells = synthetic_cells()
    first = cells.index[0]
    cells["ci_level"] = 0.9
    cells.loc[first, ["rel_delta", "rel_delta_ci_low", "rel_delta_ci_high"]] = np.nan
    cells.loc[first, ["ci_method", "ci_undefined_resamples"]] = ["none (Relative Δ undefined)", 0]
    second = cells.index[1]
    cells.loc[second, ["ci_method", "ci_undefined_resamples"]] = ["percentile over the finite resamples", 37]
    md = markdown_tables(cells)
    assert "90% bootstrap CI" in md and "95%" not in md
    assert "BCa in 5 rows" in md and "none (Relative Δ undefined) in 1 rows" in md and "percentile over the finite resamples in 1 rows" in md
    assert "tfidf/llama-2-7b-chat-tmp0.2/NDCG@3: 37 of 2,000" in md
    tex = latex_tables(cells)
    assert "\nbm25 & " in tex and r"& – [–, –] &" in tex  # undefined: a dash, and no colour (was "human higher")
    from sourcebias.experiments.grid_report import UNDEFINED_COLOR, _color

    assert _color(float("nan")) == UNDEFINED_COLOR


def test_several_llm_sources_are_labelled():
    one = synthetic_cells()
    two = one.copy()
    two["llm_source"] = two["llm_source"].where(two["status"] != "ok", "gpt-4")
    md = markdown_tables(pd.concat([one, two], ignore_index=True))
    assert "| retriever | LLM source | all |" in md and "| bm25 | gpt-4 | " in md and "| bm25 | llama-2-7b-chat-tmp0.2 | " in md


def test_latex_escape_leaves_no_active_character():
    from sourcebias.report.render import latex_escape

    assert latex_escape("a_b & 50% #1 {x} $y$ ^~ \\ |") == r"a\_b \& 50\% \#1 \{x\} \$y\$ \textasciicircum{}\textasciitilde{} \textbackslash{} \textbar{}"
    assert latex_escape("bm25>>cdc (Rel Δ × 2 − 1)") == r"bm25\textgreater{}\textgreater{}cdc (Rel $\Delta$ $\times$ 2 -- 1)"


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is needed for this test (scripts/install.sh, the README's step 1, installs it: apt-get install -y chromium)")
    return path


def test_html_report_renders_in_headless_chromium(tmp_path, chromium):
    from playwright.sync_api import sync_playwright

    cfg = SimpleNamespace(name="cocktail-mini", text='[grid]\nname = "cocktail-mini"\n# <script>alert(1)</script>\n')
    paths = write_grid_report(synthetic_cells(), cfg, tmp_path)
    page_html = paths["html"].read_text()
    assert "http://" not in page_html and "https://" not in page_html and "<script" not in page_html  # self-contained, escaped
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        page.goto(paths["html"].as_uri())
        page.wait_for_load_state("load")
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
        tables = page.eval_on_selector_all("table", "ts => ts.map(t => t.querySelectorAll('tbody tr').length)")
        text = page.inner_text("body")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert errors == []
    assert len(widths) == 3 and all(done and w > 300 for done, w in widths)  # Figure 1 and one bar chart per dataset
    assert tables[:2] == [4, 4]  # nq-utd: 4 retrievers; nfcorpus: 3 results + the failed cell
    assert "ModelUnavailableError: <b>model</b> missing & offline" in text  # shown as text, not markup
    assert "Holm-corrected" in text and "cocktail-mini" in text
    assert (tmp_path / "report.png").stat().st_size > 10_000
