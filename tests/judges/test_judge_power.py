"""How many queries a judge study needs (``sourcebias power JUDGE_FOLDER``): the twin bias's power
from a judge pilot, checked against statsmodels (``TTestPower``; ``OLS`` with query-clustered
standard errors run on studies drawn here) rather than the code's own numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebias.power.analysis import PowerSettings
from sourcebias.power.clustered_mean import ClusteredMeanPower


def pilot(seed: int = 1, queries: int = 12, per_query: int = 10, unequal: bool = False) -> tuple[np.ndarray, list[str]]:
    """Integer grade differences (−3..3) clustered by query, with a query effect; a few NaN (unparseable)."""
    rng = np.random.default_rng(seed)
    values, clusters = [], []
    for q in range(queries):
        n = per_query + (q % 3 if unequal else 0)
        shift = rng.normal(0.15, 0.3)
        d = np.clip(np.round(rng.normal(shift, 0.8, n)), -3, 3)
        values += d.tolist()
        clusters += [f"q{q}"] * n
    values = np.array(values)
    values[[3, 17]] = np.nan
    return values, clusters


def test_the_analytic_power_is_statsmodels_t_on_the_query_means():
    from statsmodels.stats.power import TTestPower

    v, q = pilot()
    m = ClusteredMeanPower(v, q, alpha=0.05, resamples=200, seed=0, key="k", limit=3.0)
    means = [np.nanmean(v[np.array(q) == c]) for c in sorted(set(q), key=lambda s: int(s[1:]))]
    sd = float(np.std(means, ddof=1))
    for n in (8, 20, 60):
        assert m.power("analytic", n, 0.1) == pytest.approx(TTestPower().power(effect_size=0.1 / sd, nobs=n, alpha=0.05), rel=1e-9)
    assert m.left_out == 2 and m.items == len(v) - 2
    assert m.estimate == pytest.approx(np.nanmean(v))  # the item mean the judge prints, not the mean of query means


def test_the_resampled_power_is_the_rejection_rate_of_statsmodels_clustered_ols():
    """Studies drawn here independently (queries with replacement, the effect imposed on every item),
    each fitted by statsmodels' OLS on a constant with standard errors clustered by query (CR1, t with
    G − 1 df): the share whose 95% interval excludes 0 agrees with the model's within Monte Carlo error."""
    import statsmodels.api as sm

    v, q = pilot(unequal=True)
    keep = np.isfinite(v)
    v, q = v[keep], np.array(q)[keep]
    groups = {c: v[q == c] for c in dict.fromkeys(q)}
    mean = v.mean()
    n, delta, studies = 10, 0.25, 300
    rng = np.random.default_rng(7)
    names = list(groups)
    rejected = 0
    for _ in range(studies):
        drawn = [names[i] for i in rng.integers(0, len(names), n)]
        y = np.concatenate([groups[c] - mean + delta for c in drawn])
        g = np.concatenate([[k] * len(groups[c]) for k, c in enumerate(drawn)])
        fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": g, "df_correction": True}, use_t=True)
        low, high = fit.conf_int(0.05)[0]
        rejected += not (low <= 0 <= high)
    model = ClusteredMeanPower(v, q.tolist(), alpha=0.05, resamples=4000, seed=0, key="k", limit=3.0)
    ours, theirs = model.power("resampling", n, delta), rejected / studies
    se = math.sqrt(theirs * (1 - theirs) / studies + ours * (1 - ours) / 4000)
    assert abs(ours - theirs) < 3.5 * se, (ours, theirs)


def test_too_few_queries_have_no_power_and_an_empty_pilot_is_undefined():
    v, q = pilot()
    m = ClusteredMeanPower(v, q, alpha=0.05, resamples=200, seed=0, key="k", limit=3.0)
    assert m.min_n == 5  # the estimator gives no interval on 1-4 queries at 95%
    assert math.isnan(m.power("resampling", 4, 0.5))
    empty = ClusteredMeanPower([math.nan, math.nan], ["a", "b"], alpha=0.05, resamples=200, seed=0, key="k", limit=3.0)
    assert empty.undefined and empty.n_needed("resampling", 0.1, 0.8, 1000)[0] is None


def test_power_of_a_judge_folder_end_to_end(nq_utd, tmp_path, capsys):
    """A judge pilot through the HTTP path, then ``sourcebias power`` on its folder: the n needed for
    a tenth of a grade, by both methods, in the folder that loads back."""
    from sourcebias.cli.main import main
    from sourcebias.data import load_dataset
    from sourcebias.judges import JudgePlan, run_judge
    from sourcebias.judges.known_truth import BiasedJudge
    from sourcebias.llmcalls import ModelAccess
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.power import load_power

    nq = load_dataset(nq_utd)
    with SimulatedServer(BiasedJudge.from_corpus(nq.corpus, nq.human_source, delta=0.3, spread=0.1, noise=0.4)) as url:
        run_judge(
            str(nq_utd), f"openai:sim@{url}", tmp_path / "judge", plan=JudgePlan(max_queries=8, resamples=200), access=ModelAccess(cache_dir=tmp_path / "cache")
        )
    with pytest.raises(SystemExit) as info:
        main(["power", str(tmp_path / "judge"), "--effect", "grade=0.1", "--n", "8", "50", "--resamples", "500", "-o", str(tmp_path / "power")])
    out = capsys.readouterr()
    assert info.value.code in (0, None), out.err
    assert "judge twin" in out.out
    res = load_power(tmp_path / "power")
    needed = {r["method"]: r["value"] for r in res.rows if r["quantity"] == "n_needed"}
    assert set(needed) == {"resampling", "analytic"} and all(math.isfinite(x) and x > 8 for x in needed.values())
    # the analytic n is statsmodels' own solve for the pilot's query means
    from statsmodels.stats.power import TTestPower

    sd = res.pilots[0]["sd"]
    assert needed["analytic"] == math.ceil(TTestPower().solve_power(effect_size=0.1 / sd, alpha=0.05, power=0.8))
    with pytest.raises(SystemExit) as info:
        main(["power", str(tmp_path / "judge"), "--effect", "twin=0.55"])
    assert info.value.code == 2 and "a judge pilot plans its twin bias only" in " ".join(capsys.readouterr().err.split())


def test_settings_default_to_the_pilots_estimate():
    assert PowerSettings().effects == {}
