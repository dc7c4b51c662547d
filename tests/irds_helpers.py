"""Helpers of the ir_datasets tests (tests/adapters/test_irds.py and the README's snippets in
tests/project/test_readme_ecosystem.py): BEIR's nfcorpus placed where ir_datasets looks for it."""

from __future__ import annotations

import zipfile
from pathlib import Path


def placed_nfcorpus(nfcorpus: Path, home: Path) -> Path:
    """BEIR's nfcorpus.zip layout (human corpus, queries, dev qrels) where ir_datasets caches it."""
    target = home / "beir" / "nfcorpus" / "source.zip"
    target.parent.mkdir(parents=True)
    with zipfile.ZipFile(target, "w") as z:
        z.write(nfcorpus / "corpus" / "human.jsonl", "nfcorpus/corpus.jsonl")
        z.write(nfcorpus / "queries.jsonl", "nfcorpus/queries.jsonl")
        z.write(nfcorpus / "qrels" / "dev.tsv", "nfcorpus/qrels/dev.tsv")
    return home
