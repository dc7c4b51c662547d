"""``sourcebias generate`` (build an LLM twin of a corpus) and ``sourcebias serve`` (an
OpenAI-compatible server for a local model). Registered on the main app by :func:`register`."""

from __future__ import annotations

import os
import time
from typing import Any

import typer

from sourcebias.cli import options_generate as o
from sourcebias.cli.common import console, err_console

GENERATE_HELP = (
    "Build an LLM twin of a corpus: rewrite every human document with an LLM.\n"
    "\n"
    "Writes DATASET_DIR/corpus/NAME.jsonl: one line per document with the original's _id and title, the rewrite as text, and "
    "metadata.rewrite_status (ok, refused, empty, truncated, filtered, length; flagged documents keep the human text). Resumable: a rerun skips "
    "finished documents, repairs a torn last line and retries failed ones. NAME.manifest.json records model, prompt, parameters, counts and "
    "timings.\n"
    "\n"
    "Then:  sourcebias evaluate DATASET_DIR --source human --source NAME\n"
    "\n"
    "Examples:\n"
    "\n"
    "  sourcebias generate data/nq-utd --name smollm2-tmp0.2 --model smollm2 --limit 50\n"
    "\n"
    "  sourcebias generate data/nq-utd --name llama3-tmp0.2 --model "
    "openai:meta-llama/Meta-Llama-3-8B-Instruct@http://gpu1:8000/v1@http://gpu2:8000/v1 --concurrency 32"
)


def generate(
    dataset_dir: o.DatasetDir,
    name: o.TwinName,
    model: o.Model,
    backend: o.BackendChoice = None,
    base_url: o.BaseUrl = None,
    api_key_env: o.ApiKeyEnv = None,
    prompt: o.Prompt = "kdd",
    system: o.System = None,
    temperature: o.Temperature = 0.2,
    top_p: o.TopP = 1.0,
    seed: o.Seed = 0,
    max_new_tokens_ratio: o.MaxNewTokensRatio = 2.0,
    min_new_tokens: o.MinNewTokens = 64,
    max_new_tokens: o.MaxNewTokens = 2048,
    limit: o.Limit = None,
    length_filter: o.LengthFilter = False,
    min_words: o.MinWords = 10,
    max_words: o.MaxWords = 2000,
    sample_cap: o.SampleCap = None,
    output: o.TwinOutput = None,
    human_source: o.HumanSource = "human",
    concurrency: o.Concurrency = None,
    timeout: o.Timeout = 300.0,
    max_retries: o.MaxRetries = 8,
    completions: o.Completions = False,
    device: o.Device = None,
    threads: o.Threads = None,
    keep_raw: o.KeepRaw = False,
    overwrite: o.Overwrite = False,
    fsync: o.Fsync = False,
    max_consecutive_failures: o.MaxConsecutiveFailures = 20,
    length_control: o.LengthControlSpec = None,
) -> None:
    """Build an LLM twin of a corpus: rewrite every human document with an LLM (help: :data:`GENERATE_HELP`)."""
    from sourcebias.generation.journal import refuse_early
    from sourcebias.generation.prompts import load_prompt
    from sourcebias.generation.rewrite import RewriteSettings, resolve_target

    spec = model_spec(model, backend, base_url)
    target = resolve_target(dataset_dir, name, output=output, human_source=human_source)
    settings = RewriteSettings(
        prompt=load_prompt(prompt, system=system),
        **_sampling(temperature, top_p, seed, max_new_tokens_ratio, min_new_tokens, max_new_tokens),
        **_selection(length_filter, min_words, max_words, sample_cap, limit),
        **_writing(keep_raw, fsync, max_consecutive_failures, length_control),
    )
    settings.validate()
    refuse_early(target, settings.fingerprint(spec.model), overwrite=overwrite)  # before a model is loaded or a server asked
    if spec.backend != "local":
        engine = _openai_backend(spec, api_key_env, concurrency=concurrency, timeout=timeout, max_retries=max_retries, chat=not completions)
    else:
        engine = _local_backend(spec, device, threads)
    summary = _rewrite(target, spec, engine, settings, overwrite=overwrite, human_source=human_source)
    _print_summary(summary, target, human_source, length_control=settings.length_control is not None)


def _sampling(temperature: float, top_p: float, seed: int | None, max_new_tokens_ratio: float, min_new_tokens: int, max_new_tokens: int) -> dict[str, Any]:
    """The rewrite settings' sampling and answer budget."""
    return {
        "temperature": temperature,
        "top_p": top_p,
        "seed": seed,
        "max_new_tokens_ratio": max_new_tokens_ratio,
        "min_new_tokens": min_new_tokens,
        "max_new_tokens": max_new_tokens,
    }


def _selection(length_filter: bool, min_words: int, max_words: int, sample_cap: int | None, limit: int | None) -> dict[str, Any]:
    """The rewrite settings' choice of documents: the length filter, Cocktail's sample cap, the limit."""
    return {"length_filter": (min_words, max_words) if length_filter else None, "sample_cap": sample_cap, "limit": limit}


def _writing(keep_raw: bool, fsync: bool, max_consecutive_failures: int, length_control: str | None) -> dict[str, Any]:
    """The rewrite settings' output and retries: raw answers, fsync, the failure limit, length control."""
    from sourcebias.generation.length import LengthControl

    return {
        "keep_raw": keep_raw,
        "fsync": fsync,
        "max_consecutive_failures": max_consecutive_failures,
        "length_control": LengthControl.parse(length_control) if length_control else None,
    }


def _rewrite(target: Any, spec: Any, engine: Any, settings: Any, *, overwrite: bool, human_source: str) -> Any:
    """Say what is rewritten with what, rewrite under progress bars, close the engine; the summary."""
    from sourcebias.core import progress
    from sourcebias.generation.rewrite import rewrite_corpus

    lc = settings.length_control
    control = f", length {lc.ratio:g} × the original's words ± {lc.tolerance:g}, up to {lc.max_retries} retries" if lc else ""
    console.print(
        f"Rewriting {target.human_file} with [bold]{spec.model}[/bold] ({spec.backend}, prompt {settings.prompt.name}, T={settings.temperature}, "
        f"top_p={settings.top_p}{control}) into [bold]{target.output}[/bold]"
    )
    try:
        with progress.RichProgress(console=console, transient=False) as reporter, progress.use(reporter):
            return rewrite_corpus(target, engine, settings, overwrite=overwrite, human_source=human_source)
    finally:
        engine.close()


def model_spec(model: str, backend: o.BackendKind | None, base_url: list[str] | None) -> Any:
    """The ``--model`` spec (:func:`sourcebias.llmcalls.parse_model_spec`); the 0.2.0 form
    ``--backend openai --base-url URL --model M`` is read as ``--model openai:M@URL`` with a
    deprecation warning, and refused when it contradicts the spec."""
    from sourcebias.core.errors import ConfigError
    from sourcebias.core.moved import deprecated
    from sourcebias.llmcalls.spec import parse_model_spec, server_spec

    spec = parse_model_spec(model, what="--model")
    if base_url:
        if spec.backend != "local" or backend is o.BackendKind.local:
            raise ConfigError("--base-url goes with a model name, not with a local model or an openai:MODEL@URL spec (which names its servers)")
        flags = ("--backend openai " if backend else "") + " ".join(f"--base-url {u}" for u in base_url)
        return server_spec(model, base_url, old=f"--model {model} {flags}", new="--model {spec}")
    if backend is o.BackendKind.openai and spec.backend == "local":
        raise ConfigError("--backend openai: name the servers in the model spec, --model openai:MODEL@http://HOST:PORT/v1")
    if backend is not None:
        deprecated(f"--backend {backend.value}", f"--model {spec}")
    return spec


def _openai_backend(spec: Any, api_key_env: str | None, **options):
    """The HTTP backend, its servers checked before any work (warnings printed)."""
    from sourcebias.llmcalls import open_backend
    from sourcebias.llmcalls.backends.openai import DEFAULT_API_KEY_ENV

    engine = open_backend(spec, what="--model", api_key_env=api_key_env or DEFAULT_API_KEY_ENV, require_api_key=api_key_env is not None, **options)
    for warning in engine.require_usable():
        err_console.print(f"[yellow]Warning:[/yellow] {warning}", highlight=False)
    return engine


def _local_backend(spec: Any, device: str | None, threads: int | None):
    from sourcebias.llmcalls import open_backend

    t0 = time.perf_counter()
    with console.status(f"Loading {spec.model} ..."):
        engine = open_backend(spec, what="--model", device=device, threads=threads)
    console.print(f"Loaded [bold]{spec.model}[/bold] on {engine.device} in {time.perf_counter() - t0:.1f} s")
    return engine


def _print_summary(summary, target, human_source: str, *, length_control: bool) -> None:
    """What this run wrote, what the twin holds, and what to do next (exit 1 when documents failed)."""
    if summary.repaired_bytes:
        console.print(f"[yellow]Note:[/yellow] removed a torn last line ({summary.repaired_bytes} bytes) left by an interrupted run")
    written = ", ".join(f"{k} {v}" for k, v in sorted(summary.written.items())) or "nothing new"
    console.print(
        f"This run: {written} in {summary.seconds:.1f} s ({summary.docs_per_s:.2f} docs/s); "
        f"{summary.skipped_done} already done; {summary.failed} failed."
        + (
            f" Length control: {summary.length_retries} retries; {summary.counts.get('length', 0)} documents outside the band (flagged 'length')."
            if length_control
            else ""
        )
    )
    totals = ", ".join(f"{k} {v}" for k, v in sorted(summary.counts.items()))
    console.print(
        f"Twin: {summary.documents_in_output} of {summary.selected} documents ({totals}); "
        f"{summary.identical} identical to the original. Manifest: {summary.manifest}"
    )
    if summary.failed:
        console.print(
            f"[yellow]{summary.failed} documents failed after retries[/yellow] (listed in {target.failed_file}); rerun the same command to retry them."
        )
        raise typer.Exit(1)
    if target.dataset_root is not None and target.output.parent == target.dataset_root / "corpus":
        console.print(f"Next: sourcebias evaluate {target.dataset_root} --source {human_source} --source {target.output.stem}")


def serve(
    model: o.ServeModel,
    host: o.Host = "127.0.0.1",
    port: o.Port = 8000,
    served_model_name: o.ServedModelName = None,
    device: o.ServeDevice = None,
    threads: o.ServeThreads = None,
    max_pending: o.MaxPending = 64,
    quiet: o.Quiet = False,
) -> None:
    """Serve a local model over an OpenAI-compatible API (chat/completions, completions, models).

    Lets several `sourcebias generate --base-url` workers share one loaded model. Requests are
    answered one at a time; temperature, top_p, max_tokens and seed are honoured.

    Example:  sourcebias serve --model smollm2 --port 8000
    """
    from sourcebias.core.errors import ConfigError
    from sourcebias.llmcalls import open_backend, parse_model_spec
    from sourcebias.llmcalls.server import make_server

    spec = parse_model_spec(model, what="--model")
    if spec.backend != "local":
        raise ConfigError(f"--model {model}: `sourcebias serve` serves a local model (smollm2, a .gguf file, a folder), not a server")
    t0 = time.perf_counter()
    engine = open_backend(spec, what="--model", device=device, threads=threads)
    try:
        server = make_server(engine, host=host, port=port, model_names=served_model_name or [model], max_pending=max_pending, quiet=quiet)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    # Printed (and flushed) only once the model is loaded and the port is bound: scripts wait for it.
    print(f"sourcebias serve: {server.model_names[0]} on {server.url} (pid {os.getpid()}, loaded in {time.perf_counter() - t0:.1f} s)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(app: typer.Typer) -> None:
    """Add ``generate`` and ``serve`` to the ``sourcebias`` app."""
    app.command(help=GENERATE_HELP)(generate)
    app.command()(serve)
