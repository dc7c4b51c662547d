"""Rules of the rewriting job that need no model: seeds, token budget, Cocktail's length filter
and large-corpus sample, output paths, retry-after parsing, base URLs."""

import json

import pytest
from conftest import write_jsonl, write_qrels

from sourcebias.core.errors import ConfigError, DataError
from sourcebias.generation.prompts import load_prompt
from sourcebias.generation.rewrite import (
    RewriteSettings,
    cocktail_sample,
    document_seed,
    max_new_tokens_for,
    passes_length_filter,
    read_done_ids,
    resolve_target,
)
from sourcebias.llmcalls.backends.openai import normalize_base_url, parse_retry_after


def test_document_seed_depends_on_seed_and_id_only():
    assert document_seed(0, "d1") == document_seed(0, "d1")
    assert document_seed(0, "d1") != document_seed(0, "d2")
    assert document_seed(0, "d1") != document_seed(1, "d1")
    assert document_seed(None, "d1") is None
    # the documented derivation, computed independently: BLAKE2b-64 of the length-prefixed parts, mod 2^31 - 1
    import hashlib

    h = hashlib.blake2b(digest_size=8)
    for part in ("123", "x"):
        h.update(len(part.encode()).to_bytes(4, "little") + part.encode())
    assert document_seed(123, "x") == int.from_bytes(h.digest(), "little") % (2**31 - 1)


def test_max_new_tokens_follows_input_within_bounds():
    assert max_new_tokens_for(100, 2.0, 64, 1000) == 200
    assert max_new_tokens_for(10, 2.0, 64, 1000) == 64  # floor
    assert max_new_tokens_for(900, 2.0, 64, 1000) == 1000  # ceiling
    assert max_new_tokens_for(101, 1.5, 1, 1000) == 152  # rounded up


@pytest.mark.parametrize(("words", "kept"), [(9, False), (10, True), (2000, True), (2001, False)])
def test_cocktail_length_filter_bounds_are_inclusive(words, kept):
    assert passes_length_filter(" ".join(["w"] * words)) is kept


def test_cocktail_sample_keeps_labelled_and_fills_up_to_cap():
    ids = [f"d{i}" for i in range(20)]
    labelled = {"d3", "d7", "d19"}
    s = cocktail_sample(ids, labelled, cap=8, seed=0)
    assert len(s) == 8
    assert labelled <= set(s)
    assert s == sorted(s, key=ids.index)  # corpus order
    assert s == cocktail_sample(ids, labelled, cap=8, seed=0)  # seeded
    assert s != cocktail_sample(ids, labelled, cap=8, seed=1)
    assert cocktail_sample(ids, labelled, cap=20) == ids  # at most cap: everything
    # More labelled documents than the cap: all labelled are kept, no others.
    assert cocktail_sample(ids, set(ids[:10]), cap=5) == ids[:10]


def test_settings_validation_and_fingerprint():
    s = RewriteSettings(load_prompt("kdd"))
    assert (s.temperature, s.top_p) == (0.2, 1.0)  # the papers' defaults
    fp = s.fingerprint("smollm2")
    assert fp["prompt"]["template"] == "Please rewrite the following text: {text}"
    assert RewriteSettings(load_prompt("kdd"), limit=5).fingerprint("smollm2") == fp  # limit does not change content
    assert RewriteSettings(load_prompt("kdd"), temperature=1.0).fingerprint("smollm2") != fp
    with pytest.raises(ConfigError, match="temperature"):
        RewriteSettings(load_prompt("kdd"), temperature=3.0).validate()
    with pytest.raises(ConfigError, match="top-p"):
        RewriteSettings(load_prompt("kdd"), top_p=0.0).validate()


def test_resolve_target_per_layout(tmp_path, cocktail_dir):
    t = resolve_target(cocktail_dir, "smol")
    assert t.output == cocktail_dir / "corpus" / "smol.jsonl"
    assert t.human_file == cocktail_dir / "corpus" / "human.jsonl"
    assert t.manifest_file.name == "smol.manifest.json" and not t.manifest_file.name.endswith(".jsonl")
    assert t.state_dir == cocktail_dir / "corpus" / ".smol.state"
    assert [p.name for p in t.qrels_files] == ["test.tsv"]
    kdd = tmp_path / "kdd"
    write_jsonl(kdd / "corpus-human.jsonl", [{"_id": "d1", "title": "", "text": "x y"}])
    assert resolve_target(kdd, "smol").output == kdd / "corpus-smol.jsonl"
    beir = tmp_path / "beir"
    write_jsonl(beir / "corpus.jsonl", [{"_id": "d1", "title": "", "text": "x y"}])
    with pytest.raises(ConfigError, match="--output"):
        resolve_target(beir, "smol")
    assert resolve_target(beir, "smol", output=tmp_path / "twin.jsonl").output == tmp_path / "twin.jsonl"
    with pytest.raises(ConfigError, match="human source"):
        resolve_target(cocktail_dir, "human")
    with pytest.raises(ConfigError, match="not a usable source name"):
        resolve_target(cocktail_dir, "../evil")
    with pytest.raises(DataError, match="not found"):
        resolve_target(tmp_path / "missing", "smol")


def test_read_done_ids_repairs_a_torn_last_line(tmp_path):
    out = tmp_path / "twin.jsonl"
    full = [json.dumps({"_id": f"d{i}", "title": "", "text": "t"}) for i in range(3)]
    out.write_text("\n".join(full) + "\n" + full[0][:17], encoding="utf-8")  # killed mid-write
    done, removed = read_done_ids(out)
    assert done == {"d0", "d1", "d2"} and removed == 17
    assert out.read_text(encoding="utf-8") == "\n".join(full) + "\n"
    out.write_text(full[0] + "\n" + full[0] + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="appears twice"):
        read_done_ids(out)


def test_retry_after_and_base_urls():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert normalize_base_url("http://localhost:8000") == "http://localhost:8000/v1"
    assert normalize_base_url("https://api.openai.com/v1/") == "https://api.openai.com/v1"
    for bad in ("localhost:8000", "ftp://x/v1", "http://", "not a url"):
        with pytest.raises(ConfigError):
            normalize_base_url(bad)


def test_labelled_ids_come_from_every_qrels_split(tmp_path):
    from sourcebias.data import read_corpus
    from sourcebias.generation.rewrite import select_documents

    root = tmp_path / "big"
    write_jsonl(root / "corpus" / "human.jsonl", [{"_id": f"d{i}", "title": "", "text": "a b"} for i in range(30)])
    write_qrels(root / "qrels" / "train.tsv", [("q1", "d25", 1)])
    write_qrels(root / "qrels" / "test.tsv", [("q2", "d29", 0)])
    t = resolve_target(root, "twin")
    corpus, _ = read_corpus(t.human_file, "human")
    pos = select_documents(corpus, RewriteSettings(load_prompt("kdd"), sample_cap=5), t.qrels_files)
    chosen = [corpus.doc_ids[i] for i in pos]
    assert len(chosen) == 5 and {"d25", "d29"} <= set(chosen)
    assert select_documents(corpus, RewriteSettings(load_prompt("kdd"), sample_cap=5, limit=2), t.qrels_files) == pos[:2]


def test_credentials_in_base_urls_never_reach_describe_or_messages():
    from sourcebias.llmcalls.backends.base import redact_url_credentials
    from sourcebias.llmcalls.backends.openai import OpenAIBackend

    assert redact_url_credentials("https://bob:sk-1@api.example.com/v1 x") == "https://***@api.example.com/v1 x"
    backend = OpenAIBackend(["https://bob:sk-1@api.example.com/v1"], "m")
    try:
        assert "sk-1" not in json.dumps(backend.describe())
    finally:
        backend.close()


def test_generation_depends_only_on_the_allowed_modules():
    import ast
    from pathlib import Path

    import sourcebias.generation as gen

    allowed = {"sourcebias.generation", "sourcebias.data", "sourcebias.core", "sourcebias.llmcalls"}
    for path in Path(gen.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # from sourcebias.core import progress -> sourcebias.core.progress
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                names = []
            for name in names:
                if name.startswith("sourcebias"):
                    assert any(name == a or name.startswith(a + ".") for a in allowed), f"{path.name} imports {name}"


def test_a_second_run_on_the_same_twin_is_refused_while_the_first_holds_it(cocktail_dir):
    import fcntl

    from sourcebias.generation.rewrite import rewrite_corpus
    from sourcebias.llmcalls.backends.openai import OpenAIBackend

    target = resolve_target(cocktail_dir, "smol")
    target.state_dir.mkdir(parents=True)
    with (target.state_dir / "lock").open("a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running generate holds
        backend = OpenAIBackend(["http://127.0.0.1:9/v1"], "m")  # never reached
        with pytest.raises(ConfigError, match="another `sourcebias generate` is writing"):
            rewrite_corpus(target, backend, RewriteSettings(load_prompt("kdd")))
        backend.close()
    assert not target.output.exists()
