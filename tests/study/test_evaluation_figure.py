"""The figure of an evaluation (``figures/source_bias.png``): its title fits the figure."""

from __future__ import annotations

import pytest

from sourcebias.data import load_dataset
from sourcebias.evaluation import evaluate, measure_grid
from sourcebias.retrieval import build_retriever
from sourcebias.study.figure import figure_data


@pytest.fixture
def dataset(cocktail_dir):
    return load_dataset(cocktail_dir)


@pytest.mark.parametrize("retrievers", [["bm25"], ["bm25", "tfidf"], ["bm25", "tfidf", "bm25:k1=0.9"]])
def test_the_figure_title_fits_its_figure(dataset, retrievers):
    """The title is whole on the figure for one, two and three panels (it was cut at both ends with one)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from sourcebias.study.figure import source_bias_figure

    res = evaluate(dataset, [build_retriever(r) for r in retrievers], measures=measure_grid(["NDCG"], [1, 3, 5, 10]))
    fig = source_bias_figure(figure_data(res))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, whole = fig._suptitle.get_window_extent(canvas.get_renderer()), fig.bbox
    assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and box.y1 <= whole.y1
