"""The bootstrap runs in batches (bounded memory at MS MARCO's 6,979 queries) and gives the
intervals of the plain, unbatched ``scipy.stats.bootstrap`` call: the percentile interval to the
last bit, BCa (its jackknife in closed form, :mod:`sourcebias.evaluation.stats.resampling`) to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sourcebias.evaluation.stats.base import BOOTSTRAP_BATCH
from sourcebias.evaluation.stats.relative_delta_ci import bootstrap_relative_delta


def plain(data, statistic, method):
    """scipy's bootstrap as a user calls it: no batch, everything in one vectorised call."""
    res = stats.bootstrap(data, statistic, paired=True, vectorized=True, n_resamples=2000, method=method, random_state=np.random.default_rng(0))
    return res.confidence_interval.low, res.confidence_interval.high


def test_relative_delta_bca_interval_equals_the_unbatched_call():
    rng = np.random.default_rng(7)
    n = 3 * BOOTSTRAP_BATCH + 17  # jackknife and resamples both span several batches
    h, llm = rng.random(n), rng.random(n) * 0.9

    def rel(x, y, axis=-1):
        mh, ml = np.mean(x, axis=axis), np.mean(y, axis=axis)
        return (mh - ml) / ((mh + ml) / 2.0) * 100.0

    got = bootstrap_relative_delta(h, llm, seed=0)
    assert got["method"] == "BCa"
    assert (got["low"], got["high"]) == pytest.approx(plain((h, llm), rel, "BCa"), rel=1e-12)
