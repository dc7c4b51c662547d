"""The options every `sourcebias analyze` command ends with (--device, --batch-size, --cache-dir,
--overwrite) are declared once (:func:`sourcebias.cli.analyze.command`) and still reach
what they set: the encoder and the LM scorer run with that device and batch size, their values
go to the store in that folder, and --overwrite replaces an earlier run."""

from __future__ import annotations

import json

import pytest
import typer.main
from lm_helpers import store_sharing_models

import sourcebias as sb
from sourcebias.cli.main import app, main
from sourcebias.testing import TOY_HUMAN, TOY_LLM, write_toy_dataset

SHARED = ["device", "batch_size", "cache_dir", "overwrite"]


def _analyze(*args: str) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(["analyze", *args])
    return info.value.code


def test_every_command_ends_with_the_shared_options_declared_once():
    from sourcebias.analysis.base import analysis_kinds

    group = typer.main.get_command(app).commands["analyze"]  # its subcommands are made from the registry when read
    kinds = analysis_kinds()
    assert set(group.commands) == set(kinds) >= {"quality", "spectrum", "perplexity", "artifacts", "direction", "length", "decompose", "compare-directions"}
    assert [name for name, k in kinds.items() if not k.model] == ["length"]
    for name, command in group.commands.items():
        params = [p.name for p in command.params]
        tail = SHARED if kinds[name].model else ["overwrite"]
        assert params[-len(tail) :] == tail, name
        assert all(params.count(p) == 1 for p in tail), name
        assert not set(SHARED) & set(kinds[name].params), f"{name} declares a shared option itself"
        assert params[: -len(tail)] == ["dataset_dir", "output", *kinds[name].params], name  # the analysis's own options, in its order
    flags = {o for p in group.commands["spectrum"].params for o in p.opts}
    assert {"--device", "--batch-size", "--cache-dir", "--overwrite"} <= flags


@pytest.fixture
def calls(monkeypatch):
    """The (texts, device, batch size) of every call of the encoder and the causal LM scorer."""
    from sourcebias.analysis.perplexity import CausalPerplexity
    from sourcebias.models.encoders import SentenceTransformerEncoder

    seen: dict[str, list[tuple[int, str | None, int]]] = {"encoder": [], "lm": []}
    for key, cls in (("encoder", SentenceTransformerEncoder), ("lm", CausalPerplexity)):
        real = cls.encode_documents

        def spy(self, texts, _real=real, _key=key):
            seen[_key].append((len(texts), self.device, self.batch_size))
            return _real(self, texts)

        monkeypatch.setattr(cls, "encode_documents", spy)
    return seen


def test_spectrum_runs_the_encoder_with_the_shared_options(tmp_path, calls):
    pytest.importorskip("torch")
    toy, out, cache = write_toy_dataset(tmp_path / "toy"), tmp_path / "out", tmp_path / "store"
    args = ["spectrum", str(toy), "-o", str(out), "--device", "cpu", "--batch-size", "2", "--cache-dir", str(cache)]
    assert _analyze(*args) in (0, None)
    # on the CPU, in batches of two: the human source's three texts, then the LLM source's two
    # new ones (d3's twin is a copy, read back from the store)
    assert calls["encoder"] == [(2, "cpu", 2), (1, "cpu", 2), (2, "cpu", 2)]
    manifest = json.loads((out / "manifest.json").read_text())
    encoder = manifest["models"]["encoder"]
    assert encoder["encoder"]["batch_size"] == 2 and encoder["cache"] == str(cache)
    stores = [json.loads(p.read_text()) for p in (cache / "embeddings").glob("*/info.json")]
    assert [s["batch_size"] for s in stores] == [2] and stores[0]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    # --overwrite reaches the output folder: another run (--center) is refused without it and
    # replaces the folder with it; the same command again replaces its own results
    assert _analyze(*args, "--center") == 2
    calls["encoder"].clear()
    assert _analyze(*args, "--center", "--overwrite") in (0, None)
    assert calls["encoder"] == []  # every embedding read back from the store in --cache-dir
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "analyze:spectrum" and manifest["parameters"]["center"] is True
    assert _analyze(*args, "--center") in (0, None)


def test_artifacts_runs_the_lm_with_the_shared_options(tmp_path, calls):
    pytest.importorskip("torch")
    pytest.importorskip("gguf")
    toy, out = write_toy_dataset(tmp_path / "toy"), tmp_path / "out"
    cache = store_sharing_models(tmp_path / "store")
    assert _analyze("artifacts", str(toy), "-o", str(out), "--device", "cpu", "--batch-size", "3", "--cache-dir", str(cache)) in (0, None)
    # the distinct texts (d3's twin is a copy) in batches of three, on the CPU
    assert len({d["text"] for d in TOY_HUMAN + TOY_LLM}) == 5
    assert calls["lm"] == [(3, "cpu", 3), (2, "cpu", 3)]
    # the LM's values are in the store of --cache-dir: the runner, given that store, computes nothing
    ppl = sb.load_artifact(out).tables["artifacts"].set_index(["source", "doc_id"])["perplexity"]
    from sourcebias.analysis import perplexity as _perplexity

    again = _perplexity.perplexity(sb.load_dataset(toy), "lm:smollm2", options={"cache_dir": cache})
    assert again.summary["cache"]["encoded"] == 0
    table = again.tables["perplexity"].set_index(["source", "doc_id"])["value"]
    assert table.to_dict() == pytest.approx(ppl.to_dict())
