"""The figure of the LLM re-rankers guide (``docs/figures/llm-rerankers.png``).

Left: the known-truth check — the source coefficient's 95% CI in each of ``--studies``
simulated twin studies (:mod:`sourcebias.retrieval.rerankers.simulated_bias`, served over HTTP
by a SimulatedServer), against the injected truth. Right: the worked NQ-UTD run written by
``benchmarks/llm_rerankers_nq_utd.py`` — the position and source coefficients (95% CI, query
clustered) of the listwise re-ranker's answers, and the LLM share of the top 1 and 3 before and
after re-ranking.

Usage:
    python benchmarks/llm_rerankers_figure.py --result out/llm-rerankers/rankgpt-orders3 [--studies 40] -o docs/figures/llm-rerankers.png
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def known_truth(studies: int, theta: float, rho: float) -> list[tuple[float, float, float]]:
    from sourcebias.llmcalls.simulated import SimulatedServer
    from sourcebias.retrieval.rerankers.simulated_bias import biased_pair_responder, run_study

    out = []
    for seed in range(studies):
        with SimulatedServer(biased_pair_responder(theta, rho, seed)) as url:
            c = run_study(url, 50, theta=theta, rho=rho, seed=seed)["coefficients"]["source:llm"]
        out.append((c["estimate"], *c["ci"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--result", required=True, help="an evaluate result folder of benchmarks/llm_rerankers_nq_utd.py")
    ap.add_argument("--studies", type=int, default=40)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    from sourcebias.evaluation.results import load_result

    theta, rho = 0.15, 0.7
    sims = known_truth(args.studies, theta, rho)
    res = load_result(args.result, runs=False)
    first, spec = list(res.retrievers)[:2]
    stage = next(i for k, i in res.run_info.items() if k.retriever == spec and k.setting == "mixed")["stages"][-1]
    llm = next(s for s in res.sources if s != res.human_source)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
    ax = axes[0]
    for i, (est, lo, hi) in enumerate(sims):
        miss = not lo <= -2 * theta <= hi
        ax.plot([lo, hi], [i, i], color="tab:red" if miss else "tab:blue", lw=1.5)
        ax.plot(est, i, "o", color="k", ms=3)
    ax.axvline(-2 * theta, color="k", ls="--", lw=1, label=f"truth {-2 * theta:+.2f}")
    covered = sum(lo <= -2 * theta <= hi for _, lo, hi in sims)
    ax.set(
        title=f"Known truth: source effect\n{covered}/{len(sims)} CIs cover the truth",
        xlabel="source coefficient (window fraction; < 0: LLM higher)",
        ylabel="simulated study",
    )
    ax.legend(loc="lower right", fontsize=8)
    _fit_panel(axes[1], stage, spec)
    ax = axes[2]
    ks = [1, 3, 5]
    for name, style in ((first, "o-"), (spec, "s-")):
        ax.plot(ks, [100 * res.mean(name, "mixed", llm, f"Share@{k}") for k in ks], style, label=name.split(",")[0])
    ax.axhline(50, color="grey", lw=0.8, ls=":")
    ax.set(title="NQ-UTD: LLM text in the top k", xlabel="k", ylabel="LLM share of the top k (%)", xticks=ks)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


def _fit_panel(ax, stage: dict, spec: str) -> None:
    """The stage's position/source fit on the model's complete answers, or why there is none."""
    import textwrap

    fit, a = stage["position_source"], stage["llm_answers"]
    ax.set_title(f"NQ-UTD {spec.split('>>')[1].split(',')[0]}, orders={stage['orders']}\n({a['repaired']} of {a['answers']} answers repaired)")
    if "coefficients" not in fit:  # refused (no complete answer, too few queries): said, not drawn
        ax.axis("off")
        why = fit.get("refused") or "no fit"
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(f"No position/source fit: {why}", 48)), ha="center", va="center", fontsize=9, transform=ax.transAxes)
        return
    names = list(fit["coefficients"])
    for i, n in enumerate(names):
        c = fit["coefficients"][n]
        ax.plot(c["ci95"], [i, i], color="tab:blue", lw=3)
        ax.plot(c["estimate"], i, "o", color="k")
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(range(len(names)), [n if n == "position" else "source\n(LLM twin)" for n in names])
    ax.set_ylim(-0.5, len(names) - 0.5)
    ax.set_xlabel("answered position: coefficient, 95% CI (query clustered)")


if __name__ == "__main__":
    main()
