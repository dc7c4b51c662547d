"""Datasets known by name: NQ-UTD ships inside the package; the other Cocktail datasets are fetched.

``load_dataset("nq-utd")`` (and ``sourcebias evaluate nq-utd``) reads the copy of NQ-UTD that
ships with sourcebias (80 queries, 800 documents per source, gzip-compressed, MIT licence as in the
Cocktail repository), so the first command works on any machine without a download. The other
datasets of the Cocktail benchmark (Dai et al., Findings of ACL 2024) live on Hugging Face
(``https://huggingface.co/datasets/IR-Cocktail/<name>``, one ``<name>.zip`` each); ``sourcebias
download NAME`` fetches one (:mod:`sourcebias.data.download`) into the dataset cache, after which
its name loads it as well. ``sourcebias datasets`` lists them all.

The MD5 sums are those the Cocktail README publishes for its zip archives; their SHA-256 sums are
not published and are recorded as unknown (``None``) rather than guessed. The shipped NQ-UTD
files carry the SHA-256 of the files themselves, checked by the tests against
``../shared/data/nq-utd``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sourcebias.core.cache import default_cache_dir

COCKTAIL_CITATION = (
    "Dai, S., Liu, W., Zhou, Y., Pang, L., Ruan, R., Wang, G., Dong, Z., Xu, J., Wen, J.-R. (2024). Cocktail: A Comprehensive "
    "Information Retrieval Benchmark with LLM-Generated Documents Integration. Findings of ACL 2024, 7052-7074. "
    "https://aclanthology.org/2024.findings-acl.421"
)
COCKTAIL_HOME = "https://github.com/KID-22/Cocktail"
#: The Cocktail README: "All data and code in this project can only be used for academic purposes."
ACADEMIC = "academic use only (Cocktail README); the original dataset's own licence applies too"
HF_URL = "https://huggingface.co/datasets/IR-Cocktail/{name}/resolve/main/{name}.zip"
#: written into a downloaded dataset's folder once it is verified, unpacked and checked
MARKER = ".sourcebias-download.json"


@dataclass(frozen=True)
class RemoteFile:
    """A file to download: its URL, the name it is saved under and what is known of its checksums."""

    url: str
    name: str
    md5: str | None = None
    sha256: str | None = None
    checksums_from: str = ""


@dataclass(frozen=True)
class KnownDataset:
    """A dataset sourcebias knows by name.

    Attributes:
        name: The name ``load_dataset`` and the CLI take.
        description: One line on what it holds.
        licence: Its licence, as its publishers state it.
        citation: What to cite.
        homepage: Where it is described.
        shipped: For a built-in dataset, its files inside the package (path relative to the
            dataset folder -> SHA-256 of the shipped file); empty for a downloadable one.
        files: For a downloadable dataset, the archive(s) to fetch.
    """

    name: str
    description: str
    licence: str
    citation: str
    homepage: str
    shipped: dict[str, str] = field(default_factory=dict)
    files: tuple[RemoteFile, ...] = ()

    @property
    def builtin(self) -> bool:
        """Whether the dataset ships inside the package."""
        return bool(self.shipped)

    def builtin_path(self) -> Path:
        """The folder of the shipped copy (inside the installed package).

        Returns:
            ``<package>/data/builtin/<name>``.
        """
        return Path(__file__).parent / "builtin" / self.name

    def cached_path(self, root: str | Path | None = None) -> Path:
        """Where ``sourcebias download`` puts it.

        Args:
            root: The dataset cache (default: :func:`datasets_dir`).

        Returns:
            ``root/<name>``.
        """
        return Path(root).expanduser() / self.name if root is not None else datasets_dir() / self.name

    def local_path(self) -> Path | None:
        """The folder that holds it on this machine.

        Returns:
            The shipped copy, or a finished download in the dataset cache; ``None`` when it has not been
            downloaded.
        """
        if self.builtin:
            return self.builtin_path()
        path = self.cached_path()
        return path if is_complete(path) else None


def is_complete(folder: str | Path) -> bool:
    """Whether ``folder`` holds a finished, verified download (its marker file is there).

    Args:
        folder: A dataset folder.

    Returns:
        True when the download's marker file exists.
    """
    return (Path(folder) / MARKER).is_file()


def datasets_dir() -> Path:
    """The dataset cache.

    Returns:
        ``$SOURCEBIAS_DATASETS``, or ``<cache>/datasets`` (the cache is ``$SOURCEBIAS_CACHE`` or
        ``~/.cache/sourcebias``).
    """
    env = os.environ.get("SOURCEBIAS_DATASETS")
    return Path(env).expanduser() if env else default_cache_dir() / "datasets"


def _cocktail(name: str, description: str, md5: str, homepage: str, *, url_name: str | None = None) -> KnownDataset:
    url = HF_URL.format(name=url_name or name)
    return KnownDataset(
        name=name,
        description=description,
        licence=ACADEMIC,
        citation=f"{COCKTAIL_CITATION}; and the original dataset ({homepage})",
        homepage=f"https://huggingface.co/datasets/IR-Cocktail/{url_name or name}",
        files=(RemoteFile(url, f"{name}.zip", md5=md5, checksums_from="MD5 as published in the Cocktail README; SHA-256 not published"),),
    )


NQ_UTD = KnownDataset(
    name="nq-utd",
    description="NQ-UTD (Cocktail): 80 queries on events of Nov 2023-Jan 2024; 800 documents per source (human, llama-2-7b-chat-tmp0.2); split test",
    licence="MIT (the Cocktail repository's LICENSE; shipped beside the data)",
    citation=COCKTAIL_CITATION,
    homepage=COCKTAIL_HOME,
    shipped={
        "corpus/human.jsonl.gz": "0bbbc4215dae43a136033cd7f88fd63223c7a37492563120a8beb8bc68d94f22",
        "corpus/llama-2-7b-chat-tmp0.2.jsonl.gz": "7c16a532dda8a3918c52f51ab9bc9af7ac4f81314e1633c86575b80dd13a9fdd",
        "queries.jsonl.gz": "af6586b6fa3ae31a249e34606580ec2b15071c781b82cf7923cd43a485dad1fc",
        "qrels/test.tsv.gz": "9c0a7664a6f9c5208e61dd579703b3ef9bb5c6b7120e62e3a5ced9ff8b2a4e33",
    },
)

# The Cocktail README's table: name, domain and size, and the MD5 of each processed archive.
_COCKTAIL = [
    (
        "msmarco",
        "MS MARCO (Cocktail): misc., binary relevance, 6,979 test queries, 542,203 documents per source",
        "985926f3e906fadf0dc6249f23ed850f",
        "https://microsoft.github.io/msmarco/",
    ),
    (
        "dl19",
        "TREC DL 2019 (Cocktail): 43 queries over the MS MARCO corpus",
        "d652af47ec0e844af43109c0acf50b74",
        "https://microsoft.github.io/msmarco/TREC-Deep-Learning-2019",
    ),
    (
        "dl20",
        "TREC DL 2020 (Cocktail): 54 queries over the MS MARCO corpus",
        "3afc48141dce3405ede2b6b937c65036",
        "https://microsoft.github.io/msmarco/TREC-Deep-Learning-2020",
    ),
    (
        "trec-covid",
        "TREC-COVID (Cocktail): bio-medical, 3-level relevance, 50 queries, 128,585 documents per source",
        "1e1e2264b623d9cb7cb50df8141bd535",
        "https://ir.nist.gov/covidSubmit/index.html",
    ),
    (
        "nfcorpus",
        "NFCorpus (Cocktail): bio-medical, 3-level relevance, 323 test queries, 3,633 documents per source",
        "695327760647984c5014d64b2fee8de0",
        "https://www.cl.uni-heidelberg.de/statnlpgroup/nfcorpus/",
    ),
    (
        "nq",
        "Natural Questions (Cocktail): Wikipedia, binary relevance, 3,446 queries, 104,194 documents per source",
        "a10bfe33efdec54aafcc974ac989c338",
        "https://ai.google.com/research/NaturalQuestions",
    ),
    (
        "hotpotqa",
        "HotpotQA (Cocktail): Wikipedia, binary relevance, 7,405 queries, 111,107 documents per source",
        "74467760fff8bf8fbdadd5094bf9dd7b",
        "https://hotpotqa.github.io/",
    ),
    (
        "fiqa",
        "FiQA-2018 (Cocktail): finance, binary relevance, 648 queries, 57,450 documents per source",
        "4e1e688539b0622630fb6e65d39d26fa",
        "https://sites.google.com/view/fiqa/",
    ),
    (
        "webis-touche2020",
        "Touché-2020 (Cocktail): argument retrieval, 3-level relevance, 49 queries, 101,922 documents per source",
        "d58ec465ccd567d8f75edb419b0faaed",
        "https://webis.de/events/touche-20/shared-task-1.html",
    ),
    (
        "cqadupstack",
        "CQADupStack (Cocktail): StackExchange, binary relevance, 1,563 queries, 39,962 documents per source",
        "d48d963bc72689c765f381f04fc26f8b",
        "http://nlp.cis.unimelb.edu.au/resources/cqadupstack/",
    ),
    (
        "dbpedia-entity",
        "DBPedia-Entity (Cocktail): Wikipedia, 3-level relevance, 400 queries, 145,037 documents per source",
        "43292f4f1a1927e2e323a4a7fa165fc1",
        "https://github.com/iai-group/DBpedia-Entity/",
    ),
    (
        "scidocs",
        "SCIDOCS (Cocktail): scientific, binary relevance, 1,000 queries, 25,259 documents per source",
        "4058c0915594ab34e9b2b67f885c595f",
        "https://allenai.org/data/scidocs",
    ),
    (
        "fever",
        "FEVER (Cocktail): Wikipedia, binary relevance, 6,666 queries, 114,529 documents per source",
        "98b631887d8c38772463e9633c477c69",
        "http://fever.ai/",
    ),
    (
        "climate-fever",
        "Climate-FEVER (Cocktail): Wikipedia, binary relevance, 1,535 queries, 101,339 documents per source",
        "5734d6ac34f24f5da496b27e04ff991a",
        "http://climatefever.ai/",
    ),
    (
        "scifact",
        "SciFact (Cocktail): scientific, binary relevance, 300 queries, 5,183 documents per source",
        "b5b8e24ccad98c9ca959061af14bf833",
        "https://github.com/allenai/scifact",
    ),
]

#: every dataset known by name, built-in first
KNOWN: dict[str, KnownDataset] = {NQ_UTD.name: NQ_UTD, **{n: _cocktail(n, d, md5, home) for n, d, md5, home in _COCKTAIL}}


def known_dataset(name: str) -> KnownDataset | None:
    """The registered dataset of that name.

    Args:
        name: A dataset name (``nq-utd``).

    Returns:
        Its entry, or ``None`` if there is none.
    """
    return KNOWN.get(name)


def resolve_name(name: str) -> Path | None:
    """The folder a registered dataset name stands for on this machine.

    Args:
        name: A dataset name.

    Returns:
        The folder, or ``None`` if ``name`` is not registered.

    Raises:
        ConfigError: ``name`` is registered but not downloaded yet (the error says how to get it).
    """
    from sourcebias.core.errors import ConfigError

    entry = known_dataset(name)
    if entry is None:
        return None
    path = entry.local_path()
    if path is None:
        raise ConfigError(
            f"'{name}' is neither a folder here nor downloaded yet; it is a known dataset: run `sourcebias download {name}` "
            f"(into {entry.cached_path()}), or see `sourcebias datasets`"
        )
    return path


def listing() -> list[dict[str, str]]:
    """One row per known dataset, for ``sourcebias datasets``.

    Returns:
        Rows of name, kind (built-in or download), where it is (or how to get it), description,
        licence, citation and what is known of its checksums.
    """
    rows = []
    for entry in KNOWN.values():
        here = entry.local_path()
        if entry.builtin:
            kind, where, sums = "built-in", str(here), "SHA-256 of every shipped file"
        else:
            kind = "download"
            where = str(here) if here is not None else f"not downloaded: `sourcebias download {entry.name}` puts it in {entry.cached_path()}"
            sums = "; ".join(
                f"{f.name}: "
                + ", ".join(f"{a.upper()} {getattr(f, a)}" if getattr(f, a) else f"{a.upper()} unknown (not published)" for a in ("md5", "sha256"))
                for f in entry.files
            )
        rows.append(
            {
                "name": entry.name,
                "kind": kind,
                "where": where,
                "description": entry.description,
                "licence": entry.licence,
                "citation": entry.citation,
                "checksums": sums,
            }
        )
    return rows
