"""``sourcebias judge DATA --judge SPEC -o DIR``: grade judged documents and their LLM twins with
an LLM relevance judge and measure its source bias."""

from __future__ import annotations

import typer

from sourcebias.cli import options as o
from sourcebias.cli import options_judge as j
from sourcebias.cli.common import console


def judge(
    dataset: j.JudgeDataset,
    judge: j.JudgeSpec,
    output: j.JudgeOutput,
    mode: j.JudgeModes = None,
    prompt: j.JudgePrompt = "umbrela",
    retriever: j.JudgeRetrievers = None,
    run: j.JudgeRuns = None,
    top_k: j.JudgeTopK = 0,
    max_queries: j.JudgeMaxQueries = None,
    max_docs: j.JudgeMaxDocs = None,
    measure: j.JudgeMeasure = "NDCG@10",
    max_tokens: j.JudgeMaxTokens = 16,
    top_logprobs: j.JudgeTopLogprobs = 5,
    seed: j.JudgeSeed = 0,
    resamples: j.JudgeResamples = 2000,
    concurrency: j.JudgeConcurrency = None,
    device: j.JudgeDevice = None,
    cache_dir: j.JudgeCacheDir = None,
    pair_prompt: j.JudgePairPrompt = "pairwise",
    overwrite: o.ReplaceResults = False,
    timeout: o.ServerTimeout = None,
) -> None:
    """Grade every judged document of a split and its LLM twins 0-3 with an UMBRELA-style LLM
    judge, and measure the judge's source bias.

    Writes the twin bias (twin's grade − original's, query-clustered CI and test; also on the
    expected grade where the backend gives log-probabilities), optional pairwise and disclosure
    effects, parse failures, Cohen's κ against the assessors, the judge's qrels (qrels/ and a
    dataset/ that `sourcebias evaluate` reads) and, with -r/--run, Relative Δ and ΔNDSR under
    each qrels. Every answer is cached as it arrives: a killed run loses at most the calls in
    flight; rerun the command to finish.

    Examples:

      sourcebias judge nq-utd --judge smollm2 --max-queries 10 -o out/judge-smollm2

      sourcebias judge nq-utd --judge openai:qwen@http://127.0.0.1:8080/v1 --mode grade --mode pairwise -r bm25 -r minilm -o out/judge-qwen

      sourcebias judge nq-utd --judge openai:qwen@http://127.0.0.1:8080/v1 --prompt my-judge.toml -o out/judge-mine
    """
    from sourcebias.core import progress
    from sourcebias.judges import JudgePlan, JudgeSettings, run_judge
    from sourcebias.judges.report import judge_report
    from sourcebias.llmcalls import ModelAccess
    from sourcebias.report.render import to_rich

    settings = JudgeSettings(
        modes=tuple(dict.fromkeys(mode or ["grade"])), prompt=prompt, pair_prompt=pair_prompt, max_tokens=max_tokens, top_logprobs=top_logprobs, seed=seed
    )
    plan = JudgePlan(top_k=top_k, max_queries=max_queries, max_docs=max_docs, measure=measure, resamples=resamples)
    access = ModelAccess(cache_dir=cache_dir, concurrency=concurrency, device=device, timeout=timeout)
    with progress.RichProgress(console=console, transient=True) as reporter, progress.use(reporter):
        result, path = run_judge(
            dataset, judge, output, settings=settings, plan=plan, retrievers=retriever or [], run_files=run or [], access=access, overwrite=overwrite
        )
    console.print(to_rich(judge_report(result)))
    console.print(f"Wrote judge.json, grades.tsv, qrels/ and the summary to [bold]{path}[/bold] (load it with sourcebias.judges.load_judge)")


def register(app: typer.Typer) -> None:
    app.command()(judge)
