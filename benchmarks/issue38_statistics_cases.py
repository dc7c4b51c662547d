"""Issue 38's statistics points (2, 3, 5, 6, 8, 9a, 9c), reproduced: the same inputs through
whichever sourcebias is importable, so that a checkout before the fixes and one after print their
figures side by side (the simulated servers of sourcebias.llmcalls.simulated answer as the issue
describes).

Run:  python benchmarks/issue38_statistics_cases.py
"""

import hashlib

import numpy as np
import pandas as pd

from sourcebias.citations import CiteSettings, cite_run
from sourcebias.citations.estimate import logit_effects, rate_table
from sourcebias.citations.simulated import responder_for
from sourcebias.data import load_dataset
from sourcebias.data.corpus import Corpus, Document
from sourcebias.judges.stats import clustered_mean, kappa, kendall
from sourcebias.llmcalls import open_client
from sourcebias.llmcalls.simulated import SimulatedServer
from sourcebias.retrieval import Run, build_retriever


def twins_above(ds, run):
    """Each LLM twin right above its original: sourcebias.citations.simulated.twins_above_originals,
    written out again for the checkouts from before issue 38, which this script also runs on."""
    try:
        from sourcebias.citations.simulated import twins_above_originals
    except ImportError:  # a checkout before the fix
        llm, human, corpus = ds.other_sources[0], ds.human_source, ds.corpus
        tops = {}
        for q in run.query_ids:
            docs = [
                d
                for d in dict.fromkeys(corpus.doc_ids[p] for p in run.positions[q].tolist())
                if None not in (corpus.position(d, llm), corpus.position(d, human))
            ]
            if len(docs) >= 3:
                order = zip((docs[0], docs[0], docs[1], docs[1], docs[2]), (llm, human, llm, human, llm))
                tops[q] = np.array([corpus.position(d, s) for d, s in order], dtype=np.int64)
        return Run(corpus, "twins-above", tops, {q: np.arange(5, 0, -1.0) for q in tops}, {})
    return twins_above_originals(ds, run)


def fmt_fit(fit):
    if "coefficients" not in fit:
        return f"refused: {fit.get('refused')}"
    out = []
    for k, c in fit["coefficients"].items():
        ci = c.get("ci", c.get("ci95"))
        out.append(f"{k} {c['estimate']:+.3f} " + (f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "[no CI]"))
    return "; ".join(out)


def windows(n):
    docs = [Document(f"d{i}{j}", "human" if j % 2 == 0 else "llm", "", f"passage {i} {j}") for i in range(n) for j in range(4)]
    corpus = Corpus.from_documents(docs, source_order=["human", "llm"])
    return Run(corpus, "first", {f"q{i}": np.arange(4 * i, 4 * i + 4) for i in range(n)}, {f"q{i}": np.arange(4, 0, -1.0) for i in range(n)}, {}), {
        f"q{i}": f"query {i}" for i in range(n)
    }


def rankgpt(responder, n, orders=4):
    run, queries = windows(n)
    with SimulatedServer(responder) as url:
        stage = build_retriever(f"bm25>>rankgpt:openai:sim@{url},depth=4,window=4,orders={orders},cache=false").stages[0]
        out = stage.apply(run, queries)
    return out.info["stages"][-1]["position_source"]


def half(messages, params):
    shown = [m["content"] for m in messages if m["role"] == "user" and m["content"].startswith("[")]
    digest = hashlib.sha256("|".join(shown).encode()).digest()
    if digest[0] % 2:
        return "I think these are all relevant.", None
    return " > ".join(f"[{i}]" for i in np.random.default_rng(int.from_bytes(digest[1:9], "little")).permutation(len(shown)) + 1), None


print(
    "point 2, 'Sure! Here is my ranking.' to every window (12 queries, window 4, orders 4):",
    fmt_fit(rankgpt(lambda m, p: ("Sure! Here is my ranking.", None), 12)),
)
print("point 2, half random permutations, half garbage (40 queries, truth 0):", fmt_fit(rankgpt(half, 40)))

# point 3: a position-only generator on a ranking that puts each LLM twin right above its original

ds = load_dataset("nq-utd")
ids = ds.evaluation_queries()
bm25 = build_retriever("bm25").retrieve(ds.corpus, {q: ds.queries[q] for q in ids}, depth=10)
llm = ds.other_sources[0]
above = twins_above(ds, bm25)  # each LLM twin right above its original
citing = responder_for(ds.corpus, ds.human_source, (0.6, 0.0, -0.4, -0.8, -1.0), 0.0)
with SimulatedServer(citing) as url:
    client = open_client(f"openai:sim@{url}", cache=False)
    for orders in (3, 5):
        try:
            r = cite_run(above, ds.queries, client, CiteSettings(k=5, orders=orders, seed=2), ds.human_source)
            t = r.effect("twins", "source", llm)
            est = (
                "undefined"
                if t["estimate"] is None
                else f"{t['estimate']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}] p {t['p']:.2g}"
                if t["low"] is not None
                else f"{t['estimate']:+.3f} (no CI)"
            )
            print(f"point 3, position-only generator, twins above originals, orders={orders}: twins {est}, status {t['status']}: {t['note']}")
        except Exception as e:
            print(f"point 3, position-only generator, twins above originals, orders={orders}: {type(e).__name__}: {e}")

# point 5: the judge's clustered mean on 1 and 3 queries

for n in (1, 3):
    v = [0.0, 1.0, 1.0, 0.0, 1.0][: 2 * n] if n == 1 else [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    r = clustered_mean(v, [f"q{i // 2}" for i in range(len(v))])
    print(f"point 5, judge mean of {v} over {n} queries: {r['estimate']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] p {r['p']:.3g} ({r['ci_method']})")

# point 6: a rate over one query, and a rate of 0 over six

one = pd.DataFrame(
    [("q1", 0, f"d{i}", "human", 1, 1, int(i < 4)) for i in range(5)], columns=["query_id", "order", "doc_id", "source", "rank", "position", "cited"]
)
zero = pd.DataFrame([(f"q{q}", 0, f"d{q}{i}", "human", 1, 1, 0) for q, m in enumerate([1, 2, 3, 2, 4, 4]) for i in range(m)], columns=one.columns)
for name, frame in (("0.8 over 1 query", one), ("0 over 6 queries, 16 rows", zero)):
    (row,) = rate_table(frame, ["source"])
    ci = "[–]" if row["low"] is None else f"[{row['low']:.3f}, {row['high']:.3f}]"
    print(f"point 6, rate {name}: {row['rate']:.3f} {ci}; note {row.get('note')!r}; refused {row.get('refused', '')!r}")

# point 8: Kendall's tau of 2 systems

k = kendall([0.3, 0.5], [0.2, 0.4])
print(f"point 8, Kendall tau of 2 systems: tau {k['tau']:+.3f} p {k['p']}; note {k['note']!r}")

# point 9a: the source collinear with rank

rng = np.random.default_rng(1)
rows = [(f"q{q}", o, f"d{q}", s, r, r if o == 0 else 3 - r, int(rng.random() < 0.5)) for q in range(30) for o in (0, 1) for s, r in (("llm", 1), ("human", 2))]
res, notes = logit_effects(pd.DataFrame(rows, columns=one.columns), "human")
print(f"point 9a, the source collinear with rank: source row {[r['note'] for r in res if r['term'] == 'source']}; notes {notes}")

# point 9c: kappa of 0-2 assessors against a 0-3 judge

try:
    k = kappa([2, 1, 0, 1], [3, 1, 2, 1], same_scale=False)  # the scales as the judge's agreement table sees them
except TypeError:  # before the fix kappa had no notion of scale
    k = kappa([2, 1, 0, 1], [3, 1, 2, 1])
print(f"point 9c, kappa of assessors (2, 1, 0, 1) vs judge (3, 1, 2, 1): { ({x: k[x] for x in k if x != 'items'}) }")
