"""What the simulated readers write back into the corpus each round.

* ``answer`` (the Spiral of Silence loop, Chen et al., ACL 2024): for each of the round's queries,
  the generator answers the query from the top ``context`` documents of the ranking it was shown
  (retrieval-augmented generation); the answer becomes a new document.
* ``rewrite``: the top document of each of the round's queries is rewritten (a `generate` prompt,
  ``kdd`` by default); a document on top for several queries is rewritten once. The rewrite keeps
  the original's ``doc_id`` under the round's source, so it is that document's twin.

Each new document records its provenance in ``metadata``: the round, the retriever whose ranking
it was written from, the query, the ranked documents it was written from (``doc_id``, source,
rank), the generation status, seed and accounting. Generation goes through the same backends
(:func:`sourcebias.llmcalls.open_backend`) and post-processing as ``sourcebias generate``; an answer that is refused, empty or cut at the
token budget is recorded with its status and **not** added to the corpus (counted in the report).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebias.core.errors import ConfigError
from sourcebias.data.corpus import Corpus
from sourcebias.retrieval.run import Run

#: the built-in answer prompt (``prompt = "rag"``); a template FILE holds ``{query}`` and ``{passages}``
RAG_PROMPT = (
    "Answer the question using the passages below. Write one self-contained paragraph that could "
    "be published as a web page answering the question.\n\n{passages}\n\nQuestion: {query}"
)
PASSAGE_WORDS = 150  # each passage is cut to its first 150 words in the answer prompt


@dataclass(frozen=True)
class WriteTask:
    """One document to write: its key (new ``doc_id``), the query, and the ranked documents
    ``(position, rank)`` it is written from."""

    doc_id: str
    query_id: str
    query: str
    sources: tuple[tuple[int, int], ...]


def answer_template(prompt: str, base: Path) -> str:
    """The answer prompt: ``rag`` or a template file with ``{query}`` and ``{passages}``."""
    if prompt == "rag":
        return RAG_PROMPT
    path = (base / prompt).resolve()
    if not path.is_file():
        raise ConfigError(f"[generator].prompt: '{prompt}' is neither 'rag' nor a template file ({path} not found)")
    text = path.read_text(encoding="utf-8")
    for field in ("{query}", "{passages}"):
        if field not in text:
            raise ConfigError(f"{path}: an answer template needs {field}")
    return text


def plan_tasks(run: Run, query_ids: Sequence[str], queries: dict[str, str], *, write: str, k: int, context: int, round_: int) -> list[WriteTask]:
    """The documents a round writes from ``run`` (already cut to what readers see)."""
    corpus = run.corpus
    tasks: list[WriteTask] = []
    seen: set[str] = set()
    for q in query_ids:
        pos = run.positions.get(q)
        if pos is None or not len(pos):
            continue
        if write == "answer":
            top = tuple((int(p), r) for r, p in enumerate(pos[:context].tolist(), start=1))
            tasks.append(WriteTask(f"answer-r{round_}-{q}", q, queries[q], top))
        else:
            doc_id = corpus.doc_ids[int(pos[0])]
            if doc_id not in seen:  # one rewrite per document and round
                seen.add(doc_id)
                tasks.append(WriteTask(doc_id, q, queries[q], ((int(pos[0]), 1),)))
    return tasks


def _passages(corpus: Corpus, task: WriteTask) -> str:
    out = []
    for n, (p, _) in enumerate(task.sources, start=1):
        d = corpus[p]
        words = d.text.split()
        text = " ".join(words[:PASSAGE_WORDS]) + (" ..." if len(words) > PASSAGE_WORDS else "")
        out.append(f"[{n}] {d.title + ': ' if d.title else ''}{text}")
    return "\n\n".join(out)


def request_for(task: WriteTask, corpus: Corpus, gen: Any, template: Any, seed: int, budget: int) -> tuple[Any, str, str | None]:
    """``(request, source_text, answer_marker)`` of one task."""
    from sourcebias.generation.rewrite import document_seed
    from sourcebias.llmcalls.backends import GenerationRequest

    if gen.write == "answer":
        source_text, marker = _passages(corpus, task), None
        user = template.replace("{passages}", source_text).replace("{query}", task.query)
        messages = ([{"role": "system", "content": gen.system}] if gen.system else []) + [{"role": "user", "content": user}]
    else:
        d = corpus[task.sources[0][0]]
        messages, user = template.messages(d.text, d.title), template.render(d.text, d.title)
        source_text, marker = d.text, template.answer_marker or "Rewritten Text:"
    req = GenerationRequest(
        key=task.doc_id, messages=messages, prompt=user, max_tokens=budget, temperature=gen.temperature, top_p=gen.top_p, seed=document_seed(seed, task.doc_id)
    )
    return req, source_text, marker


def write_documents(
    tasks: Sequence[WriteTask], corpus: Corpus, backend: Any, gen: Any, template: Any, *, seed: int, round_: int, retriever: str, on_done: Any = None
) -> list[dict[str, Any]]:
    """Generate every task (in order; the backend's own concurrency for servers) and return one
    JSONL record per task, ``metadata.rewrite_status`` ``ok`` or why it was not added."""
    import concurrent.futures as cf

    from sourcebias.generation.postprocess import clean_output

    def one(task: WriteTask) -> dict[str, Any]:
        req, source_text, marker = request_for(task, corpus, gen, template, seed, gen.max_new_tokens)
        res = backend.generate(req)
        tmpl = template if isinstance(template, str) else template.template
        cleaned = clean_output(res.text, finish_reason=res.finish_reason, source_text=source_text, template=tmpl, answer_marker=marker)
        meta = {
            "rewrite_status": cleaned.status,
            "round": round_,
            "retriever": retriever,
            "write": gen.write,
            "query_id": task.query_id,
            "model": backend.model,
            "from": [{"doc_id": corpus.doc_ids[p], "source": corpus.source_of(p), "rank": r} for p, r in task.sources],
            "seed": req.seed,
            "max_tokens": req.max_tokens,
            "completion_tokens": res.completion_tokens,
            "finish_reason": res.finish_reason,
            "seconds": round(res.seconds, 3),
        }
        if cleaned.reason:
            meta["note"] = cleaned.reason
        title = corpus[task.sources[0][0]].title if gen.write == "rewrite" else ""
        return {"_id": task.doc_id, "title": title, "text": cleaned.text, "metadata": meta}

    workers = max(1, int(getattr(backend, "concurrency", 1)))
    records: list[dict[str, Any]] = [{}] * len(tasks)
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, t): i for i, t in enumerate(tasks)}
        for fut in cf.as_completed(futures):
            records[futures[fut]] = fut.result()
            if on_done is not None:
                on_done()
    return records


def make_backend(gen: Any) -> Any:
    """The generation backend of a ``[generator]`` entry (as ``sourcebias generate`` opens it)."""
    from sourcebias.llmcalls import ModelSpec, open_backend

    spec = ModelSpec(gen.backend, gen.model, tuple(gen.base_url))
    if gen.backend != "local":
        from sourcebias.llmcalls.backends.openai import DEFAULT_API_KEY_ENV

        return open_backend(
            spec,
            what="[generator] model",
            api_key_env=gen.api_key_env or DEFAULT_API_KEY_ENV,
            require_api_key=gen.api_key_env is not None,
            concurrency=gen.concurrency,
            timeout=gen.timeout,
            chat=not gen.completions,
        )
    return open_backend(spec, what="[generator] model", device=gen.device, threads=gen.threads)


def make_template(gen: Any, base: Path) -> Any:
    """The answer template (a string) or the rewrite prompt (a PromptTemplate)."""
    if gen.write == "answer":
        return answer_template(gen.prompt, base)
    from sourcebias.generation.prompts import load_prompt

    spec = gen.prompt if gen.prompt in _builtin_prompts() else str((base / gen.prompt).resolve())
    return load_prompt(spec, system=gen.system)


def _builtin_prompts() -> set[str]:
    from sourcebias.generation.prompts import BUILTIN_PROMPTS

    return set(BUILTIN_PROMPTS)
