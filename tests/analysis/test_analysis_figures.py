"""Every figure function writes a readable PNG of the documented size from small synthetic data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from sourcebias.analysis import figures
from sourcebias.core.errors import ConfigError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _check_png(path: Path, width_in: float, height_in: float) -> None:
    from PIL import Image

    assert path.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        w, h = im.size
        px = np.asarray(im.convert("L"))
    assert (w, h) == (round(width_in * figures.DPI), round(height_in * figures.DPI))
    assert px.std() > 10  # not a blank canvas


def test_every_figure_writes_a_png(tmp_path):
    rng = np.random.default_rng(0)
    h, g = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    spectrum_rows = [
        {"source": s, "rank": k + 1, "value": v, "relative": v / vh}
        for s, m in (("human", h), ("llm", g * 1.1))
        for k, (v, vh) in enumerate(zip(np.linalg.svd(m, compute_uv=False), np.linalg.svd(h, compute_uv=False)))
    ]
    out = {
        "spectrum": figures.plot_spectrum(spectrum_rows, tmp_path / "spectrum.png", human_source="human", title="synthetic"),
        "terms": figures.plot_term_similarity(rng.beta(4, 6, 200), rng.beta(6, 4, 200), tmp_path / "terms.png"),
        "cosines": figures.plot_pair_cosines(rng.normal(0.9, 0.03, 200), rng.normal(0.3, 0.1, 200), tmp_path / "cos.png"),
        "lengths": figures.plot_lengths({"human": rng.poisson(80, 200), "llm": rng.poisson(70, 200)}, tmp_path / "len.png"),
        "tsne": figures.plot_tsne(rng.normal(size=(100, 2)), ["human"] * 50 + ["llm"] * 50, tmp_path / "tsne.png", perplexity=30),
        "ppl": figures.plot_perplexity(
            {"human": rng.normal(3, 0.5, 100), "llm": rng.normal(2.6, 0.5, 100)}, tmp_path / "ppl.png", paired_differences=rng.normal(-0.4, 0.3, 100)
        ),
        "direction": figures.plot_direction(
            rng.normal(0.2, 0.1, 200),
            rng.normal(0, 0.1, 2000),
            tmp_path / "dir.png",
            null_statistic=rng.gamma(2, 0.01, 1000),
            observed_statistic=0.2,
            p_value=1 / 1001,
        ),
    }
    sizes = {"spectrum": (7, 2.8), "terms": (7, 2.8), "cosines": (3.5, 2.8), "lengths": (3.5, 2.8), "tsne": (3.5, 3.6), "ppl": (7, 2.8), "direction": (7, 2.8)}
    for name, path in out.items():
        _check_png(path, *sizes[name])


def test_colours_are_consistent_and_bad_input_is_refused(tmp_path):
    c = figures.source_colors(["llm-a", "human", "llm-b"])
    assert c == {"llm-a": figures.LLM_COLORS[0], "human": figures.HUMAN_COLOR, "llm-b": figures.LLM_COLORS[1]}
    with pytest.raises(ConfigError, match="no finite"):
        figures.plot_pair_cosines([np.nan], [0.1], tmp_path / "x.png")
    with pytest.raises(ConfigError, match="human"):
        figures.plot_spectrum([{"source": "llm", "rank": 1, "value": 1.0, "relative": 1.0}], tmp_path / "y.png")
