"""The options of ``sourcebias generate`` and ``sourcebias serve``, as reusable ``Annotated``
aliases (the command functions then list parameters, not option declarations)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class BackendKind(str, Enum):
    local = "local"
    openai = "openai"


# -- what is rewritten, and where the twin goes -----------------------------------------------
DatasetDir = Annotated[
    Path,
    typer.Argument(
        help="Dataset folder (Cocktail layout: corpus/human.jsonl ...; KDD layout) or a corpus .jsonl file (then give --output).", show_default=False
    ),
]
TwinName = Annotated[
    str, typer.Option("--name", "-n", help="Source name of the twin, e.g. smollm2-tmp0.2: written to DATASET_DIR/corpus/NAME.jsonl.", show_default=False)
]
TwinOutput = Annotated[Path | None, typer.Option("--output", "-o", help="Write the twin here instead of DATASET_DIR/corpus/NAME.jsonl.")]
HumanSource = Annotated[str, typer.Option(help="Name of the human-written source to rewrite.")]
Limit = Annotated[int | None, typer.Option(help="Only the first N documents (after --sample-cap).", min=1)]
LengthFilter = Annotated[
    bool,
    typer.Option(
        "--length-filter/--no-length-filter",
        help="Cocktail's filter: rewrite only documents of --min-words to --max-words words; others keep the human text, flagged 'filtered'.",
    ),
]
MinWords = Annotated[int, typer.Option(help="Length filter lower bound (Cocktail: 10).")]
MaxWords = Annotated[int, typer.Option(help="Length filter upper bound (Cocktail: 2000).")]
SampleCap = Annotated[
    int | None,
    typer.Option(
        help="Cocktail's rule for large corpora: above N documents, keep every labelled document "
        "(any qrels split) and random others up to N (Cocktail: 100000; seeded by --seed).",
        min=1,
    ),
]

# -- the model and how it is asked ------------------------------------------------------------
Model = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="The model: smollm2, a .gguf file, a transformers folder or a cached Hugging Face name (it runs here), or "
        "openai:MODEL@URL (MODEL as an OpenAI-compatible server at URL knows it; more @URL spread the work over several servers).",
        show_default=False,
    ),
]
ServeModel = Annotated[
    str, typer.Option("--model", "-m", help="smollm2, a .gguf file, a transformers folder or a cached Hugging Face name.", show_default=False)
]
BackendChoice = Annotated[
    BackendKind | None,
    typer.Option(help="Deprecated (removed in 0.4.0): the --model spec says it (openai:MODEL@URL for a server)."),
]
Prompt = Annotated[
    str,
    typer.Option(
        help="kdd, cocktail, one of Table 7's (own-words, paraphrase, summarize, simplify, rephrase, "
        "condense, restate, reword, express), or a template FILE with {text} (and {title})."
    ),
]
System = Annotated[str | None, typer.Option(help="A system message (default: none; the model's chat template may add its own).")]
Temperature = Annotated[float, typer.Option(help="Sampling temperature (papers: 0.2; also 1.0). 0 = greedy.")]
TopP = Annotated[float, typer.Option(help="Nucleus sampling (papers: 1.0).")]
Seed = Annotated[int | None, typer.Option(help="Base seed; each document gets a seed derived from it and its id (sent to servers that support it).")]
MaxNewTokensRatio = Annotated[float, typer.Option(help="Answer budget: this many times the input's tokens ...")]
MinNewTokens = Annotated[int, typer.Option(help="... but at least this many ...")]
MaxNewTokens = Annotated[int, typer.Option(help="... and at most this many. Answers cut at the budget are flagged 'truncated'.")]
LengthControlSpec = Annotated[
    str | None,
    typer.Option(
        "--length-control",
        metavar="ratio=R,tolerance=T[,max_retries=N]",
        help="Ask for a target length (R × the original's words; the prompt gets 'The rewritten text should be about N words long.') and accept answers within "
        "N × (1 ± T) words; others are asked again up to max_retries times (default 2; seeded per attempt; none at --temperature 0), then flagged "
        "'length' (human text kept).",
    ),
]

# -- the backends -----------------------------------------------------------------------------
BaseUrl = Annotated[list[str] | None, typer.Option("--base-url", help="Deprecated (removed in 0.4.0): write --model openai:MODEL@URL\\[@URL...].")]
ApiKeyEnv = Annotated[
    str | None, typer.Option(help="Environment variable holding the API key (default OPENAI_API_KEY, optional). The key is never written anywhere.")
]
Concurrency = Annotated[int | None, typer.Option(help="openai: requests in flight at once over all servers (default: 4 per server).", min=1)]
Timeout = Annotated[float, typer.Option(help="openai: seconds to wait for one answer.")]
MaxRetries = Annotated[int, typer.Option(help="openai: retries on 429, 5xx and network errors (exponential backoff with jitter, Retry-After honoured).", min=0)]
Completions = Annotated[
    bool, typer.Option("--completions/--chat", help="openai: plain /completions with the rendered prompt (base models) instead of /chat/completions.")
]
Device = Annotated[str | None, typer.Option(help="local: cpu, cuda, cuda:1 (default: cuda if available).")]
ServeDevice = Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: cuda if available).")]
Threads = Annotated[
    int | None,
    typer.Option(
        help="local: PyTorch CPU threads while generating (default: one per core). On a CPU shared with other busy processes, 1 is often much faster.", min=1
    ),
]
ServeThreads = Annotated[
    int | None,
    typer.Option(
        help="PyTorch CPU threads while generating (default: one per core). On a CPU shared with other busy processes, 1 is often much faster.", min=1
    ),
]

# -- the job ----------------------------------------------------------------------------------
KeepRaw = Annotated[bool, typer.Option(help="Also store each raw answer in metadata.raw.")]
Overwrite = Annotated[bool, typer.Option(help="Delete an existing twin of this name (and its state) and start again.")]
Fsync = Annotated[bool, typer.Option(help="fsync after every document (survives power loss, slower).")]
MaxConsecutiveFailures = Annotated[int, typer.Option(help="Stop when this many documents in a row fail after retries.", min=1)]

# -- serve ------------------------------------------------------------------------------------
Host = Annotated[str, typer.Option(help="Address to listen on (127.0.0.1: this machine only; 0.0.0.0: all interfaces).")]
Port = Annotated[int, typer.Option(help="TCP port.")]
ServedModelName = Annotated[list[str] | None, typer.Option(help="Name(s) clients use in 'model' (default: --model).")]
MaxPending = Annotated[int, typer.Option(help="Requests allowed to wait; more are answered 429 with Retry-After.", min=1)]
Quiet = Annotated[bool, typer.Option(help="Do not log each request.")]
