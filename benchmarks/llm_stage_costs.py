"""Calls, tokens and time of the LLM stages for a study of MS MARCO's size (issue 40, part 4).

1. Renders each stage's calls with its own prompt plug-in, defaults and call builder for
   ``--sample`` queries of an MS MARCO-shaped corpus (``benchmarks/make_scale_corpus.py``: 58-word
   passages, short queries, ~1.065 judged passages a query; ``CORPUS``): the judge (UMBRELA: grade,
   grade under both disclosures, pairwise in both orders, on the judged passages and their twins),
   RankGPT (``depth`` 20 and 100, windows of 20 in steps of 10, 3 input orders), yes/no (``depth``
   20 and 100) and the citation study (ALCE, top 5, 5 orders), on BM25's ranking of the mixed corpus.
2. Counts their tokens with the model's own tokenizer and chat template (``--gguf``: a GGUF, read
   through llama-cpp-python in ``--python``'s environment, as llama.cpp's server applies them):
   prompt tokens per call, and the prompt tokens a server that keeps the previous prompt's state
   evaluates when the calls arrive in the client's prefix order (each call's longest common prefix
   with the previous one skipped). Completion tokens: what a model that follows the prompt writes
   (the grade line, one letter, one token, the full ranking of a window, tokenized) or, for the
   citation answer, its ``max_tokens`` (an upper bound).
3. Scales the per-call figures to MS MARCO's 6,979 queries (1.065 judged passages each) and prints
   the calls and tokens of each stage, and its hours at each ``--speed LABEL=P,G`` (prompt and
   generated tokens per second of one server):

       hours = calls x (evaluated prompt tokens per call / P + completion tokens per call / G) / 3600

Usage:
    python benchmarks/make_scale_corpus.py /tmp/scale/s20000 --docs 20000
    python benchmarks/llm_stage_costs.py /tmp/scale/s20000 --python LLAMA_PY --gguf MODEL.gguf [--sample 100] [--speed "2 cores=70,10" ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

MSMARCO_QUERIES = 6979
JUDGED_PER_QUERY = 1.065

TOKENIZE = r"""
import json, sys
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
llm = Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
eos, bos = llm.token_eos(), llm.token_bos()
text = lambda t: llm._model.token_get_text(t) if t != -1 else ""
fmt = Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"], eos_token=text(eos), bos_token=text(bos))
for line in sys.stdin:
    rec = json.loads(line)
    if "messages" in rec:   # a chat prompt, as llama.cpp's server renders and tokenizes it
        r = fmt(messages=rec["messages"])
        ids = llm.tokenize(r.prompt.encode("utf-8"), add_bos=not r.added_special, special=True)
    else:                   # an answer's text
        ids = llm.tokenize(rec["text"].encode("utf-8"), add_bos=False, special=False)
    print(json.dumps(ids))
"""


def judge_calls(ds, qids) -> dict[str, list]:
    from sourcebias.judges.grading import JudgeSettings, build_calls
    from sourcebias.judges.items import item_table

    calls, meta = build_calls(ds, item_table(ds, qids), JudgeSettings(modes=("grade", "disclosure", "pairwise")))
    out: dict[str, list] = {"judge: grade": [], "judge: disclosure (2 authors)": [], "judge: pairwise (2 orders)": []}
    names = {"grade": "judge: grade", "disclosed": "judge: disclosure (2 authors)", "pair": "judge: pairwise (2 orders)"}
    for call, (kind, _) in zip(calls, meta):
        out[names[kind]].append(call)
    return out


def rankgpt_calls(ds, run, qids, depth: int, orders: int = 3, window: int = 20, step: int = 10, words: int = 300) -> list:
    from sourcebias.data.corpus import join_title_text
    from sourcebias.llmcalls import Call
    from sourcebias.llmcalls.prompts import load_prompt
    from sourcebias.retrieval.rerankers.llm_common import cut_words
    from sourcebias.retrieval.rerankers.rankgpt import input_orders, sliding_windows

    prompt, corpus, calls = load_prompt("rankgpt"), ds.corpus, []
    for q in qids:
        top = run.positions[q][:depth]
        for w, (start, end) in enumerate(sliding_windows(len(top), window, step)):
            texts = [cut_words(join_title_text(corpus.titles[i], corpus.texts[i]), words) for i in top[start:end].tolist()]
            for shown in input_orders(len(texts), orders, 0, f"{q}/{w}"):
                msgs = prompt.render({"query": ds.queries[q]}, [{"passage": texts[j]} for j in shown])
                calls.append(Call(messages=msgs, max_tokens=6 * len(texts) + 8, temperature=0.0, seed=0))
    return calls


def yesno_calls(ds, run, qids, depth: int, words: int = 300) -> list:
    from sourcebias.data.corpus import join_title_text
    from sourcebias.llmcalls import Call
    from sourcebias.llmcalls.prompts import load_prompt
    from sourcebias.retrieval.rerankers.llm_common import cut_words

    prompt, corpus = load_prompt("yesno"), ds.corpus

    def call(q: str, i: int) -> Call:
        passage = cut_words(join_title_text(corpus.titles[i], corpus.texts[i]), words)
        return Call(messages=prompt.render({"passage": passage, "query": ds.queries[q]}), max_tokens=1, choices=("Yes", "No"), top_logprobs=20)

    return [call(q, i) for q in qids for i in run.positions[q][:depth].tolist()]


def cite_calls(ds, run, qids) -> list:
    from sourcebias.citations.design import build_contexts
    from sourcebias.citations.study import CiteSettings, calls_for, top_k

    settings = CiteSettings(k=5, orders=5)
    return calls_for(build_contexts(top_k(run, qids, settings.k), settings.orders, settings.seed), ds.corpus, ds.queries, settings)


def stage_calls(corpus_dir: Path, sample: int, seed: int) -> tuple[dict[str, list], dict[str, float], dict[str, str]]:
    """The sample's calls of every stage, its calls per query, and what a compliant answer is."""
    from sourcebias.data import load_dataset
    from sourcebias.retrieval.registry import build_retriever

    ds = load_dataset(corpus_dir, split="test")
    judged = [q for q in ds.queries if q in ds.qrels and len(ds.qrels[q])]
    qids = [judged[i] for i in sorted(np.random.default_rng(seed).choice(len(judged), sample, replace=False).tolist())]
    run = build_retriever("bm25").retrieve(ds.corpus, {q: ds.queries[q] for q in qids}, 100)
    stages = judge_calls(ds, qids)
    stages["judge, 3 modes in one batch"] = [c for name in list(stages) for c in stages[name]]  # as the judge sends them
    stages |= {"rankgpt, top 20, 3 orders": rankgpt_calls(ds, run, qids, 20), "rankgpt, top 100, 3 orders": rankgpt_calls(ds, run, qids, 100)}
    stages |= {"yes/no, top 20": yesno_calls(ds, run, qids, 20), "yes/no, top 100": yesno_calls(ds, run, qids, 100)}
    stages["citations, top 5, 5 orders"] = cite_calls(ds, run, qids)
    per_query = {name: len(calls) / len(qids) for name, calls in stages.items()}
    pairs = sum(len(ds.qrels[q]) for q in qids) / len(qids)  # judged passages a query in the sample
    for name in per_query:
        if name.startswith("judge"):  # judge calls go with the judged passages: MS MARCO's 1.065 a query
            per_query[name] *= JUDGED_PER_QUERY / pairs
    ranking = " > ".join(f"[{i}]" for i in range(1, 21))
    answers = {
        "judge: grade": "##final score: 2",
        "judge: disclosure (2 authors)": "##final score: 2",
        "judge: pairwise (2 orders)": "A",
        "rankgpt, top 20, 3 orders": ranking,
        "rankgpt, top 100, 3 orders": ranking,
        "yes/no, top 20": "Yes",
        "yes/no, top 100": "Yes",
    }
    return stages, per_query, answers


def count_tokens(python: str, gguf: str, records: list[dict]) -> list[list[int]]:
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    done = subprocess.run([python, "-c", TOKENIZE, gguf], input=lines, capture_output=True, text=True, check=True)
    return [json.loads(x) for x in done.stdout.splitlines() if x.startswith("[")]


def lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def measure(stages, answers, python: str, gguf: str) -> dict[str, dict[str, float]]:
    """Per stage: prompt tokens a call, prompt tokens evaluated a call when the stage's calls are
    sent as one batch in the client's prefix order, and completion tokens a call (one tokenizer
    process for everything)."""
    from sourcebias.llmcalls.server_client import prefix_order

    orders = {name: prefix_order(calls) for name, calls in stages.items()}
    records = [{"messages": [{"role": r, "content": c} for r, c in stages[name][j].messages]} for name in stages for j in orders[name]]
    records += [{"text": answers[name]} for name in stages if name in answers]
    ids = count_tokens(python, gguf, records)
    out, at = {}, 0
    for name, calls in stages.items():
        mine, at = ids[at : at + len(calls)], at + len(calls)
        evaluated = [len(mine[0])] + [len(cur) - lcp(prev, cur) for prev, cur in itertools.pairwise(mine)]
        out[name] = {"prompt": float(np.mean([len(x) for x in mine])), "evaluated": float(np.mean(evaluated)), "completion": float(calls[0].max_tokens)}
    for name in (n for n in stages if n in answers):  # a compliant answer, and the end-of-turn token
        out[name]["completion"], at = float(len(ids[at]) + 1), at + 1
    return out


#: the two study designs totalled: the judge's three modes, and the re-rankers at one depth, and the citations
DESIGNS = {
    "top 20": ("judge, 3 modes in one batch", "rankgpt, top 20, 3 orders", "yes/no, top 20", "citations, top 5, 5 orders"),
    "top 100": ("judge, 3 modes in one batch", "rankgpt, top 100, 3 orders", "yes/no, top 100", "citations, top 5, 5 orders"),
}


def report(per_query, tokens, speeds: list[tuple[str, float, float]]) -> None:
    print(f"MS MARCO (Cocktail): {MSMARCO_QUERIES:,} queries, {JUDGED_PER_QUERY} judged passages a query (each with its LLM twin)")
    head = f"{'stage':<31} {'calls':>9} {'prompt tok':>10} {'evaluated':>9} {'answer tok':>10} {'prompt Mtok':>11} {'answer Mtok':>11}"
    print(head + "".join(f" {label[:14]:>14}" for label, _, _ in speeds))
    hours: dict[str, dict[str, float]] = {}
    for name, t in tokens.items():
        calls = per_query[name] * MSMARCO_QUERIES
        hours[name] = {label: calls * (t["evaluated"] / p + t["completion"] / g) / 3600 for label, p, g in speeds}
        print(
            f"{name:<31} {calls:9,.0f} {t['prompt']:10.0f} {t['evaluated']:9.0f} {t['completion']:10.0f} "
            f"{calls * t['prompt'] / 1e6:11.2f} {calls * t['completion'] / 1e6:11.2f}" + "".join(f" {v:13,.1f}h" for v in hours[name].values())
        )
    for design, names in DESIGNS.items():
        calls = sum(per_query[n] for n in names) * MSMARCO_QUERIES
        print(f"{'study, ' + design:<31} {calls:9,.0f} {'':>54}" + "".join(f" {sum(hours[n][label] for n in names):13,.1f}h" for label, _, _ in speeds))
    print("speeds (prompt, generated tokens/s of one server): " + "; ".join(f"{label}: {p:g}, {g:g}" for label, p, g in speeds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path, help="an MS MARCO-shaped corpus (benchmarks/make_scale_corpus.py)")
    ap.add_argument("--python", required=True, help="an interpreter with llama-cpp-python (to read the GGUF's tokenizer)")
    ap.add_argument("--gguf", required=True, help="the model whose tokens are counted")
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speed", action="append", default=[], metavar="LABEL=P,G", help="prompt and generated tokens per second of one server")
    args = ap.parse_args()
    speeds = []
    for s in args.speed or ["2 cores=70,10"]:
        label, _, pg = s.rpartition("=")
        p, g = (float(x) for x in pg.split(","))
        speeds.append((label, p, g))
    stages, per_query, answers = stage_calls(args.corpus, args.sample, args.seed)
    tokens = measure(stages, answers, args.python, args.gguf)
    modes = [n for n in stages if n.startswith("judge:")]  # the batch's answers: its modes' answers, call for call
    tokens["judge, 3 modes in one batch"]["completion"] = sum(tokens[n]["completion"] * len(stages[n]) for n in modes) / sum(len(stages[n]) for n in modes)
    print(f"tokens counted with {Path(args.gguf).name}'s tokenizer and chat template, on {args.sample} queries of {args.corpus.name}")
    report(per_query, tokens, speeds)


if __name__ == "__main__":
    sys.exit(main())
